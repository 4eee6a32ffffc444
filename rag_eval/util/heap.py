"""The garbage collector during a run: what is alive after warm-up is never scanned again,
and the controller's one burst of allocation at the end is not scanned while it runs.

* :meth:`Heap.freeze` (``gc.freeze()``) after collection and again once the system has
  started: the collected items, the golden set, the system and its index live to the end
  of the run, yet every full collection during the test loop walked all of them again.
  Frozen objects are still freed by reference counting; only cycles among them wait
  until :meth:`Heap.release` (the run's end) gives them back to the collector.
* :func:`paused` while the controller aggregates, gates and writes its outputs: hundreds of
  thousands of short-lived dicts and lists (the results file, the report's case data)
  would otherwise trigger collections that find nothing to free. The collector's state
  is restored afterwards, also on an exception.

A heap someone else froze (a run inside another run, e.g. pytester) is left alone: this
run neither freezes more nor unfreezes theirs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class Heap:
    """One run's freezing of the heap (module doc)."""

    def __init__(self) -> None:
        self._owner: bool | None = None  # None: not frozen yet; False: frozen by someone else first

    def freeze(self) -> None:
        """Move everything alive now out of the collector's scans (until :meth:`release`)."""
        if self._owner is None:
            self._owner = gc.get_freeze_count() == 0
        if self._owner:
            gc.freeze()

    def release(self) -> None:
        """Give what :meth:`freeze` moved back to the collector; nothing when another froze first."""
        if self._owner:
            gc.unfreeze()
        self._owner = None


@contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside the block; the collector as it was afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
