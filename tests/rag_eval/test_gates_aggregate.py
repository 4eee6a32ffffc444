"""Aggregation: every value is a mean over the cases in scope, with its n; an error
counts as the metric's worst value (never a pass, never dropped from the denominator);
skipped cases are out of scope."""

from __future__ import annotations

from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.gates.aggregate import (
    MetricValue,
    aggregate_all,
    aggregate_tier,
    metric_value,
    outcome_counts,
    select,
    worst_value,
)


def case(cid: str, outcome: str = "pass", tier: str = "retrieval", **kw: Any) -> CaseResult:
    return CaseResult(id=cid, tier=tier, outcome=outcome, **kw)  # type: ignore[arg-type]


CASES = [
    case("a", metrics={"recall@5": 1.0}, tags={"scenario": "standard", "topic": "set"}),
    case("b", "fail", metrics={"recall@5": 0.5}, tags={"scenario": "standard", "topic": "logic"}),
    case("c", "fail", metrics={"recall@5": 0.0}, tags={"scenario": "colloquial", "topic": "set"}),
    case("d", "error", tags={"scenario": "standard", "topic": "set"}),
    case("e", "skip", metrics={"recall@5": 0.0}, tags={"scenario": "standard", "topic": "set"}),
    case("f", "pass", tier="deterministic", metrics={"check.must_contain": 1.0}),
]


def test_select_scopes_by_tier_and_drops_skips() -> None:
    assert [c.id for c in select(CASES, "retrieval")] == ["a", "b", "c", "d"]
    assert [c.id for c in select(CASES, "deterministic")] == ["f"]
    assert select(CASES, "judge") == []


def test_select_by_tags_needs_every_tag() -> None:
    assert [c.id for c in select(CASES, "retrieval", {"scenario": "standard"})] == ["a", "b", "d"]
    assert [c.id for c in select(CASES, "retrieval", {"scenario": "standard", "topic": "set"})] == ["a", "d"]
    assert select(CASES, "retrieval", {"scenario": "negative"}) == []
    # a case without the tag key does not match a selector on it
    assert select([case("x")], "retrieval", {"topic": "set"}) == []


def test_an_error_counts_as_the_worst_value_in_the_mean() -> None:
    scoped = select(CASES, "retrieval")
    # d errored and measured nothing: dropping it would give 0.5; it counts as 0 instead
    assert metric_value(scoped, "recall@5") == MetricValue((1.0 + 0.5 + 0.0 + 0.0) / 4, 4, errors=1)


def test_for_a_lower_is_better_metric_an_error_counts_as_1() -> None:
    negs = [
        case("n1", metrics={"negative.any_above_threshold": 0.0}, negative=True),
        case("n2", "error", negative=True),
    ]
    assert metric_value(negs + [case("p", "error")], "negative.any_above_threshold") == MetricValue(0.5, 2, errors=1)


def test_the_worst_value_of_a_dialogue_rate_is_1_at_every_clarification_limit() -> None:
    for key in ("clarification_failure_3", "clarification_failure_4", "past_2_rounds", "final_leak_rate", "error_rate"):
        assert worst_value(key) == 1.0, key
    for key in ("intent_accuracy", "hint_level_accuracy", "recall@5"):
        assert worst_value(key) == 0.0, key


def test_the_worst_value_of_a_claim_level_judge_metric_follows_its_direction() -> None:
    for key in ("hallucination", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant"):
        assert worst_value(key) == 1.0, key
    for key in ("claim_recall", "context_precision", "context_utilization", "answer_f1", "self_knowledge"):
        assert worst_value(key) == 0.0, key
    judged = [case("j1", tier="judge", metrics={"hallucination": 0.25}), case("j2", "error", tier="judge")]
    assert metric_value(judged, "hallucination") == MetricValue((0.25 + 1.0) / 2, 2, errors=1)


def test_metric_nobody_measured_has_no_value() -> None:
    assert metric_value([c for c in CASES if c.outcome != "error"], "ndcg@10") == MetricValue(None, 0, 0)
    assert metric_value([], "recall@5") == MetricValue(None, 0, 0)
    # the one error in scope would have measured it: it counts, as 0
    assert metric_value(select(CASES, "retrieval"), "ndcg@10") == MetricValue(0.0, 1, errors=1)


def test_pass_rate_counts_errors_as_not_passing() -> None:
    scoped = select(CASES, "retrieval")
    assert metric_value(scoped, "pass_rate") == MetricValue(1 / 4, 4, errors=1)


def test_error_rate() -> None:
    scoped = select(CASES, "retrieval")
    assert metric_value(scoped, "error_rate") == MetricValue(1 / 4, 4, errors=1)
    assert metric_value(select(CASES, "deterministic"), "error_rate") == MetricValue(0 / 1, 1, 0)


def test_fail_count_counts_fails_and_errors() -> None:
    assert metric_value(select(CASES, "retrieval"), "fail_count") == MetricValue(3.0, 4, errors=1)


def test_rates_over_no_cases_have_no_value() -> None:
    assert metric_value([], "pass_rate") == MetricValue(None, 0, 0)
    assert metric_value([], "error_rate") == MetricValue(None, 0, 0)


def test_all_errors_pass_rate_is_zero_not_undefined() -> None:
    scoped = [case("x", "error"), case("y", "error")]
    assert metric_value(scoped, "pass_rate") == MetricValue(0.0, 2, errors=2)
    assert metric_value(scoped, "error_rate") == MetricValue(1.0, 2, errors=2)


def test_aggregate_tier_has_every_metric_and_the_rates() -> None:
    out = aggregate_tier(CASES, "retrieval")
    assert set(out) == {"retrieval.recall@5", "retrieval.pass_rate", "retrieval.error_rate"}
    row = out["retrieval.recall@5"].to_dict()
    assert {k: row[k] for k in ("value", "n", "errors")} == {"value": (1.0 + 0.5 + 0.0 + 0.0) / 4, "n": 4, "errors": 1}
    assert row["ci_method"] == "bootstrap" and row["confidence"] == 0.95  # a mean of per-case values


def test_aggregate_all_covers_every_tier() -> None:
    out = aggregate_all(CASES)
    assert set(out) == {
        "retrieval.recall@5",
        "retrieval.pass_rate",
        "retrieval.error_rate",
        "deterministic.check.must_contain",
        "deterministic.pass_rate",
        "deterministic.error_rate",
    }
    assert out["deterministic.pass_rate"] == MetricValue(1.0, 1, 0)


def test_outcome_counts_include_skips() -> None:
    assert outcome_counts(CASES) == {
        "retrieval": {"pass": 1, "fail": 2, "error": 1, "skip": 1},
        "deterministic": {"pass": 1, "fail": 0, "error": 0, "skip": 0},
    }
