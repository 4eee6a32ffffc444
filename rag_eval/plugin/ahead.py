"""Which cases this process runs next, started ahead of their tests (``--rag-concurrency``).

Before each test's call, :meth:`Ahead.top_up` looks at the cases this process will run
next and hands those whose tier waits on a model or a service (``Tier.ahead``) to the
:class:`~rag_eval.plugin.prefetch.Prefetcher`, up to its width (``WINDOW`` cases per call
slot). "Will run next" is exact:

* in a serial run, the tests after this one in ``session.items`` (after ``-k``, ``-m``,
  ``--lf``, any reordering);
* on an xdist worker, the tests the controller already sent to *this* worker (its queue),
  so no case is called by two workers. Under ``--dist worksteal`` a queued test can still be
  stolen by another worker; only the next test is started ahead there.

A test that is not a case of one tier (no ``golden_case`` / ``dialogue_case`` with the
``rag_eval`` fixture, or the plugin's own case), a skipped one, or a case its tier would
skip is never started ahead: its test runs it as before.

Each test is looked at once (:meth:`Ahead._candidate`: its case, its skip marks, whether
its tier runs ahead), not once per test before it within the horizon: with a tier that
never runs ahead (rag_app in process) that look, repeated ~65 times per test, cost about
1 ms per case (bench/gate_overhead.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rag_eval import tiers
from rag_eval.core.errors import ConfigError
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import GoldenItem
from rag_eval.plugin.collect import GoldenCase, tier_of
from rag_eval.plugin.prefetch import Prefetcher, case_key
from rag_eval.session import EvalSession

CASE_PARAMS = ("golden_case", "dialogue_case")
SKIP_MARKERS = ("skip", "skipif", "xfail")  # their outcome is decided before the call: never called ahead
# How far past the current test to look for cases to start: bounded, so a run of 100k
# retrieval cases before its judge cases does not rescan them on every test.
MIN_HORIZON = 64
# Cases started and not yet taken, per call slot: a case whose conversation is longer (a
# repair: two calls in a row) keeps its test waiting while the cases after it are done and
# wait to be taken; with twice as many cases ahead as calls in flight the endpoint stays
# busy meanwhile. Calls in flight stay bounded by the run's concurrency all the same: by the
# judge endpoint's rate limiter (RAG_JUDGE_CONCURRENCY) and the system's slots.
WINDOW = 2


def case_of(node: pytest.Item) -> tuple[str, GoldenItem | DialogueItem] | None:
    """The (tier, item) a test runs, or None when it is not one case of one tier."""
    if isinstance(node, GoldenCase):
        return node.tier, node.golden
    callspec = getattr(node, "callspec", None)
    if callspec is None or "rag_eval" not in getattr(node, "fixturenames", ()):
        return None
    for name in CASE_PARAMS:
        value = callspec.params.get(name)
        if isinstance(value, (GoldenItem, DialogueItem)):
            tier = tier_of(node)
            return (tier, value) if tier is not None else None
    return None


class Ahead:
    """One process's cases started ahead (module doc)."""

    def __init__(self, session: pytest.Session, width: int) -> None:
        self.session = session
        self.prefetcher = Prefetcher(WINDOW * width)
        self.horizon = max(MIN_HORIZON, 4 * WINDOW * width)
        self._position: dict[str, int] | None = None
        self._queue: Any = _worker_interactor(session.config)
        self._steals = session.config.getoption("dist", "no") == "worksteal"
        self._ahead: dict[str, bool] = {}
        # nodeid -> its (tier, item) while it may still be started ahead; None once it never will
        # (not a case, marked skip, its tier does not run ahead, or already started)
        self._looked: dict[str, tuple[str, GoldenItem | DialogueItem] | None] = {}
        # a serial run: session.items up to _scanned are looked at; _open, the positions among
        # them that may still be started (so a test past the current one is passed over once)
        self._scanned = 0
        self._open: list[int] = []
        self._warm = False

    def top_up(self, eval_session: EvalSession, node: pytest.Item, nextitem: pytest.Item | None) -> None:
        """Start the cases of ``node`` and of the tests after it, while there is room."""
        if not self._warm:
            eval_session.warm()  # lazy attributes built here, on the main thread
            self._warm = True
        for upcoming in self._upcoming(eval_session, node, nextitem):
            if self.prefetcher.room() <= 0:
                return
            self._start(eval_session, upcoming)

    def _look(self, eval_session: EvalSession, node: pytest.Item) -> tuple[str, GoldenItem | DialogueItem] | None:
        nodeid = node.nodeid
        if nodeid in self._looked:
            return self._looked[nodeid]
        case = self._looked[nodeid] = self._candidate(eval_session, node)
        return case

    def _start(self, eval_session: EvalSession, node: pytest.Item) -> None:
        nodeid = node.nodeid
        case = self._look(eval_session, node)
        if case is None:
            return
        tier, item = case
        try:
            if eval_session.skip_reason(tier, item) is not None:
                return  # its test skips it
        except ConfigError:
            return  # its test reports the configuration error
        if self.prefetcher.submit(case_key(nodeid, tier, item.id), tier, lambda: eval_session.run_case(tier, item)):
            self._looked[nodeid] = None  # started: the prefetcher never takes it twice

    def _candidate(self, eval_session: EvalSession, node: pytest.Item) -> tuple[str, GoldenItem | DialogueItem] | None:
        """The test's (tier, item) when it may run ahead, else None; once per test (module doc)."""
        case = case_of(node)
        if case is None or any(node.get_closest_marker(m) is not None for m in SKIP_MARKERS):
            return None
        return case if self._worth(eval_session, case[0]) else None

    def _worth(self, eval_session: EvalSession, tier: str) -> bool:
        if tier not in self._ahead:
            try:
                self._ahead[tier] = tier in tiers.names() and tiers.get(tier).ahead(eval_session)
            except ConfigError:
                self._ahead[tier] = False
        return self._ahead[tier]

    def _upcoming(
        self, eval_session: EvalSession, node: pytest.Item, nextitem: pytest.Item | None
    ) -> Iterator[pytest.Item]:
        """``node``, then the tests this process runs after it (module doc), up to the horizon;
        in a serial run only those that may still be started."""
        yield node
        items = self.session.items
        if self._queue is not None:  # an xdist worker: what the controller sent it
            if nextitem is not None:
                yield nextitem
            if self._steals:
                return
            with self._queue.torun.lock() as queued:
                indices = [i for i in queued if isinstance(i, int)][: self.horizon]
            for index in indices:
                if index < len(items):
                    yield items[index]
            return
        if self._position is None:
            self._position = {i.nodeid: n for n, i in enumerate(items)}
        start = self._position.get(node.nodeid)
        if start is not None:
            yield from self._open_between(eval_session, items, start + 1, start + 1 + self.horizon)

    def _open_between(
        self, eval_session: EvalSession, items: list[pytest.Item], low: int, high: int
    ) -> list[pytest.Item]:
        """The tests at positions ``low`` to ``high`` (excluded) that may still be started,
        looking at those not looked at before."""
        for index in range(max(self._scanned, low), min(high, len(items))):
            if self._look(eval_session, items[index]) is not None:
                self._open.append(index)
        self._scanned = max(self._scanned, high)
        self._open = [i for i in self._open if i >= low and self._looked.get(items[i].nodeid) is not None]
        return [items[i] for i in self._open if i < high]

    def stop(self) -> None:
        self.prefetcher.stop()


def _worker_interactor(config: pytest.Config) -> Any:
    """xdist's worker-side plugin holding this worker's queue of test indices, or None."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor" and hasattr(plugin, "torun"):
            return plugin
    return None
