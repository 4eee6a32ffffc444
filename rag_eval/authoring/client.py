"""Where drafting's model lives: ``RAG_DRAFT_BASE_URL`` / ``_MODEL`` / ``_API_KEY`` (URL
and key fall back to ``OPENAI_*``), ``RAG_DRAFT_TIMEOUT`` / ``_MAX_RETRIES`` /
``_BREAKER`` / ``_CONCURRENCY`` (rag_eval.llm.endpoint, rag_eval.llm.policy), with the
judge's cache, budget and price machinery (rag_eval.llm.cached)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.policy import CallPolicy

if TYPE_CHECKING:
    from rag_eval.llm.cached import CachedChatClient

PREFIX = "RAG_DRAFT"


@dataclass(frozen=True, kw_only=True)
class DraftClientConfig:
    """What :meth:`CachedChatClient.from_config` reads; the key stays inside ``endpoint``."""

    endpoint: Endpoint
    policy: CallPolicy
    cache_dir: Path
    fresh: bool = False
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    budget_usd: float | None = None
    budget_tokens: int | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ, **kwargs: object) -> DraftClientConfig:
        return cls(endpoint=Endpoint.from_env(PREFIX, env), policy=CallPolicy.from_env(PREFIX, env), **kwargs)  # type: ignore[arg-type]

    def missing_reason(self) -> str | None:
        problem = self.endpoint.problem()
        return f"the drafting model is not configured: {problem}" if problem else None


def draft_client(cfg: DraftClientConfig) -> CachedChatClient:
    """The cached client (raises ``ConfigError`` naming the variables when the endpoint is not set)."""
    from rag_eval.llm.cached import CachedChatClient
    from rag_eval.util.redact import redactor_from_env

    return CachedChatClient.from_config(cfg, redactor=redactor_from_env())
