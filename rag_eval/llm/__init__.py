"""rag_eval's one client for OpenAI-compatible chat endpoints.

How a caller uses it (the judge, the deepeval engine, the LLM student, the hint judge and
any new command call through this, never through the openai SDK directly)::

    from rag_eval.llm.cached import CachedChatClient
    from rag_eval.llm.client import LLMClient
    from rag_eval.llm import CallPolicy, ChatRequest, Endpoint

    endpoint = Endpoint.from_env("RAG_JUDGE")          # {PREFIX}_BASE_URL / _MODEL / _API_KEY
    policy = CallPolicy.from_env("RAG_JUDGE", os.environ)  # _TIMEOUT / _MAX_RETRIES / _BREAKER / _CONCURRENCY
    with CachedChatClient(LLMClient(endpoint, policy), cache_dir, budget_tokens=100_000) as client:
        resp = client.complete(ChatRequest(endpoint.model, messages, max_tokens=500),
                               case_id="c1", tier="judge", accept=lambda text: None if ok(text) else "why")
        if resp.rejected:  # never ask the identical request again: send a repair with answers=<first request>
            ...

or ``CachedChatClient.from_config(cfg)`` for a config with ``endpoint``, ``policy``,
``cache_dir``, ``fresh``, ``prices`` and budgets (``rag_eval.judge.config.JudgeConfig``).
One client serves every thread of a process: call ``complete`` from as many threads as
``policy.concurrency`` allows; the rate limiter, breaker, cache and budget are shared.
``complete`` raises :class:`~rag_eval.llm.cached.JudgeCallError` (``kind`` says why:
``budget``, ``malformed``, a :data:`ErrorKind`); a reply with text that ``accept``
rejects is returned with ``rejected`` set and never cached.

* :mod:`~rag_eval.llm.messages` -- request, response, usage and error records;
* :mod:`~rag_eval.llm.endpoint` -- where an endpoint is (``{PREFIX}_BASE_URL/MODEL/API_KEY``);
* :mod:`~rag_eval.llm.policy` -- timeouts, retries, total budget, what is retried;
* :mod:`~rag_eval.llm.breaker` -- the circuit breaker per endpoint;
* :mod:`~rag_eval.llm.limiter` -- the rate limiter per endpoint shared by all threads;
* :mod:`~rag_eval.llm.guard` -- keeps the openai SDK's retries inside the policy, with
  wall-clock timeouts;
* :mod:`~rag_eval.llm.client` -- :class:`LLMClient`, the call itself, with redaction;
* :mod:`~rag_eval.llm.budget`,
  :mod:`~rag_eval.llm.usage`, :mod:`~rag_eval.llm.cached` -- the response cache, run-wide
  spending, the spending budget (reserved before a call, settled on its reply),
  accounting and the cached client;
* :mod:`~rag_eval.llm.retry` -- the same policy for endpoints not reached through the SDK.

Importing this package does not import the openai SDK (about 1 s): ``client`` does.
"""

from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, ErrorKind, Usage
from rag_eval.llm.policy import CallPolicy, CircuitBreaker

__all__ = ["CallPolicy", "ChatError", "ChatRequest", "ChatResponse", "CircuitBreaker", "Endpoint", "ErrorKind", "Usage"]
