"""Intervals on aggregates, decision rules on gates, paired regression gates with Holm, the power command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.cli import main
from rag_eval.gates.aggregate import metric_value, select
from rag_eval.gates.gate import evaluate_gate
from rag_eval.gates.power_report import PowerError, power_answer
from rag_eval.gates.regression import evaluate_regression
from rag_eval.gates.thresholds import Gate, ThresholdsError, parse_thresholds
from rag_eval.results.file import check_results
from rag_eval.results.model import RunResults
from rag_eval.stats.bootstrap import bootstrap_mean
from rag_eval.stats.closed_form import wilson
from rag_eval.stats.paired import holm, mcnemar_exact
from tests.rag_eval._results import case, results


def retrieval(values: dict[str, float]) -> list[Any]:
    return [case(k, "pass" if v >= 0.5 else "fail", metrics={"recall@5": v, "mrr": v}) for k, v in values.items()]


SPREAD = {f"q{i:02d}": (i % 5) / 4 for i in range(40)}  # 0, .25, .5, .75, 1 repeating: mean 0.5


# --------------------------------------------------------------------------- intervals


def test_a_mean_over_cases_gets_the_content_seeded_bootstrap_over_cases() -> None:
    mv = metric_value(select(retrieval(SPREAD), "retrieval"), "mrr")
    keys = {f"retrieval::{k}": v for k, v in SPREAD.items()}
    assert mv.interval is not None and mv.interval.method == "bootstrap"
    assert (mv.interval.low, mv.interval.high) == (bootstrap_mean(keys).low, bootstrap_mean(keys).high)
    assert mv.interval.low < 0.5 < mv.interval.high  # type: ignore[operator]
    assert (
        metric_value(select(retrieval(SPREAD), "retrieval"), "mrr").to_dict() == mv.to_dict()
    )  # same input, same draw


def test_a_proportion_of_cases_gets_wilson_and_a_metric_of_zeros_and_ones_too() -> None:
    cases = retrieval({f"q{i}": 1.0 if i < 30 else 0.0 for i in range(40)})
    for key in ("pass_rate", "recall@5"):
        row = metric_value(select(cases, "retrieval"), key).to_dict()
        exact = wilson(30, 40)
        assert row["ci_method"] == "wilson" and row["ci"] == [exact.low, exact.high]


def test_all_values_equal_or_one_case_has_no_interval_and_says_why() -> None:
    row = metric_value(select(retrieval({"a": 0.5, "b": 0.5}), "retrieval"), "mrr").to_dict()
    assert "ci" not in row and "se" not in row and "spread is unknown" in row["ci_note"]
    count = metric_value(select(retrieval({"a": 0.5}), "retrieval"), "fail_count").to_dict()
    assert "ci" not in count and "a count" in count["ci_note"]


def test_metrics_n_keeps_its_interval_through_the_results_file_and_validates() -> None:
    doc = results(retrieval(SPREAD))
    check_results(doc)
    row = doc["metrics_n"]["retrieval.mrr"]
    assert set(row) >= {"se", "ci", "ci_method", "confidence"} and row["confidence"] == 0.95
    again = RunResults.from_dict(doc).to_dict()
    assert again["metrics_n"] == doc["metrics_n"] and again["gates"] == doc["gates"]


def test_defaults_confidence_sets_the_level_and_a_bad_level_is_refused() -> None:
    t = parse_thresholds({"defaults": {"confidence": 0.8}, "retrieval": {"mrr": 0.1}}, "t.toml")
    wide = evaluate_gate(t.gates[0], retrieval(SPREAD), confidence=0.95).evidence["ci"]
    narrow = evaluate_gate(t.gates[0], retrieval(SPREAD), confidence=t.confidence).evidence["ci"]
    assert narrow[0] > wide[0] and narrow[1] < wide[1]
    with pytest.raises(ThresholdsError, match=r"t.toml: \[defaults\]: confidence must be a number in \[0.5, 1\)"):
        parse_thresholds({"defaults": {"confidence": 95}}, "t.toml")


# --------------------------------------------------------------------------- rules


def test_the_three_rules_on_a_value_just_under_its_floor() -> None:
    cases = retrieval(SPREAD)  # mrr 0.5 with an interval of about ±0.1
    by_rule = {}
    for rule in ("estimate", "clearly_below", "clearly_above"):
        g = evaluate_gate(Gate("retrieval", "mrr", "min", 0.52, 1, {}, "", rule), cases)
        by_rule[rule] = g
        assert g.evidence["decide"] == rule
    assert not by_rule["estimate"].passed and by_rule["clearly_below"].passed and not by_rule["clearly_above"].passed
    assert "not clearly below 0.52 → pass" in by_rule["clearly_below"].evidence["decision"]
    line = by_rule["clearly_below"].line()
    assert line.startswith("PASS retrieval.mrr = 0.5000 [") and "— clearly_below: 0.50 [" in line


def test_decide_per_gate_overrides_defaults_and_an_unknown_rule_is_refused() -> None:
    t = parse_thresholds(
        {
            "defaults": {"decide": "clearly_above"},
            "retrieval": {"mrr": 0.1, "recall@5": {"min": 0.1, "decide": "estimate"}},
        },
        "t.toml",
    )
    assert [(g.metric, g.decide) for g in t.gates] == [("mrr", "clearly_above"), ("recall@5", "estimate")]
    with pytest.raises(ThresholdsError, match=r"\[retrieval\] mrr: decide = 'lenient'; valid: 'estimate'"):
        parse_thresholds({"retrieval": {"mrr": {"min": 0.1, "decide": "lenient"}}}, "t.toml")


def test_a_gate_over_fewer_than_min_cases_fails_whatever_its_rule() -> None:
    g = evaluate_gate(Gate("retrieval", "mrr", "min", 0.1, 100, {}, "", "clearly_below"), retrieval(SPREAD))
    assert not g.passed and "needs at least 100" in g.reason


def test_every_gate_row_has_its_detectable_drop_or_why_not() -> None:
    g = evaluate_gate(Gate("retrieval", "mrr", "min", 0.1, 1), retrieval(SPREAD))
    assert 0 < g.evidence["mde"] < 1 and "cannot see a drop smaller than" in g.evidence["mde_note"]
    one = evaluate_gate(Gate("retrieval", "mrr", "min", 0.1, 1), retrieval({"a": 0.5}))
    assert "mde" not in one.evidence and "at least 2" in one.evidence["mde_note"]


# --------------------------------------------------------------------------- paired regression gates


def run_of(values: dict[str, float]) -> dict[str, Any]:
    return results(retrieval(values))


def test_a_real_drop_is_caught_by_the_paired_test_and_noise_is_not() -> None:
    base = {f"q{i:02d}": 0.8 for i in range(60)}
    dropped = {k: (0.6 if i % 2 else 0.7) for i, k in enumerate(base)}  # every case falls 0.1-0.2
    noisy = {k: 0.8 + (0.02 if i % 2 else -0.02) for i, k in enumerate(base)}
    rules = parse_thresholds({"regression": {"retrieval.mrr": {"max_drop": 0.02, "alpha": 0.05}}}, "t.toml")
    (caught,) = evaluate_regression(rules, run_of(dropped), run_of(base))
    (calm,) = evaluate_regression(rules, run_of(noisy), run_of(base))
    assert not caught.passed and caught.evidence["p_value"] <= 0.05 and caught.evidence["paired_n"] == 60
    assert caught.evidence["diff"] == pytest.approx(0.15) and "more than max_drop 0.02 at alpha 0.05" in caught.reason
    assert calm.passed and calm.evidence["p_value"] > 0.05
    assert "paired-bootstrap" in caught.line() and "Holm p=" in caught.line()


def test_no_new_failures_with_alpha_is_exact_mcnemar() -> None:
    base = {f"q{i:02d}": 1.0 for i in range(30)}
    now = {**base, "q00": 0.0, "q01": 0.0}  # b = 2, c = 0: p = 1/4, not significant
    rules = parse_thresholds({"regression": {"no_new_failures": {"alpha": 0.05}}}, "t.toml")
    (g,) = evaluate_regression(rules, run_of(now), run_of(base))
    assert (g.evidence["b"], g.evidence["c"], g.evidence["p_value"]) == (2, 0, mcnemar_exact(2, 0)) == (2, 0, 0.25)
    assert g.passed and g.evidence["test"] == "mcnemar-exact"
    plain = parse_thresholds({"regression": {"no_new_failures": True}}, "t.toml")
    assert not evaluate_regression(plain, run_of(now), run_of(base))[0].passed  # without alpha: any new failure


def test_holm_is_applied_across_three_significance_tested_gates() -> None:
    base = {f"q{i:02d}": 0.8 for i in range(12)}
    now = {k: (0.7 if i < 9 else 0.8) for i, k in enumerate(base)}  # 9 of 12 fall 0.1: exact sign-flip p = 1/512
    rules = parse_thresholds(
        {
            "regression": {
                "retrieval.mrr": {"max_drop": 0.0, "alpha": 0.05},
                "retrieval.recall@5": {"max_drop": 0.0, "alpha": 0.05},
                "retrieval.pass_rate": {"max_drop": 0.0, "alpha": 0.05},
            }
        },
        "t.toml",
    )
    gates = evaluate_regression(rules, run_of(now), run_of(base))
    raw = {g.metric: g.evidence["p_value"] for g in gates}
    expected = holm(raw)
    for g in gates:
        assert g.evidence["holm"]["m"] == 3 and g.evidence["holm"]["p_adjusted"] == expected.adjusted[g.metric]
        assert "Holm–Bonferroni over 3 significance-tested regression gate(s)" in g.evidence["holm"]["sentence"]
        assert g.passed == (not expected.rejected[g.metric])


def test_items_on_one_side_only_are_listed_and_left_out() -> None:
    base = {f"q{i:02d}": 0.8 for i in range(10)}
    now = {**{k: 0.8 for k in list(base)[2:]}, "new1": 0.1}
    rules = parse_thresholds({"regression": {"retrieval.mrr": {"max_drop": 0.02, "alpha": 0.05}}}, "t.toml")
    (g,) = evaluate_regression(rules, run_of(now), run_of(base))
    assert g.evidence["one_sided"] == ["retrieval::new1", "retrieval::q00", "retrieval::q01"]
    assert g.evidence["paired_n"] == 8 and g.passed
    assert "3 on one side only, left out" in g.line()
    check_results({**run_of(now), "gates": [g.to_dict()]})


def test_a_bad_alpha_is_refused_at_load() -> None:
    with pytest.raises(ThresholdsError, match=r"alpha must be a significance level in \(0, 0.5\)"):
        parse_thresholds({"regression": {"retrieval.mrr": {"max_drop": 0.02, "alpha": 5}}}, "t.toml")


# --------------------------------------------------------------------------- power


def test_power_answers_how_many_items_are_needed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_of(SPREAD)
    answer = power_answer(doc, "mrr", 0.03)
    sd = answer.sd
    assert answer.needed == int(-(-(((1.6448536269514722 + 0.8416212335729143) * sd / 0.03) ** 2) // 1))
    assert answer.n == 40 and answer.mde_now > 0.03
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["power", str(path), "--metric", "mrr", "--drop", "0.03"]) == 0
    out = capsys.readouterr().out
    assert f"{answer.needed} items" in out and "with 40 items the smallest detectable drop is" in out
    assert main(["power", str(path), "--metric", "nope", "--drop", "0.03"]) == 2
    assert "'nope' is not in this results file" in capsys.readouterr().err
    with pytest.raises(PowerError, match="--drop 3 must be a drop between 0 and 1"):
        power_answer(doc, "mrr", 3)


def test_a_version_2_file_is_refused_with_the_migration_message() -> None:
    from rag_eval.results.file import ResultsVersionError, check_version

    with pytest.raises(ResultsVersionError) as info:
        check_version(2, "main.json")
    message = str(info.value)
    assert message.startswith("main.json: results file version 2, this rag_eval reads version 3")
    assert "every metric its interval" in message and "refused as a baseline too" in message
