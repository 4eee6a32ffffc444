"""rag_eval's one client for OpenAI-compatible chat endpoints.

* :mod:`~rag_eval.llm.messages` -- request, response, usage and error records;
* :mod:`~rag_eval.llm.endpoint` -- where an endpoint is (``{PREFIX}_BASE_URL/MODEL/API_KEY``);
* :mod:`~rag_eval.llm.policy` -- timeouts, retries, total budget, what is retried;
* :mod:`~rag_eval.llm.breaker` -- the circuit breaker per endpoint;
* :mod:`~rag_eval.llm.limiter` -- the rate limiter per endpoint shared by all threads;
* :mod:`~rag_eval.llm.guard` -- keeps the openai SDK's retries inside the policy, with
  wall-clock timeouts;
* :mod:`~rag_eval.llm.client` -- :class:`LLMClient`, the call itself, with redaction;
* :mod:`~rag_eval.llm.cache`, :mod:`~rag_eval.llm.ledger`, :mod:`~rag_eval.llm.usage`,
  :mod:`~rag_eval.llm.cached` -- the response cache, run-wide spending, accounting and
  the cached client the judge and the dialogue tier call through;
* :mod:`~rag_eval.llm.retry` -- the same policy for endpoints not reached through the SDK.

Importing this package does not import the openai SDK (about 1 s): ``client`` does.
"""

from rag_eval.llm.breaker import CircuitBreaker
from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, ErrorKind, Usage
from rag_eval.llm.policy import CallPolicy

__all__ = ["CallPolicy", "ChatError", "ChatRequest", "ChatResponse", "CircuitBreaker", "Endpoint", "ErrorKind", "Usage"]
