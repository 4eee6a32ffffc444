"""Cases run ahead of their tests: :class:`Prefetcher`.

A case whose calls wait on a model or a service (the judge's, an HTTP system's) starts on
a thread of its own before its test runs, so that while one test waits for its answer the
next ``width`` cases' calls are already in flight: wall time approaches
``cases x latency / width`` instead of ``cases x latency``. The test then takes the
finished :class:`CaseResult` and reports it exactly as if it had computed it itself.

Only the order of calls changes, never what a case computes: a case is the same function
of its item on any thread (cache keys, budget reservations, redaction and timeouts live
below, in ``rag_eval.llm``), and each result is taken once, by its own test.

* At most ``width`` cases are submitted and not yet taken, so a run never gets more than
  ``width`` cases ahead of its tests, whatever the latency.
* The first case of each tier runs alone: what a tier learns on its first call (the
  judge's output mode a server accepts, a client built on first use) is learnt once, as in a
  serial run, before others run beside it.
* Threads are daemons: a run stopped by ``-x`` or Ctrl-C does not wait for the calls still
  in flight; their results are dropped (:meth:`stop`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future

from rag_eval.core.case import CaseResult

Key = Hashable


def case_key(nodeid: str, tier: str, item_id: str) -> Key:
    """One case of one test: the same item in two test functions is two cases."""
    return nodeid, tier, item_id


class Prefetcher:
    """Runs submitted cases on daemon threads; module doc."""

    def __init__(self, width: int) -> None:
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        self.width = width
        self._lock = threading.Lock()
        self._jobs: dict[Key, Future[CaseResult]] = {}  # submitted, not yet taken
        self._seen: set[Key] = set()  # ever submitted: a case runs ahead at most once
        self._first: dict[str, Future[CaseResult]] = {}  # each group's first case
        self._stopped = False

    def room(self) -> int:
        """How many more cases may be submitted now."""
        with self._lock:
            return 0 if self._stopped else self.width - len(self._jobs)

    def wants(self, key: Key, group: str) -> bool:
        """Whether ``key`` may be submitted now: never submitted, room left, and its group's
        first case finished (or this is that first case)."""
        with self._lock:
            if self._stopped or key in self._seen or len(self._jobs) >= self.width:
                return False
            first = self._first.get(group)
            return first is None or first.done()

    def submit(self, key: Key, group: str, run: Callable[[], CaseResult]) -> bool:
        """Start ``run()`` for ``key`` on a thread; False when :meth:`wants` says no."""
        if not self.wants(key, group):
            return False
        future: Future[CaseResult] = Future()
        with self._lock:
            self._jobs[key] = future
            self._seen.add(key)
            self._first.setdefault(group, future)

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(run())
            except BaseException as exc:  # noqa: BLE001 - raised again in the test that takes it
                future.set_exception(exc)

        threading.Thread(target=work, name=f"rag-eval-ahead-{group}", daemon=True).start()
        return True

    def take(self, key: Key) -> CaseResult | None:
        """The result of ``key``, waiting for it when still running; None when it was never
        submitted (or already taken): the test computes it itself."""
        with self._lock:
            future = self._jobs.pop(key, None)
        return None if future is None else future.result()

    def pending(self) -> int:
        with self._lock:
            return len(self._jobs)

    def stop(self) -> None:
        """No more submissions; results not yet taken are dropped (their threads end on their own)."""
        with self._lock:
            self._stopped = True
            for future in self._jobs.values():
                future.cancel()
            self._jobs.clear()
