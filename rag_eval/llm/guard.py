"""The openai SDK retries; this transport keeps its retries inside the policy.

The SDK's own loop does the retrying (backoff with jitter, ``Retry-After`` in seconds,
milliseconds or as an HTTP date). What it cannot do is stop early, so every attempt
passes :class:`GuardedTransport`, which

* refuses to send when the endpoint's circuit breaker is open or the call's total time
  budget is used up, and gives each attempt only the time that is left;
* stops at once when nothing listens (connection refused);
* tells the SDK not to retry (``x-should-retry: false``, which the SDK obeys) a 429
  ``insufficient_quota``, a status whose body names the ``response_format`` that was
  sent (llama-cpp-python answers an unknown format with HTTP 500), or a ``Retry-After``
  that would overrun the budget; a longer ``Retry-After`` than ``max_retry_after`` is
  cut to it;
* counts the attempts of the current call.

Stopping is done by raising :class:`Stop`, an ``openai.OpenAIError``: the SDK passes
those through without retrying or wrapping them.
"""

from __future__ import annotations

import contextvars
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import httpx
import openai

from rag_eval.llm.breaker import CircuitBreaker
from rag_eval.llm.messages import TRANSPORT_KINDS
from rag_eval.llm.policy import CallPolicy, is_refused, retry_after, root_cause, status_kind


@dataclass
class CallState:
    """What one call (all its attempts) has done so far."""

    deadline: float
    attempts: int = 0
    last_timeout: float = 0.0
    last_failure: str = ""
    no_retry: str = ""  # why the transport told the SDK not to retry
    kind: str = ""  # the kind the transport decided, when it decided one


class Stop(openai.OpenAIError):
    """Raised inside an attempt to end the whole call; ``kind`` as in ChatError."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


_STATE: contextvars.ContextVar[CallState | None] = contextvars.ContextVar("rag_eval_llm_call", default=None)


class GuardedTransport(httpx.BaseTransport):
    def __init__(
        self,
        policy: CallPolicy,
        breaker: CircuitBreaker,
        inner: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy
        self.breaker = breaker
        self.inner = inner or httpx.HTTPTransport()
        self.clock = clock

    @contextmanager
    def call(self) -> Iterator[CallState]:
        """Everything sent inside the block is one call with one time budget."""
        state = CallState(deadline=self.clock() + self.policy.budget)
        token = _STATE.set(state)
        try:
            yield state
        finally:
            _STATE.reset(token)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        state = _STATE.get()
        if state is None:  # not inside call(): e.g. a model listing, unguarded
            return self.inner.handle_request(request)
        if self.breaker.open:
            raise Stop("breaker", self.breaker.message())
        remaining = state.deadline - self.clock()
        if remaining <= 0:
            raise Stop("time_budget", f"the total time budget of {self.policy.budget:g}s ran out after "
                                      f"{state.attempts} attempt(s); last failure: {state.last_failure or 'none'}")
        timeout = min(self.policy.timeout, remaining)
        request.extensions["timeout"] = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        state.attempts += 1
        state.last_timeout = timeout
        try:
            response = self.inner.handle_request(request)
        except httpx.TimeoutException:
            state.last_failure = f"no response within the {timeout:g}s timeout"
            # every timed-out attempt counts: a black-holed endpoint opens the breaker after
            # N attempts (N x timeout), not after N calls of several attempts each
            self.breaker.record(transport_failure=True, detail=state.last_failure)
            raise
        except httpx.HTTPError as exc:
            if is_refused(exc):
                raise Stop("refused", f"connection refused ({root_cause(exc)})") from exc
            state.last_failure = f"connection failed ({root_cause(exc)})"
            self.breaker.record(transport_failure=True, detail=state.last_failure)
            raise
        if response.status_code >= 400:
            self._review(request, response, state)
        return response

    def _review(self, request: httpx.Request, response: httpx.Response, state: CallState) -> None:
        """Decide, for an error status, whether the SDK may retry it."""
        response.read()
        body = response.text
        sent_format = b'"response_format"' in (request.content or b"")
        kind, retryable = status_kind(response.status_code, body, sent_format=sent_format)
        state.kind = kind
        state.last_failure = f"HTTP {response.status_code}"
        if kind in TRANSPORT_KINDS:  # a 5xx attempt counts toward the breaker like a timeout
            self.breaker.record(transport_failure=True, detail=state.last_failure)
        if not retryable:
            self._no_retry(response, state, "")
            return
        wait = retry_after(response.headers)
        if wait is None:
            return
        if wait > self.policy.max_retry_after:
            wait = self.policy.max_retry_after
            response.headers["retry-after"] = f"{wait:g}"
            response.headers.pop("retry-after-ms", None)
        if self.clock() + wait >= state.deadline:
            self._no_retry(response, state, f"waiting {wait:.1f}s more (Retry-After) would overrun the "
                                            f"{self.policy.budget:g}s budget")

    @staticmethod
    def _no_retry(response: httpx.Response, state: CallState, why: str) -> None:
        response.headers["x-should-retry"] = "false"
        state.no_retry = why

    def close(self) -> None:
        self.inner.close()
