"""Regression gates: a case that passed on the baseline must not fail now, a metric may
fall at most max_drop below the baseline; without a baseline nothing is evaluated."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag_eval.gates.gate import evaluate_gate
from rag_eval.gates.regression import evaluate_regression, max_drop
from rag_eval.gates.result import EVIDENCE_KEYS, GateResult
from rag_eval.gates.thresholds import Gate, Thresholds, parse_thresholds
from tests.rag_eval._results import case, results


def regression(**table: Any) -> Thresholds:
    return parse_thresholds({"regression": table}, "thresholds.toml")


def by_metric(gates: list[GateResult]) -> dict[str, GateResult]:
    return {g.metric: g for g in gates}


def test_without_a_baseline_nothing_is_evaluated() -> None:
    t = regression(no_new_failures=True, **{"retrieval.recall@5": {"max_drop": 0.0}})
    assert evaluate_regression(t, results([case("a", "fail")]), None) == []


def test_without_a_regression_table_nothing_is_evaluated() -> None:
    t = parse_thresholds({"retrieval": {"recall@5": 0.5}}, "thresholds.toml")
    assert evaluate_regression(t, results([case("a", "fail")]), results([case("a")])) == []


# --------------------------------------------------------------------------- no_new_failures


def test_no_new_failures_passes_when_nothing_that_passed_fails() -> None:
    base = results([case("a"), case("b", "fail")])
    now = results([case("a"), case("b", "fail"), case("new", "fail")])  # a new failing case is not a regression
    (g,) = evaluate_regression(regression(no_new_failures=True), now, base)
    assert (g.metric, g.passed, g.value, g.n, g.errors, g.worst) == ("regression.no_new_failures", True, 0.0, 1, 0, ())
    assert g.line() == "PASS regression.no_new_failures = 0 (need <= 0; n=1)"


def test_no_new_failures_lists_every_newly_failing_case_and_counts_errors() -> None:
    ids = [f"c{i:02d}" for i in range(12)]
    base = results([case(i) for i in ids] + [case("d", tier="deterministic")])
    now = results(
        [case(i, "fail") for i in ids[:11]] + [case(ids[11], "error"), case("d", "fail", tier="deterministic")]
    )
    (g,) = evaluate_regression(regression(no_new_failures=True), now, base)
    assert not g.passed
    assert (g.value, g.n, g.errors) == (13.0, 13, 1)
    assert g.worst == ("deterministic::d", *(f"retrieval::{i}" for i in ids))  # the full list, by key
    assert g.reason == "13 cases that passed on the baseline fail now"
    line = g.line()
    assert line.startswith("FAIL regression.no_new_failures = 13 (need <= 0; n=13, 1 error) (13 cases that passed")
    assert "newly failing: deterministic::d, retrieval::c00," in line and line.endswith("… and 3 more")


def test_no_new_failures_to_dict_has_the_keys_of_a_gate_result() -> None:
    base = results([case("a")])
    now = results([case("a", "error")])
    (g,) = evaluate_regression(regression(no_new_failures=True), now, base)
    d = g.to_dict()
    tier_keys = list(evaluate_gate(Gate("retrieval", "recall@5", "min", 0.5, 1), []).to_dict())
    assert list(d) == [k for k in tier_keys if k not in EVIDENCE_KEYS]  # the statistics come with alpha
    assert d["tier"] == "regression" and d["worst_cases"] == ["retrieval::a"] and d["reason"].startswith("1 case that")
    assert json.loads(json.dumps(d)) == d


def test_no_new_failures_over_zero_comparable_cases_fails() -> None:
    base = results([case("a", "fail")])
    now = results([case("a", "fail")])
    (g,) = evaluate_regression(regression(no_new_failures=True), now, base)
    assert not g.passed and g.n == 0 and "a gate over 0 cases fails" in g.reason


# --------------------------------------------------------------------------- max_drop


def test_max_drop_at_the_boundary_passes_and_below_fails() -> None:
    base = results([case(f"p{i}") for i in range(4)] + [case("f", "fail")])  # recall@5 = 4/5
    same = results([case(f"p{i}") for i in range(4)] + [case("f", "fail")])
    worse = results([case(f"p{i}") for i in range(3)] + [case("p3", "fail"), case("f", "fail")])  # 3/5
    t = regression(**{"retrieval.recall@5": {"max_drop": 0.2}})
    (ok,) = evaluate_regression(t, worse, base)  # 0.6 >= 0.8 - 0.2 (floats: 0.6000000000000001)
    assert ok.passed and ok.threshold == pytest.approx(0.6) and ok.op == "min"
    (strict,) = evaluate_regression(regression(**{"retrieval.recall@5": {"max_drop": 0.0}}), worse, base)
    assert not strict.passed
    assert strict.reason == "fell 0.2000 from the baseline's 0.8000 (n=5), more than max_drop 0"
    assert strict.line() == (
        "FAIL regression.max_drop retrieval.recall@5 = 0.6000 (need >= 0.8000; n=5, baseline n=5) "
        "(fell 0.2000 from the baseline's 0.8000 (n=5), more than max_drop 0)"
    )
    (unchanged,) = evaluate_regression(regression(**{"retrieval.recall@5": {"max_drop": 0.0}}), same, base)
    assert unchanged.passed
    assert unchanged.line() == (
        "PASS regression.max_drop retrieval.recall@5 = 0.8000 (need >= 0.8000 = baseline 0.8000 - 0; n=5, baseline n=5)"
    )


def test_an_improvement_always_passes() -> None:
    base = results([case("a"), case("b", "fail")])
    now = results([case("a"), case("b")])
    (g,) = evaluate_regression(regression(**{"retrieval.pass_rate": {"max_drop": 0.0}}), now, base)
    assert g.passed and (g.value, g.n) == (1.0, 2)


def test_a_lower_is_better_metric_may_rise_at_most_max_drop() -> None:
    base = results([case(f"p{i}") for i in range(10)])  # error_rate 0
    now = results([case(f"p{i}") for i in range(9)] + [case("p9", "error")])  # error_rate 0.1
    (g,) = evaluate_regression(regression(**{"retrieval.error_rate": {"max_drop": 0.05}}), now, base)
    assert (g.op, g.threshold, g.passed, g.errors) == ("max", 0.05, False, 1)
    assert g.reason.startswith("rose 0.1000 from the baseline's 0.0000 (n=10)")
    (g,) = evaluate_regression(regression(**{"retrieval.error_rate": {"max_drop": 0.1}}), now, base)
    assert g.passed


def test_a_dialogue_rate_at_any_clarification_limit_is_lower_is_better() -> None:
    """clarification_failure_<L> / past_<L>_rounds for L other than the default 3: a rise is the drop."""
    for metric in ("dialogue.clarification_failure_4", "dialogue.past_2_rounds", "dialogue.clarification_failure_3"):

        def run(value: float) -> dict[str, Any]:
            return {"metrics": {metric: value}, "metrics_n": {metric: {"value": value, "n": 20, "errors": 0}}}  # noqa: B023 - called only within this iteration

        (rule,) = regression(**{metric: {"max_drop": 0.05}}).regression.max_drops
        worse = max_drop(rule, run(0.30), run(0.10))
        assert (worse.op, worse.passed) == ("max", False), metric
        assert worse.reason.startswith("rose 0.2000 from the baseline's 0.1000"), worse.reason
        assert max_drop(rule, run(0.05), run(0.10)).passed, metric


def test_a_metric_the_baseline_did_not_measure_fails_with_the_fix() -> None:
    base = results([case("a")])
    now = results([case("a"), case("d", tier="deterministic")], thresholds={})
    (g,) = evaluate_regression(regression(**{"deterministic.pass_rate": {"max_drop": 0.0}}), now, base)
    assert not g.passed and g.threshold is None
    assert "the baseline did not measure deterministic.pass_rate" in g.reason
    assert "regenerate the baseline on main with the same tiers" in g.reason
    assert "no baseline value" in g.line()


def test_a_metric_not_measured_now_fails_as_a_gate_over_zero_cases() -> None:
    base = results([case("a"), case("n", negative=True, metrics={"negative.empty_context": 1.0})])
    now = results([case("a")])
    (g,) = evaluate_regression(regression(**{"retrieval.negative.empty_context": {"max_drop": 0.0}}), now, base)
    assert not g.passed and g.n == 0 and "a gate over 0 cases fails" in g.reason


def test_a_tier_that_did_not_run_now_is_not_evaluated() -> None:
    base = results([case("a"), case("d", tier="deterministic")])
    now = results([case("a"), case("d", "skip", tier="deterministic")])
    gates = evaluate_regression(
        regression(**{"retrieval.recall@5": {"max_drop": 0.0}, "deterministic.pass_rate": {"max_drop": 0.0}}), now, base
    )
    assert [g.metric for g in gates] == ["regression.max_drop retrieval.recall@5"]


def test_all_gates_in_file_order_after_no_new_failures() -> None:
    base = results([case("a"), case("b")])
    now = results([case("a"), case("b", "fail")])
    t = regression(
        **{"retrieval.pass_rate": {"max_drop": 0.5}, "no_new_failures": True, "retrieval.recall@5": {"max_drop": 0.1}}
    )
    gates = evaluate_regression(t, now, base)
    assert [g.metric for g in gates] == [
        "regression.no_new_failures",
        "regression.max_drop retrieval.pass_rate",
        "regression.max_drop retrieval.recall@5",
    ]
    assert [g.passed for g in gates] == [False, True, False]
    assert by_metric(gates)["regression.max_drop retrieval.recall@5"].to_dict()["threshold"] == pytest.approx(0.9)
