"""The Prefetcher (rag_eval.plugin.prefetch): at most ``width`` cases ahead, each group's
first case alone, every result taken once, failures raised in the taking test."""

from __future__ import annotations

import threading

import pytest

from rag_eval.core.case import CaseResult
from rag_eval.plugin.prefetch import Prefetcher, case_key


def result(case_id: str) -> CaseResult:
    return CaseResult(id=case_id, tier="judge", outcome="pass")


class Gate:
    """Cases that block until released, recording how many ran at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Condition()
        self.running = 0
        self.most = 0

    def case(self, case_id: str) -> CaseResult:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.lock.notify_all()
        self.release.wait(5)
        with self.lock:
            self.running -= 1
        return result(case_id)

    def wait_running(self, n: int, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout``) until ``n`` cases are inside at once: released before
        the pool's threads have all started, a case would just pass through."""
        with self.lock:
            self.lock.wait_for(lambda: self.running >= n, timeout)


def test_never_more_than_width_cases_ahead() -> None:
    gate, ahead = Gate(), Prefetcher(3)
    assert ahead.submit("warm", "judge", lambda: result("warm")) and ahead.take("warm") is not None
    started = [ahead.submit(f"c{i}", "judge", lambda i=i: gate.case(f"c{i}")) for i in range(5)]
    assert started == [True, True, True, False, False] and ahead.room() == 0 and ahead.pending() == 3
    gate.wait_running(3)
    gate.release.set()
    assert [ahead.take(f"c{i}").id for i in range(3)] == ["c0", "c1", "c2"]  # type: ignore[union-attr]
    assert gate.most == 3 and ahead.room() == 3


def test_the_first_case_of_a_group_runs_alone() -> None:
    gate, ahead = Gate(), Prefetcher(4)
    assert ahead.submit("j1", "judge", lambda: gate.case("j1"))
    assert not ahead.submit("j2", "judge", lambda: result("j2"))  # the judge's first case is still running
    assert ahead.submit("d1", "dialogue", lambda: result("d1"))  # another tier has its own first case
    gate.release.set()
    assert ahead.take("j1") == result("j1")
    assert ahead.submit("j2", "judge", lambda: result("j2")) and ahead.take("j2") == result("j2")


def test_a_case_is_run_ahead_once_and_taken_once() -> None:
    ahead, calls = Prefetcher(2), []
    key = case_key("test_judge.py::test_judge[q1]", "judge", "q1")
    assert ahead.submit(key, "judge", lambda: calls.append(1) or result("q1"))
    assert ahead.take(key) == result("q1")
    assert ahead.take(key) is None  # a second take (a rerun of the test) computes it again itself
    assert not ahead.submit(key, "judge", lambda: calls.append(1) or result("q1"))
    assert calls == [1]


def test_a_failure_is_raised_in_the_test_that_takes_it() -> None:
    ahead = Prefetcher(2)

    def boom() -> CaseResult:
        raise RuntimeError("the case broke")

    ahead.submit("k", "judge", boom)
    with pytest.raises(RuntimeError, match="the case broke"):
        ahead.take("k")


def test_stop_drops_what_was_not_taken_and_takes_no_more() -> None:
    gate, ahead = Gate(), Prefetcher(2)
    ahead.submit("k", "judge", lambda: gate.case("k"))
    ahead.stop()
    assert ahead.pending() == 0 and ahead.room() == 0 and ahead.take("k") is None
    assert not ahead.submit("k2", "other", lambda: result("k2"))
    gate.release.set()


def test_width_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="width must be >= 1"):
        Prefetcher(0)
