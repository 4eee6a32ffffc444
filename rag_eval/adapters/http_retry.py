"""The HTTP adapter's retries (the one endpoint not spoken to through the openai SDK): the
same :class:`~rag_eval.llm.policy.CallPolicy`, breaker and classification as the LLM client,
on tenacity's loop. An attempt returns or raises :class:`AttemptFailed`; :meth:`Retrier.run`
waits ``Retry-After`` (capped) or backs off with jitter, keeps within the time budget,
feeds the breaker and raises :class:`CallFailed` when the call is over.
"""

from __future__ import annotations

import logging
import random as _random
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

import httpx
import tenacity

from rag_eval.llm.messages import TRANSPORT_KINDS
from rag_eval.llm.policy import CallPolicy, CircuitBreaker, backoff, retry_after, status_kind, transport_failure

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
    """An httpx transport error as a classified attempt failure (a refusal is not retried)."""
    kind, detail = transport_failure(exc, timeout)
    return AttemptFailed(kind, detail, retryable=kind != "refused")


def failure_from_status(code: int, body: str, headers: Mapping[str, str], detail: str) -> AttemptFailed:
    kind, retryable = status_kind(code, body)
    return AttemptFailed(
        kind, detail, retryable=retryable, status_code=code, retry_after=retry_after(headers) if retryable else None
    )


class Retrier:
    """:meth:`run` on tenacity's retry loop; this class only says when to stop and how long
    to wait (module doc), and feeds the breaker."""

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
        delays: dict[int, float] = {}  # attempt number -> the wait after it, drawn once
        why: list[str] = []  # why the loop stopped early, for CallFailed.hint

        def once() -> T:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise AttemptFailed(
                    "time_budget", f"the total time budget of {p.budget:g}s is used up", retryable=False
                )
            return attempt(min(p.timeout, remaining))

        def delay(state: tenacity.RetryCallState) -> float:
            if state.attempt_number not in delays:
                failure = _failure(state)
                wait = failure.retry_after
                delays[state.attempt_number] = (
                    min(wait, p.max_retry_after) if wait is not None else backoff(state.attempt_number, self._random)
                )
            return delays[state.attempt_number]

        def stop(state: tenacity.RetryCallState) -> bool:
            if not _failure(state).retryable:
                return True
            if state.attempt_number > p.max_retries:
                why.append(f"gave up after {p.max_retries} retries")
                return True
            if self._clock() + delay(state) >= deadline:
                why.append(f"waiting {delay(state):.1f}s more would overrun the {p.budget:g}s budget")
                return True
            return False

        def warn(state: tenacity.RetryCallState) -> None:
            failure = _failure(state)
            log.warning(
                "%s failed (%s: %s), attempt %d of %d; retrying in %.2fs",
                what,
                failure.kind,
                self._redact(failure.detail),
                state.attempt_number,
                p.attempts,
                delay(state),
            )

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(AttemptFailed),
            stop=stop,
            wait=delay,
            sleep=self._sleep,
            before_sleep=warn,
            reraise=True,
        )
        try:
            value = retrying(once)
        except AttemptFailed as failure:
            attempts = retrying.statistics.get("attempt_number", 1)
            if failure.kind == "time_budget":
                attempts -= 1  # refused before it was sent
            self.breaker.record(transport_failure=failure.kind in TRANSPORT_KINDS, detail=self._redact(failure.detail))
            raise CallFailed(failure, attempts, "".join(why[-1:])) from None
        self.breaker.record(transport_failure=False)
        return value, retrying.statistics.get("attempt_number", 1)


def _failure(state: tenacity.RetryCallState) -> AttemptFailed:
    exc = state.outcome.exception() if state.outcome is not None else None
    assert isinstance(exc, AttemptFailed)  # retry= lets nothing else through
    return exc
