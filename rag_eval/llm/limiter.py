"""One rate limiter per endpoint, shared by every thread that calls it.

With calls issued from several threads (``RAG_JUDGE_CONCURRENCY``, default 4; 1 = one
request at a time), N threads that each retry a 429 on their own hammer a rate-limited
server N times as hard. Here every attempt passes :meth:`RateLimiter.slot`, which

* allows at most ``concurrency`` requests in flight;
* after a 429 holds *every* thread until the server's ``Retry-After`` (or a short pause
  when it gives none) has passed, and then lets threads through one at a time, that far
  apart; each answer that is not a 429 halves the spacing again, so a server that has
  recovered gets the full concurrency back after a few calls;
* never waits past the call's deadline (the caller's time budget).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

DEFAULT_CONCURRENCY = 4
DEFAULT_PAUSE_S = 1.0  # a 429 without Retry-After
_MIN_SPACING_S = 0.001


class RateLimited(Exception):
    """The limiter would make the caller wait past its deadline."""


class RateLimiter:
    def __init__(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self._not_before = 0.0
        self._spacing = 0.0

    def hold(self, seconds: float | None) -> None:
        """The server said 429: nobody sends for ``seconds``, then one at a time."""
        wait = DEFAULT_PAUSE_S if seconds is None else max(seconds, _MIN_SPACING_S)
        with self._lock:
            self._not_before = max(self._not_before, self._clock() + wait)
            self._spacing = max(self._spacing, wait)

    def passed(self) -> None:
        """An answer that was not a 429: the spacing halves."""
        with self._lock:
            self._spacing = self._spacing / 2 if self._spacing / 2 >= _MIN_SPACING_S else 0.0

    @contextmanager
    def slot(self, deadline: float) -> Iterator[None]:
        """A place to send one request (module doc); ``RateLimited`` past ``deadline``."""
        if not self._slots.acquire(timeout=max(0.0, deadline - self._clock())):
            raise RateLimited(f"all {self.concurrency} request slots stayed busy until the time budget ran out")
        try:
            self._wait_turn(deadline)
            yield
        finally:
            self._slots.release()

    def _wait_turn(self, deadline: float) -> None:
        with self._lock:
            now = self._clock()
            turn = max(now, self._not_before)
            if turn >= deadline:
                raise RateLimited(f"the server asked to wait {turn - now:.1f}s more, past the time budget")
            self._not_before = turn + self._spacing if self._spacing else self._not_before
        if turn > now:
            self._sleep(turn - now)
