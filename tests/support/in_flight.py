"""Scripted servers that hold each call for a fixed time and count how many they hold at
once (the concurrency tests and bench/judge_concurrency.py), and the results-file keys that
are timings: what two runs of the same cases may differ in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

# what differs between two runs of the same cases: how long things took
TIMING_KEYS = frozenset({"duration", "seconds", "latency_s", "elapsed_s"})

R = TypeVar("R")


def without(value: Any, keys: frozenset[str] = TIMING_KEYS) -> Any:
    """``value`` without the dict keys ``keys`` (the timings), at any depth."""
    if isinstance(value, dict):
        return {k: without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without(v, keys) for v in value]
    return value


class InFlight:
    """Hold each call ``seconds`` in the server's handler thread; count the calls held at once
    (``most``, since the last :meth:`reset`)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self.now = self.most = 0

    def hold(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.seconds)
        finally:
            with self._lock:
                self.now -= 1

    def reset(self) -> None:
        with self._lock:
            self.most = self.now

    def answering(self, answer: Callable[[Any], R]) -> Callable[[Any], R]:
        """A responder (``ScriptedOpenAIServer.set_default``) that holds, then answers."""

        def respond(request: Any) -> R:
            self.hold()
            return answer(request)

        return respond
