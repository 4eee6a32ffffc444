"""Errors the pipeline raises on bad configuration or input; each message says the fix."""

from __future__ import annotations


class RagAppError(Exception):
    """Base class: anything the user can fix by changing input or configuration."""


class ConfigError(RagAppError):
    """A setting is unknown, missing or invalid."""


class CorpusError(RagAppError):
    """A corpus file cannot be read; the message names file and line."""


class ServiceError(RagAppError):
    """A remote component (embeddings, reranker, LLM) failed or is unreachable."""


class RerankError(ServiceError):
    """The reranker failed; the pipeline keeps the fused order and marks the result degraded."""


def unknown_name(kind: str, name: str, valid: list[str] | tuple[str, ...], where: str = "") -> ConfigError:
    """The one message for an unknown component name: it lists the valid ones."""
    place = f" (set in {where})" if where else ""
    return ConfigError(f"unknown {kind} {name!r}{place}; valid {kind}s: {', '.join(sorted(valid))}")
