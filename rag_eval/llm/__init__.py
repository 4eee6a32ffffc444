"""rag_eval's one client for OpenAI-compatible chat endpoints (the judge, the deepeval
engine, the LLM student, the hint judge and the authoring commands call through it)::

    endpoint = Endpoint.from_env("RAG_JUDGE")              # _BASE_URL / _MODEL / _API_KEY
    policy = CallPolicy.from_env("RAG_JUDGE", os.environ)  # _TIMEOUT / _MAX_RETRIES / _BREAKER / _CONCURRENCY
    with CachedChatClient(LLMClient(endpoint, policy), cache_dir, budget_tokens=100_000) as client:
        resp = client.complete(ChatRequest(endpoint.model, messages, max_tokens=500), case_id="c1",
                               accept=lambda text: None if ok(text) else "why")
        # resp.rejected: never ask the identical request again; repair with answers=<first request>

One client serves every thread of a process (limiter, breaker, cache and budget are
shared); ``complete`` raises :class:`~rag_eval.llm.cached.JudgeCallError`. Modules:
``messages`` (records), ``endpoint``, ``policy`` (what is retried, breaker, rate limiter),
``guard`` (keeps the openai SDK's retries inside the policy, wall-clock timeouts),
``client`` (:class:`LLMClient`), ``cached`` (response cache, accounting, budget),
``budget``, ``usage``; the HTTP adapter runs the same policy on tenacity
(``rag_eval.adapters.http_retry``). Importing this package does not import the openai
SDK (about 1 s): ``client`` does.
"""

from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, ErrorKind, Usage
from rag_eval.llm.policy import CallPolicy, CircuitBreaker

__all__ = ["CallPolicy", "ChatError", "ChatRequest", "ChatResponse", "CircuitBreaker", "Endpoint", "ErrorKind", "Usage"]
