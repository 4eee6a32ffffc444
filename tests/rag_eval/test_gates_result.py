"""GateResult's short form (the verdict line) and bound (JUnit): one format for every
kind of gate, thresholds rounded as the terminal rounds them (part 2, items 4 and 5)."""

from __future__ import annotations

from rag_eval.gates.result import NO_NEW_FAILURES, GateResult


def gate(kind: str, metric: str, key: str, op: str, threshold: float | None, value: float, n: int) -> GateResult:
    baseline = None if threshold is None else threshold + 0.02  # a regression gate's bound is baseline - max_drop
    return GateResult(
        kind, metric, kind, key, op, threshold, value, n, 0, False, "", (), baseline=baseline, max_drop=0.02
    )


def test_the_verdict_names_tier_and_regression_gates_in_one_format() -> None:
    tier = gate("tier", "retrieval.doc.hit@5", "doc.hit@5", "min", 0.75, 20 / 27, 27)
    drop = gate("regression", "regression.retrieval.recall@5", "retrieval.recall@5", "min", 0.9059259259259259, 0.8, 27)
    new = gate("regression", "regression.no_new_failures", NO_NEW_FAILURES, "max", 0.0, 5.0, 27)
    assert tier.short() == "retrieval.doc.hit@5 0.7407 < 0.75, n=27"
    assert drop.short() == "regression.retrieval.recall@5 0.8 < 0.9059, n=27"
    assert new.short() == "regression.no_new_failures 5 > 0, n=27"


def test_the_bound_is_rounded_as_the_gates_own_line_shows_it() -> None:
    drop = gate("regression", "regression.retrieval.recall@5", "retrieval.recall@5", "min", 0.9059259259259259, 0.8, 27)
    assert drop.bound() == "0.9059" and "need >= 0.9059" in drop.line()
    assert gate("tier", "retrieval.mrr", "mrr", "min", 1 / 3, 0.2, 9).bound() == f"{1 / 3:g}" == "0.333333"
    assert (
        gate("regression", "regression.retrieval.mrr", "retrieval.mrr", "min", None, 0.2, 9).bound()
        == "no baseline value"
    )
