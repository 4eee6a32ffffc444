"""Retries for endpoints that are not spoken to through the openai SDK (the HTTP adapter).

Same :class:`~rag_eval.llm.policy.CallPolicy` and :class:`~rag_eval.llm.breaker.CircuitBreaker`
as the LLM client, same classification: an attempt either returns or raises
:class:`AttemptFailed`; :meth:`Retrier.run` waits (``Retry-After`` when given, capped,
else exponential backoff with jitter), keeps within the total time budget and feeds the
breaker, and raises :class:`CallFailed` when the call is over.
"""

from __future__ import annotations

import logging
import random as _random
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

import httpx

from rag_eval.llm.breaker import CircuitBreaker
from rag_eval.llm.messages import TRANSPORT_KINDS
from rag_eval.llm.policy import CallPolicy, backoff, is_refused, retry_after, root_cause, status_kind

log = logging.getLogger(__name__)
T = TypeVar("T")


class AttemptFailed(Exception):
    """One attempt failed; ``kind`` as in :data:`rag_eval.llm.messages.ErrorKind`."""

    def __init__(
        self,
        kind: str,
        detail: str,
        *,
        retryable: bool,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.retryable = kind, detail, retryable
        self.status_code, self.retry_after = status_code, retry_after


class CallFailed(Exception):
    """The call is over: ``failure`` is the last attempt's, ``hint`` why it stopped."""

    def __init__(self, failure: AttemptFailed, attempts: int, hint: str = "") -> None:
        super().__init__(failure.detail)
        self.failure, self.attempts, self.hint = failure, attempts, hint


def failure_from_exception(exc: httpx.HTTPError, timeout: float) -> AttemptFailed:
    """An httpx transport error as a classified attempt failure."""
    if isinstance(exc, httpx.TimeoutException):
        return AttemptFailed("timeout", f"no response within the {timeout:g}s timeout", retryable=True)
    if is_refused(exc):
        return AttemptFailed("refused", f"connection refused ({root_cause(exc)})", retryable=False)
    return AttemptFailed("connection", f"connection failed ({root_cause(exc)})", retryable=True)


def failure_from_status(code: int, body: str, headers: Mapping[str, str], detail: str) -> AttemptFailed:
    kind, retryable = status_kind(code, body)
    return AttemptFailed(
        kind, detail, retryable=retryable, status_code=code, retry_after=retry_after(headers) if retryable else None
    )


class Retrier:
    def __init__(
        self,
        policy: CallPolicy,
        breaker: CircuitBreaker,
        *,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.policy, self.breaker = policy, breaker
        self._sleep, self._random, self._clock, self._redact = sleep, random, clock, redact

    def run(self, attempt: Callable[[float], T], what: str = "call") -> tuple[T, int]:
        """``(value, attempts)`` of the first attempt that returns."""
        p = self.policy
        if self.breaker.open:
            raise CallFailed(AttemptFailed("breaker", self.breaker.message(), retryable=False), 0)
        deadline = self._clock() + p.budget
        attempts = 0
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise self._over(
                    AttemptFailed("time_budget", f"the total time budget of {p.budget:g}s is used up", retryable=False),
                    attempts,
                )
            attempts += 1
            timeout = min(p.timeout, remaining)
            try:
                value = attempt(timeout)
            except AttemptFailed as failure:
                if not failure.retryable:
                    raise self._over(failure, attempts) from None
                if attempts > p.max_retries:
                    raise self._over(failure, attempts, f"gave up after {p.max_retries} retries") from None
                delay = (
                    min(failure.retry_after, p.max_retry_after)
                    if failure.retry_after is not None
                    else backoff(attempts, self._random)
                )
                if self._clock() + delay >= deadline:
                    hint = f"waiting {delay:.1f}s more would overrun the {p.budget:g}s budget"
                    raise self._over(failure, attempts, hint) from None
                log.warning(
                    "%s failed (%s: %s), attempt %d of %d; retrying in %.2fs",
                    what,
                    failure.kind,
                    self._redact(failure.detail),
                    attempts,
                    p.attempts,
                    delay,
                )
                self._sleep(delay)
                continue
            self.breaker.record(transport_failure=False)
            return value, attempts

    def _over(self, failure: AttemptFailed, attempts: int, hint: str = "") -> CallFailed:
        self.breaker.record(transport_failure=failure.kind in TRANSPORT_KINDS, detail=self._redact(failure.detail))
        return CallFailed(failure, attempts, hint)
