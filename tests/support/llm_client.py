"""An :class:`LLMClient` for the judge tests, pointed at a scripted server."""

from __future__ import annotations

from rag_eval.llm.client import LLMClient
from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.policy import CallPolicy
from rag_eval.util.redact import Redactor


def judge_llm(
    base_url: str,
    key: str = "sk-test-judge-SECRET",
    *,
    max_retries: int = 0,
    timeout: float = 5.0,
    breaker: int = 5,
    total_budget_s: float | None = None,
    secrets: tuple[str, ...] = (),
) -> LLMClient:
    policy = CallPolicy(
        timeout=timeout,
        max_retries=max_retries,
        breaker_after=breaker,
        total_budget_s=total_budget_s,
        timeout_setting="RAG_JUDGE_TIMEOUT",
        retries_setting="RAG_JUDGE_MAX_RETRIES",
        breaker_setting="RAG_JUDGE_BREAKER",
    )
    endpoint = Endpoint("RAG_JUDGE", base_url=base_url, model="judge-m", api_key=key)
    return LLMClient(endpoint, policy, redactor=Redactor(secrets) if secrets else None, sleep=lambda s: None)
