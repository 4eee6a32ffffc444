"""The comparison's readers of one run: the ranked-list tier's cases derived once per run,
and the gate's own figure (metrics_n) read by one function for both the table and --select."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_eval.grid import measures
from rag_eval.grid.comparison import Run, estimate
from rag_eval.grid.select import value
from rag_eval.grid.spec import Configuration


def _case(cid: str, tier: str, outcome: str = "pass", recall: float = 1.0) -> dict[str, Any]:
    details = {"stage_levels": [["dense"]]} if tier == "retrieval" else {}
    return {"id": cid, "tier": tier, "outcome": outcome, "metrics": {"recall@5": recall}, "details": details}


def _run(results: dict[str, Any]) -> Run:
    return Run(Configuration({"top_k": 5}, {"top_k": 5}), Path("r.json"), results)


def test_a_runs_retrieval_cases_are_derived_once(monkeypatch: Any) -> None:
    cases = [_case("a", "retrieval"), _case("b", "retrieval", "skip"), _case("a", "judge"), _case("c", "retrieval")]
    run = _run({"cases": cases})
    calls: list[int] = []
    real = measures.ranked_tier
    monkeypatch.setattr(measures, "ranked_tier", lambda r: calls.append(1) or real(r))
    first = run.cases
    assert [(c["tier"], c["id"]) for c in first] == [("retrieval", "a"), ("retrieval", "c")]  # skip, judge left out
    assert run.cases is first and calls == [1]
    assert measures.case_metric(run.cases, "recall@5") == {"retrieval::a": 1.0, "retrieval::c": 1.0}


def test_the_gates_own_figure_is_read_where_stored_else_computed_from_the_cases() -> None:
    cases = [_case("a", "retrieval", recall=1.0), _case("b", "retrieval", recall=0.0)]
    row = {"value": 0.25, "n": 4, "errors": 0, "ci": [0.1, 0.4]}
    with_row = {"cases": cases, "metrics_n": {"retrieval.recall@5": row}}
    assert measures.stored(with_row, "retrieval.recall@5") == row
    assert value(with_row, "retrieval.recall@5") == 0.25  # the gate's, not the cases' mean (1 + 0) / 2
    assert estimate(with_row, "retrieval.recall@5", {"x": 1.0}) == {"value": 0.25, "n": 4, "ci": [0.1, 0.4]}
    unmeasured = {"cases": cases, "metrics_n": {"retrieval.recall@5": {"value": None, "n": 0, "errors": 0}}}
    assert measures.stored(unmeasured, "retrieval.recall@5") is None
    assert value(unmeasured, "retrieval.recall@5") == (1.0 + 0.0) / 2
