"""The openai SDK retries; :class:`GuardedTransport`, which every attempt passes, keeps
those retries inside the policy. It

* refuses to send when the breaker is open or the call's time budget is used up, and
  gives each attempt only the time that is left; stops at once when nothing listens;
* tells the SDK not to retry (``x-should-retry: false``, which it obeys) a 429
  ``insufficient_quota``, a status whose body names the ``response_format`` that was
  sent, or a ``Retry-After`` that would overrun the budget (one over ``max_retry_after``
  is cut to it);
* passes the endpoint's shared :class:`~rag_eval.llm.policy.RateLimiter` (a 429 holds
  every thread) and counts the call's attempts (and those that reached the server);
* reads each body inside the attempt (a reset mid-body feeds the breaker, like a timeout);
* makes the timeouts *wall-clock* bounds (httpx's are per socket read, so a server
  dripping one byte at a time would never time out): every socket read and write gets
  only the time left until the attempt's deadline, through httpcore's public
  ``network_backend`` parameter (:class:`DeadlineBackend`, :class:`DeadlineTransport`);
  a transport passed in is bounded per body chunk instead.

Stopping raises :class:`Stop`, an ``openai.OpenAIError`` the SDK passes through unretried.
"""

from __future__ import annotations

import contextvars
import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import certifi
import httpcore
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
    attempt_deadline: float = float("inf")
    last_timeout: float = 0.0
    last_failure: str = ""
    no_retry: str = ""  # why the transport told the SDK not to retry


class Stop(openai.OpenAIError):
    """Raised inside an attempt to end the whole call; ``kind`` as in ChatError."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


_STATE: contextvars.ContextVar[CallState | None] = contextvars.ContextVar("rag_eval_llm_call", default=None)


class GuardedTransport(httpx.BaseTransport):
    def __init__(
        self,
        policy: CallPolicy,
        breaker: CircuitBreaker,
        inner: httpx.BaseTransport | None = None,
    ) -> None:
        self.policy, self.breaker, self.clock = policy, breaker, time.monotonic
        self.inner = inner or DeadlineTransport()
        self.limiter = RateLimiter(policy.concurrency)

    def join(self, other: GuardedTransport) -> None:
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

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        state = _STATE.get()
        if state is None:  # not inside call(): e.g. a model listing, unguarded
            return self.inner.handle_request(request)
        try:
            with self.limiter.slot(state.deadline):  # shared by every thread (limiter module doc)
                return self._attempt(request, state)
        except RateLimited as exc:
            raise Stop(
                "time_budget",
                f"the total time budget of {self.policy.budget:g}s ran out after {state.attempts} attempt(s): {exc}",
            ) from None

    def _attempt(self, request: httpx.Request, state: CallState) -> httpx.Response:
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
        state.attempt_deadline = time.monotonic() + timeout
        try:
            response = self._read(request, self.inner.handle_request(request), state)
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

    @staticmethod
    def _read(request: httpx.Request, response: httpx.Response, state: CallState) -> httpx.Response:
        """The reply with its body read inside the attempt (module doc), chunk by chunk
        against the attempt's deadline."""
        chunks: list[bytes] = []
        stream: Iterable[bytes] = response.stream  # type: ignore[assignment]
        try:
            for chunk in stream:
                chunks.append(chunk)
                if time.monotonic() > state.attempt_deadline:
                    raise httpx.ReadTimeout("the reply did not arrive within the attempt's timeout", request=request)
        finally:
            response.close()
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(b"".join(chunks)),
            extensions=response.extensions,
            request=request,
        )

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

    def close(self) -> None:
        self.inner.close()


def _time_left(timeout: float | None) -> float | None:
    """``timeout`` cut to what is left of the current attempt (module doc)."""
    state = _STATE.get()
    if state is None or state.attempt_deadline == float("inf"):
        return timeout
    left = state.attempt_deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the attempt's wall-clock timeout passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _time_left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _time_left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _time_left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend whose streams never wait past the attempt's deadline
    (TCP only: the pool is built without ``uds`` and without connection retries, so
    httpcore never calls ``connect_unix_socket`` or ``sleep``)."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, _time_left(timeout), local_address, socket_options))


class DeadlineTransport(httpx.BaseTransport):
    """httpx's transport role over httpcore's connection pool built with
    :class:`DeadlineBackend` as its ``network_backend`` -- a public parameter of
    ``httpcore.ConnectionPool`` -- so every socket read and write of an attempt gets only
    the time left until its deadline. httpcore's errors become httpx's of the same name."""

    def __init__(self) -> None:
        self.pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            network_backend=DeadlineBackend(httpcore.SyncBackend()),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        with _as_httpx(request):
            got = self.pool.handle_request(
                httpcore.Request(
                    request.method,
                    httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
                    headers=request.headers.raw,
                    content=request.stream,
                    extensions=request.extensions,
                )
            )
        return httpx.Response(got.status, headers=got.headers, stream=_Body(got, request), extensions=got.extensions)

    def close(self) -> None:
        self.pool.close()


class _Body(httpx.SyncByteStream):
    def __init__(self, response: httpcore.Response, request: httpx.Request) -> None:
        self.response, self.request = response, request

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx(self.request):
            yield from self.response.iter_stream()

    def close(self) -> None:
        self.response.close()


@contextmanager
def _as_httpx(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TimeoutException)(str(exc), request=request) from exc
    except (httpcore.ConnectError, httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as exc:
        raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc), request=request) from exc
