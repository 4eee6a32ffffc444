"""A circuit breaker per endpoint: after N consecutive transport failures, stop sending.

A black-holed endpoint (accepts the connection, never answers) costs ``timeout x
attempts`` per call; over 83 judge cases that is hours. After ``threshold`` calls in a
row ended in a transport failure (timeout, refused or dropped connection, a reset in the
middle of a reply, 5xx, time budget) or in replies that were no chat completion at all
(a whole call of invalid JSON or empty ``choices``), the breaker opens and every later call to that endpoint fails at once with one
message, so a dead endpoint costs about ``threshold x timeout x attempts``. Any answer
from the server (even a 4xx) proves it alive and resets the count. The breaker lives in
one process: under ``pytest -n N`` each worker finds out on its own.
"""  # noqa: E501

from __future__ import annotations

import threading


class CircuitBreaker:
    def __init__(self, threshold: int, *, name: str, setting: str = "") -> None:
        self.threshold = threshold  # 0 = never opens
        self.name = name
        self.setting = setting
        self._lock = threading.Lock()
        self._failures = 0
        self._last = ""

    @property
    def open(self) -> bool:
        with self._lock:
            return self.threshold > 0 and self._failures >= self.threshold

    def message(self) -> str:
        """Why calls are no longer sent (the last failure, redacted by the caller)."""
        with self._lock:
            n, last = self._failures, self._last
        how = f" (set {self.setting} to change the threshold, 0 = never)" if self.setting else ""
        return (
            f"{self.name} gave up after {n} consecutive failed attempts (timeouts or transport failures); no further call is sent in this "  # noqa: E501
            f"process{how}. Last failure: {last}"
        )

    def record(self, *, transport_failure: bool, detail: str = "") -> None:
        with self._lock:
            if transport_failure:
                self._failures += 1
                self._last = detail
            else:
                self._failures = 0
