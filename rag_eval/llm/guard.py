"""The openai SDK retries; :class:`Guard`, which every attempt passes, keeps those
retries inside the policy. It

* refuses to send when the breaker is open or the call's time budget is used up, and
  gives each attempt only the time that is left; stops at once when nothing listens;
* tells the SDK not to retry (``x-should-retry: false``, which it obeys) a 429
  ``insufficient_quota``, a status whose body names the ``response_format`` that was
  sent, or a ``Retry-After`` that would overrun the budget (one over ``max_retry_after``
  is cut to it);
* passes the endpoint's shared :class:`~rag_eval.llm.policy.RateLimiter` (a 429 holds
  every thread) and counts the call's attempts (and those that reached the server);
* bounds each attempt by the wall clock: sending it and reading its whole body run under
  ``asyncio.timeout`` (httpx's timeouts are per socket read, so a server dripping one
  byte at a time would never time out), and a reset mid-body feeds the breaker like a
  timeout.

The client (:class:`~rag_eval.llm.client.LLMClient`) runs the SDK's ``AsyncOpenAI`` on an
event loop of the calling thread, one call at a time per loop; the limiter and the
breaker are threading primitives shared by every thread, so a wait in them blocks only
that thread's own loop, which has nothing else to run. Stopping raises :class:`Stop`, an
``openai.OpenAIError`` the SDK passes through unretried.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import openai

from rag_eval.llm.messages import TRANSPORT_KINDS
from rag_eval.llm.policy import (
    CallPolicy,
    CircuitBreaker,
    RateLimited,
    RateLimiter,
    retry_after,
    status_kind,
    transport_failure,
)


@dataclass
class CallState:
    """What one call (all its attempts) has done so far."""

    deadline: float
    attempts: int = 0
    reached: int = 0  # attempts that reached the server (not refused, connected)
    last_timeout: float = 0.0
    last_failure: str = ""
    no_retry: str = ""  # why the transport told the SDK not to retry


class Stop(openai.OpenAIError):
    """Raised inside an attempt to end the whole call; ``kind`` as in ChatError."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


_STATE: contextvars.ContextVar[CallState | None] = contextvars.ContextVar("rag_eval_llm_call", default=None)


class Guard:
    """The policy of one endpoint's attempts, shared by every thread (module doc); each
    thread's httpx client sends through its own :meth:`transport`."""

    def __init__(self, policy: CallPolicy, breaker: CircuitBreaker) -> None:
        self.policy, self.breaker, self.clock = policy, breaker, time.monotonic
        self.limiter = RateLimiter(policy.concurrency)

    def transport(self) -> Attempts:
        """An httpx transport for one event loop (connections belong to the loop that made them)."""
        return Attempts(self, httpx.AsyncHTTPTransport())

    def join(self, other: Guard) -> None:
        """Use ``other``'s breaker and limiter from now on (one per server: LLMClient.share_endpoint)."""
        self.breaker, self.limiter = other.breaker, other.limiter

    @contextmanager
    def call(self) -> Iterator[CallState]:
        """Everything sent inside the block is one call with one time budget."""
        state = CallState(deadline=self.clock() + self.policy.budget)
        token = _STATE.set(state)
        try:
            yield state
        finally:
            _STATE.reset(token)

    async def send(self, inner: httpx.AsyncBaseTransport, request: httpx.Request) -> httpx.Response:
        state = _STATE.get()
        if state is None:  # not inside call(): unguarded
            return await inner.handle_async_request(request)
        try:
            with self.limiter.slot(state.deadline):  # shared by every thread (limiter module doc)
                return await self._attempt(inner, request, state)
        except RateLimited as exc:
            raise Stop(
                "time_budget",
                f"the total time budget of {self.policy.budget:g}s ran out after {state.attempts} attempt(s): {exc}",
            ) from None

    async def _attempt(
        self, inner: httpx.AsyncBaseTransport, request: httpx.Request, state: CallState
    ) -> httpx.Response:
        if self.breaker.open:  # checked in the slot: another thread may have opened it meanwhile
            raise Stop("breaker", self.breaker.message())
        remaining = state.deadline - self.clock()
        if remaining <= 0:
            raise Stop(
                "time_budget",
                f"the total time budget of {self.policy.budget:g}s ran out after "
                f"{state.attempts} attempt(s); last failure: {state.last_failure or 'none'}",
            )
        timeout = min(self.policy.timeout, remaining)
        request.extensions["timeout"] = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        state.attempts += 1
        state.last_timeout = timeout
        try:
            response = await _whole(inner, request, timeout)
        except httpx.HTTPError as exc:
            kind, detail = transport_failure(exc, timeout)
            if kind == "refused":
                raise Stop("refused", detail) from exc
            state.reached += not isinstance(exc, (httpx.ConnectTimeout, httpx.ConnectError))
            state.last_failure = detail
            # every failed attempt counts: a black-holed endpoint opens the breaker after
            # N attempts (N x timeout), not after N calls of several attempts each
            self.breaker.record(transport_failure=True, detail=detail)
            raise
        state.reached += 1
        if response.status_code >= 400:
            self._review(request, response, state)
        if response.status_code != 429:
            self.limiter.passed()
        return response

    def _review(self, request: httpx.Request, response: httpx.Response, state: CallState) -> None:
        """Decide, for an error status, whether the SDK may retry it."""
        response.read()
        body = response.text
        sent_format = b'"response_format"' in (request.content or b"")
        kind, retryable = status_kind(response.status_code, body, sent_format=sent_format)
        state.last_failure = f"HTTP {response.status_code}"
        if kind in TRANSPORT_KINDS:  # a 5xx attempt counts toward the breaker like a timeout
            self.breaker.record(transport_failure=True, detail=state.last_failure)
        if not retryable:
            self._no_retry(response, state, "")
            return
        wait = retry_after(response.headers)
        if kind == "rate_limit":  # every thread waits, not only this one
            self.limiter.hold(min(wait, self.policy.max_retry_after) if wait is not None else None)
        if wait is None:
            return
        if wait > self.policy.max_retry_after:
            wait = self.policy.max_retry_after
            response.headers["retry-after"] = f"{wait:g}"
            response.headers.pop("retry-after-ms", None)
        if self.clock() + wait >= state.deadline:
            self._no_retry(
                response,
                state,
                f"waiting {wait:.1f}s more (Retry-After) would overrun the {self.policy.budget:g}s budget",
            )

    @staticmethod
    def _no_retry(response: httpx.Response, state: CallState, why: str) -> None:
        response.headers["x-should-retry"] = "false"
        state.no_retry = why


async def _whole(inner: httpx.AsyncBaseTransport, request: httpx.Request, timeout: float) -> httpx.Response:
    """The reply with its whole body, sent and read within ``timeout`` seconds of wall clock
    (module doc); its bytes as sent (still encoded: the client decodes them)."""
    try:
        async with asyncio.timeout(timeout):
            response = await inner.handle_async_request(request)
            try:
                body = b"".join([chunk async for chunk in response.aiter_raw()])
            finally:
                await response.aclose()
    except TimeoutError:
        raise httpx.ReadTimeout(f"no whole reply within the attempt's {timeout:g}s", request=request) from None
    return httpx.Response(
        response.status_code, headers=response.headers, content=body, extensions=response.extensions, request=request
    )


class Attempts(httpx.AsyncBaseTransport):
    """One event loop's transport: every request goes through the shared guard's policy."""

    def __init__(self, guard: Guard, inner: httpx.AsyncBaseTransport) -> None:
        self.guard, self.inner = guard, inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.guard.send(self.inner, request)

    async def aclose(self) -> None:
        await self.inner.aclose()
