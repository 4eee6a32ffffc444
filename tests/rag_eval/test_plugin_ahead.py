"""Which upcoming tests run ahead (rag_eval.plugin.ahead.Ahead): the cases of a tier that
runs ahead, in the order the tests run, never a skipped or non-case test, and each test
looked at once however many tests come before it within the horizon."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from rag_eval.core.case import CaseResult
from rag_eval.plugin import ahead as ahead_module
from rag_eval.plugin.ahead import Ahead
from rag_eval.plugin.prefetch import case_key


class Node:
    """The little of a pytest item the scan reads: its id and its marks."""

    def __init__(self, nodeid: str, case: tuple[str, str] | None, marks: tuple[str, ...] = ()) -> None:
        self.nodeid = nodeid
        self.case = None if case is None else (case[0], SimpleNamespace(id=case[1]))
        self.marks = marks

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name in self.marks else None


class EvalSessionStub:
    """Judge cases run ahead (a judge call per case); retrieval does not (one call at a time)."""

    system_concurrency = 1

    def __init__(self, skipped: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.skipped = skipped
        self.ran: list[str] = []

    def warm(self) -> None:
        pass

    def skip_reason(self, tier: str, item: Any) -> str | None:
        return "skipped" if item.id in self.skipped else None

    def run_case(self, tier: str, item: Any) -> CaseResult:
        self.ran.append(item.id)
        return CaseResult(id=item.id, tier=tier, outcome="pass")


def make_ahead(items: list[Node], width: int) -> Ahead:
    config = SimpleNamespace(getoption=lambda name, default=None: default)  # no xdist: a serial run
    session = SimpleNamespace(items=items, config=config)
    ahead = Ahead(session, width)  # type: ignore[arg-type]
    # the judge's first case done already, so what starts when depends on the scan alone
    assert ahead.prefetcher.submit("warm", "judge", lambda: CaseResult(id="warm", tier="judge", outcome="pass"))
    assert ahead.prefetcher.take("warm") is not None
    return ahead


def run_all(items: list[Node], ahead: Ahead, es: EvalSessionStub) -> list[str]:
    """Each test as the plugin runs it: top up, then take its case if it ran ahead, else run it."""
    by_test: list[str] = []
    for i, node in enumerate(items):
        nxt = items[i + 1] if i + 1 < len(items) else None
        ahead.top_up(es, node, nxt)  # type: ignore[arg-type]
        if node.case is None:
            continue
        tier, item = node.case
        if ahead.prefetcher.take(case_key(node.nodeid, tier, item.id)) is None:
            es.run_case(tier, item)
            by_test.append(item.id)
    return by_test


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of the per-test inspection (``case_of``), by node id."""
    calls: list[str] = []

    def case_of(node: Node) -> Any:
        calls.append(node.nodeid)
        return node.case

    monkeypatch.setattr(ahead_module, "case_of", case_of)
    return calls


def test_the_cases_of_a_tier_that_runs_ahead_start_in_test_order(counted: list[str]) -> None:
    items = [
        Node("t::plain", None),
        Node("t::judge[q1]", ("judge", "q1")),
        Node("t::retrieval[r1]", ("retrieval", "r1")),  # rag_app in process: never ahead
        Node("t::judge[q2]", ("judge", "q2"), marks=("skip",)),
        Node("t::judge[q3]", ("judge", "q3")),
        Node("t::judge[q4]", ("judge", "q4"), marks=("xfail",)),
        Node("t::judge[q5]", ("judge", "q5")),  # its tier would skip it: its test does
        Node("t::judge[q6]", ("judge", "q6")),
        Node("t::judge[q7]", ("judge", "q7")),
    ]
    es = EvalSessionStub(skipped={"q5"})
    ahead = make_ahead(items, width=2)
    by_test = run_all(items, ahead, es)
    ahead.stop()
    started = [i for i in es.ran if i not in by_test]
    assert started == ["q1", "q3", "q6", "q7"]  # in the order of their tests
    assert sorted(by_test) == ["q2", "q4", "q5", "r1"]  # retrieval, and the skipped ones
    assert sorted(es.ran) == ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "r1"]  # each case once
    assert sorted(set(counted)) == sorted(n.nodeid for n in items)


@pytest.mark.parametrize("width", [1, 4])
def test_each_test_is_looked_at_once_whatever_the_horizon(counted: list[str], width: int) -> None:
    """The retrieval tier in process never runs ahead: before, each test was inspected again
    by every test before it within the horizon (~65 times)."""
    items = [Node(f"t::retrieval[q{i}]", ("retrieval", f"q{i}")) for i in range(500)]
    items += [Node(f"t::judge[j{i}]", ("judge", f"j{i}")) for i in range(100)]
    es = EvalSessionStub()
    ahead = make_ahead(items, width)
    offered: list[str] = []
    start = ahead._start

    def counting_start(eval_session: Any, node: Node) -> None:
        offered.append(node.nodeid)
        start(eval_session, node)  # type: ignore[arg-type]

    ahead._start = counting_start  # type: ignore[method-assign]
    by_test = run_all(items, ahead, es)
    ahead.stop()
    assert len(counted) == len(items) and len(set(counted)) == len(items)  # linear: once per test
    # and a test that will never run ahead is not offered again by every test before it
    assert len(offered) <= len(items) + 100 * width
    assert by_test == [f"q{i}" for i in range(500)]  # retrieval by its tests
    assert [i for i in es.ran if i not in by_test] == [f"j{i}" for i in range(100)]  # the judge's ahead
