"""Errors of the evaluation framework itself; each message says the fix.

``rag_eval`` owns these: a system under test raises its own errors, and its adapter
turns the ones a user can fix (bad settings, an unreachable service) into these.
"""

from __future__ import annotations


class RagEvalError(Exception):
    """Base class: anything the user can fix by changing input or configuration."""


class ConfigError(RagEvalError):
    """A setting is unknown, missing or invalid; the message names its source."""


class ServiceError(RagEvalError):
    """A remote endpoint (judge, simulator, HTTP system) failed or is unreachable."""


def unknown_name(kind: str, name: str, valid: list[str] | tuple[str, ...], where: str = "") -> ConfigError:
    """The one message for an unknown name: it lists the valid ones."""
    place = f" (set in {where})" if where else ""
    return ConfigError(f"unknown {kind} {name!r}{place}; valid {kind}s: {', '.join(sorted(valid))}")
