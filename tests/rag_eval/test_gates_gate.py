"""Gates: a gate over 0 cases fails, too few cases fail, min/max hold at the boundary,
errors are never passes, and a failing gate names the cases that pulled it down."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from rag_eval.core.case import CaseResult
from rag_eval.gates.gate import (
    CASES_RUN,
    WORST_SHOWN,
    evaluate_gate,
    evaluate_gates,
    pulling_down,
    run_gates,
    unmeasured_gates,
    verdict,
)
from rag_eval.gates.result import GateResult
from rag_eval.gates.thresholds import Gate, parse_thresholds
from tests.rag_eval._typed import typed


def gate(
    metric: str,
    op: str = "min",
    threshold: float = 0.5,
    min_cases: int = 1,
    tier: str = "retrieval",
    tags: Mapping[str, str] | None = None,
) -> Gate:
    return Gate(tier, metric, op, threshold, min_cases, dict(tags or {}))


def case(cid: str, outcome: str = "pass", tier: str = "retrieval", **kw: Any) -> CaseResult:
    return CaseResult(id=cid, tier=tier, outcome=outcome, **kw)  # type: ignore[arg-type]


def measured(values: Mapping[str, float], key: str = "recall@5") -> list[CaseResult]:
    return [case(cid, metrics={key: v}) for cid, v in values.items()]


# --------------------------------------------------------------------------- n


def test_a_gate_over_zero_cases_fails() -> None:
    r = evaluate_gate(gate("recall@5"), [])
    assert (r.passed, r.value, r.n, r.errors) == (False, None, 0, 0)
    assert "a gate over 0 cases fails" in r.reason


def test_a_gate_over_zero_cases_fails_even_for_a_max_gate_and_rates() -> None:
    for g in (gate("error_rate", "max", 0.0), gate("pass_rate", "min", 0.0), gate("fail_count", "max", 5)):
        r = evaluate_gate(g, [case("other-tier", tier="deterministic")])
        assert not r.passed and r.n == 0, g


def test_a_metric_nobody_measured_fails_the_gate() -> None:
    r = evaluate_gate(gate("ndcg@10"), measured({"a": 1.0, "b": 1.0}))
    assert not r.passed and r.n == 0 and "0 cases" in r.reason


def test_below_min_cases_fails_with_the_numbers() -> None:
    r = evaluate_gate(gate("recall@5", threshold=0.5, min_cases=5), measured({"a": 1.0, "b": 1.0, "c": 1.0}))
    assert not r.passed
    assert r.value == 1.0 and r.n == 3
    assert r.reason == "only 3 cases, the gate needs at least 5"


def test_exactly_min_cases_is_enough() -> None:
    r = evaluate_gate(gate("recall@5", threshold=0.5, min_cases=3), measured({"a": 1.0, "b": 1.0, "c": 1.0}))
    assert r.passed and r.reason == ""


# --------------------------------------------------------------------------- min / max


@pytest.mark.parametrize(
    ("op", "threshold", "passed"),
    [
        ("min", 0.5, True),  # value 0.5 >= 0.5
        ("min", 0.5000001, False),
        ("max", 0.5, True),  # value 0.5 <= 0.5
        ("max", 0.4999999, False),
    ],
)
def test_min_and_max_at_the_boundary(op: str, threshold: float, passed: bool) -> None:
    r = evaluate_gate(gate("recall@5", op, threshold), measured({"a": 1.0, "b": 0.0}))
    assert r.value == (1.0 + 0.0) / 2
    assert r.passed is passed


# --------------------------------------------------------------------------- errors


def test_errors_count_in_pass_rate() -> None:
    cases = [case("a"), case("b"), case("c", "error"), case("d", "fail")]
    r = evaluate_gate(gate("pass_rate", threshold=0.5), cases)
    assert (r.value, r.n, r.errors, r.passed) == (2 / 4, 4, 1, True)
    r = evaluate_gate(gate("pass_rate", threshold=0.75), cases)
    assert not r.passed


def test_error_rate_gate() -> None:
    cases = [case("a"), case("b", "error"), case("c", "error"), case("d", "fail")]
    r = evaluate_gate(gate("error_rate", "max", 0.0), cases)
    assert (r.value, r.n, r.errors, r.passed) == (2 / 4, 4, 2, False)
    assert r.worst == ("b", "c")


def test_an_error_counts_as_the_worst_value_never_dropped_from_the_denominator() -> None:
    cases = measured({"a": 1.0, "b": 0.5}) + [case("c", "error")]
    r = evaluate_gate(gate("recall@5", threshold=0.7), cases)
    # dropping c would give (1.0 + 0.5) / 2 = 0.75 and pass: the score would rise as things break
    assert (r.value, r.n, r.errors, r.passed) == ((1.0 + 0.5 + 0.0) / 3, 3, 1, False)


def test_for_a_max_gate_an_error_counts_as_1() -> None:
    cases = measured({"a": 0.0, "b": 0.0}, key="negative.any_above_threshold")
    cases = [dataclasses.replace(c, negative=True) for c in cases] + [
        dataclasses.replace(case("c", "error"), negative=True)
    ]
    r = evaluate_gate(gate("negative.any_above_threshold", "max", 0.5), cases)
    assert (r.value, r.n, r.errors, r.passed) == ((0.0 + 0.0 + 1.0) / 3, 3, 1, True)


def test_a_positive_error_does_not_count_against_a_negative_metric() -> None:
    cases = [dataclasses.replace(c, negative=True) for c in measured({"a": 0.0}, key="negative.any_above_threshold")]
    r = evaluate_gate(gate("negative.any_above_threshold", "max", 0.0), cases + [case("p", "error")])
    assert (r.value, r.n, r.errors, r.passed) == (0.0, 1, 0, True)


def test_skip_outcomes_are_out_of_scope() -> None:
    cases = [case("a"), case("s1", "skip"), case("s2", "skip", metrics={"recall@5": 0.0})]
    assert evaluate_gate(gate("pass_rate", threshold=1.0), cases).n == 1
    assert evaluate_gate(gate("pass_rate", threshold=1.0), cases).passed
    r = evaluate_gate(gate("recall@5", threshold=0.5), cases)
    assert r.n == 0 and not r.passed


# --------------------------------------------------------------------------- worst cases


def test_worst_for_a_min_gate_errors_first_then_lowest_below_threshold() -> None:
    cases = measured({"a": 0.9, "b": 0.1, "c": 0.3, "d": 0.6}) + [case("e", "error")]
    r = evaluate_gate(gate("recall@5", threshold=0.5), cases)
    # (0.9 + 0.1 + 0.3 + 0.6 + 0 for the error) / 5 = 0.38 < 0.5
    assert r.value == pytest.approx(0.38) and not r.passed
    assert r.worst == ("e", "b", "c")  # d (0.6) and a (0.9) do not pull below 0.5


def test_worst_for_a_max_gate_is_the_highest_above_threshold() -> None:
    cases = measured({"a": 0.0, "b": 1.0, "c": 0.0, "d": 1.0}, key="negative.any_above_threshold")
    r = evaluate_gate(gate("negative.any_above_threshold", "max", 0.25), cases)
    assert r.value == 2 / 4 and not r.passed
    assert r.worst == ("b", "d")


def test_worst_is_capped_and_ties_go_by_id() -> None:
    cases = measured({"z": 0.0, "y": 0.0, "x": 0.0, "w": 0.0, "v": 1.0})
    r = evaluate_gate(gate("recall@5", threshold=0.5), cases)
    assert len(r.worst) == WORST_SHOWN == 3
    assert r.worst == ("w", "x", "y")


def test_worst_for_pass_rate_is_errors_then_fails() -> None:
    cases = [case("f2", "fail"), case("p"), case("e1", "error"), case("f1", "fail"), case("e2", "error")]
    r = evaluate_gate(gate("pass_rate", threshold=0.9), cases)
    assert r.worst == ("e1", "e2", "f1")


def test_pulling_down_is_the_full_ordered_list_behind_worst() -> None:
    cases = measured({"z": 0.0, "y": 0.2, "x": 0.0, "w": 0.4, "v": 1.0}) + [case("e", "error")]
    g = gate("recall@5", threshold=0.5)
    assert pulling_down(g, cases) == tuple(f"retrieval::{i}" for i in ("e", "x", "z", "y", "w"))
    assert evaluate_gate(g, cases).worst == ("e", "x", "z")


def test_an_error_a_metric_would_not_have_measured_does_not_pull_it() -> None:
    # a retrieval negative measures only negative.*: its error is not counted in recall@5
    cases = measured({"a": 0.0}) + [case("neg", "error", negative=True), case("pos", "error")]
    r = evaluate_gate(gate("recall@5", threshold=0.5), cases)
    assert r.errors == 1 and r.worst == ("pos", "a")
    assert pulling_down(gate("negative.empty_context"), cases)[:1] == ("retrieval::neg",)


def test_measured_only_cases_never_pull_pass_rate_down() -> None:
    only = {"measured_only": True}
    cases = [case("m1", details=only), case("m2", "fail", details=only), case("f", "fail"), case("p")]
    r = evaluate_gate(gate("pass_rate", threshold=0.9), cases)
    assert r.value == 0.5 and r.n == 2  # m1 and m2 were never judged
    assert pulling_down(gate("pass_rate", threshold=0.9), cases) == ("retrieval::f",)


def test_rate_and_count_gates() -> None:
    cases = [case("f", "fail"), case("e", "error"), case("p"), case("s", "skip")]
    assert pulling_down(gate("error_rate", "max", 0.0), cases) == ("retrieval::e",)
    assert pulling_down(gate("fail_count", "max", 0), cases) == ("retrieval::e", "retrieval::f")
    flaky = [
        case("a", tier="passk", metrics={"flaky": 1.0}),
        case("b", tier="passk", metrics={"flaky": 0.0}),
        case("c", "error", tier="passk"),
    ]
    assert pulling_down(gate("flaky_count", "max", 0, tier="passk"), flaky) == ("passk::c", "passk::a")


# --------------------------------------------------------------------------- scope


def test_tag_scoping() -> None:
    cases = [
        case("n1", tier="deterministic", tags={"scenario": "negative"}, metrics={"check.expected_action": 1.0}),
        case("n2", "fail", tier="deterministic", tags={"scenario": "negative"}, metrics={"check.expected_action": 0.0}),
        case("s1", "fail", tier="deterministic", tags={"scenario": "standard"}, metrics={"check.expected_action": 0.0}),
    ]
    g = gate("check.expected_action", threshold=0.5, tier="deterministic", tags={"scenario": "negative"})
    r = evaluate_gate(g, cases)
    assert (r.value, r.n, r.passed) == ((1.0 + 0.0) / 2, 2, True)
    assert evaluate_gate(gate("check.expected_action", threshold=0.5, tier="deterministic"), cases).value == 1 / 3


def test_evaluate_gates_only_for_active_tiers_and_verdict() -> None:
    t = parse_thresholds({"retrieval": {"pass_rate": 0.5}, "deterministic": {"pass_rate": 0.5}}, "thresholds.toml")
    cases = [case("a"), case("b", "fail")]
    results = evaluate_gates(t, cases, {"retrieval"})
    assert [r.tier for r in results] == ["retrieval"]
    assert verdict(results) is True
    both = evaluate_gates(t, cases, {"retrieval", "deterministic"})
    assert [r.passed for r in both] == [True, False]  # no deterministic cases: 0 cases fails
    assert verdict(both) is False
    assert verdict([]) is True


# --------------------------------------------------------------------------- rendering


def test_line_of_a_failing_gate() -> None:
    cases = measured({"a": 1.0, "b": 0.0, "c": 0.25}) + [case("d", "error")]
    r = evaluate_gate(gate("recall@5", threshold=0.8), cases)
    # (1.0 + 0.0 + 0.25 + 0 for the error) / 4 = 0.3125
    assert r.line() == (
        "FAIL retrieval.recall@5 = 0.3125 [0.00, 0.75] (need >= 0.8; n=4, incl. 1 error counted as 0)  worst: d, b, c"
    )


def test_line_of_a_passing_gate_has_no_worst_list() -> None:
    r = evaluate_gate(gate("error_rate", "max", 0.0), [case("a"), case("b", "fail")])
    # 0 of 2: the Wilson interval still reaches 0.66 (two cases say little)
    assert r.line() == "PASS retrieval.error_rate = 0.0000 [0.00, 0.66] (need <= 0; n=2)"


def test_line_with_reason_and_tags() -> None:
    g = gate("pass_rate", threshold=1.0, min_cases=5, tier="deterministic", tags={"scenario": "negative"})
    r = evaluate_gate(g, [case("n1", "fail", tier="deterministic", tags={"scenario": "negative"})])
    assert r.line() == (
        "FAIL deterministic.pass_rate [scenario=negative] = 0.0000 [0.00, 0.79] (need >= 1; n=1)"
        " (only 1 cases, the gate needs at least 5)  worst: n1"
    )
    none = evaluate_gate(gate("mrr"), [])
    assert none.line() == "FAIL retrieval.mrr = n/a (need >= 0.5; n=0) (no cases measured: a gate over 0 cases fails)"


def test_to_dict_is_json_primitives() -> None:
    import json

    r = evaluate_gate(gate("recall@5", threshold=0.8, min_cases=2, tags={"topic": "set"}), measured({"a": 0.5}))
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d == {
        "metric": "retrieval.recall@5 [topic=set]",
        "tier": "retrieval",
        "key": "recall@5",
        "tags": {"topic": "set"},
        "op": "min",
        "threshold": 0.8,
        "value": None,
        "n": 0,
        "errors": 0,
        "min_cases": 2,
        "passed": False,
        "reason": "no cases measured: a gate over 0 cases fails",
        "worst_cases": [],
        "confidence": 0.95,
        "ci_note": "n=0: no case measured it",
        "ci_method": "bootstrap",
        "decide": "estimate",
        "decision": "no estimate (n=0: no case measured it): nothing to compare with 0.80 → fail",
        "mde_note": "n=0: a detectable drop needs at least 2 units",
    }
    assert isinstance(r, GateResult)


# --------------------------------------------------------------------------- one rule


def test_terminal_report_and_markdown_name_the_same_cases_in_the_same_order() -> None:
    import re

    from rag_eval.outputs.markdown import escape, render_markdown
    from rag_eval.outputs.view import build_view
    from tests.rag_eval._results import case as full_case
    from tests.rag_eval._results import results

    only = {"measured_only": True}
    cases = [
        *(full_case(f"p{i}", metrics={"recall@5": 1.0}, tags={"lang": "zh"}) for i in range(3)),
        full_case("low", "fail", metrics={"recall@5": 0.2}, tags={"lang": "en"}),
        full_case("lower", "fail", metrics={"recall@5": 0.0}, tags={"lang": "zh"}),
        full_case("mid", metrics={"recall@5": 0.6}, tags={"lang": "en"}),
        full_case("boom", "error", tags={"lang": "en"}),
        full_case("neg-err", "error", negative=True),
        full_case("neg", negative=True, metrics={"negative.empty_context": 1.0}, details=only),
        full_case("d1", "fail", tier="deterministic"),
        full_case("d2", tier="deterministic"),
    ]
    thresholds: dict[str, Any] = {
        "retrieval": {
            "recall@5": {"min": 0.95},
            "pass_rate": {"min": 0.95},
            "error_rate": {"max": 0.0},
            "fail_count": {"max": 0},
        },
        "deterministic": {"pass_rate": {"min": 0.95}},
        "tag": {"lang=en": {"retrieval": {"recall@5": {"min": 0.95}}}},
    }
    run = results(cases, thresholds)  # the results file, as build_results writes it
    ordered = sorted(cases, key=lambda c: (c.tier, c.id))  # the plugin gates in this order
    terminal = {
        g.metric: g
        for g in evaluate_gates(
            parse_thresholds(thresholds, "thresholds.toml"), ordered, {"retrieval", "deterministic"}
        )
    }
    view = {g.gate.metric: g for g in build_view(typed(run)).gates}
    markdown = render_markdown(typed(run))
    sections = dict(re.findall(r"### Failing cases of (.+?)\n\n((?:- .*\n)+)", markdown))
    assert set(terminal) == set(view) and len(view) == 6 and all(not g.gate.passed for g in view.values())
    for label, row in view.items():
        listed = tuple(f"{t}::{i}" for t, i in re.findall(r"^- \*\*(\w+)\*\* `([^`]+)`", sections[escape(label)], re.M))
        assert listed == row.case_keys, label  # the summary: every case, the report's order
        line = terminal[label].line()
        shown = tuple(line.split("worst: ", 1)[1].split(", ")) if "worst: " in line else ()
        assert shown == tuple(k.split("::", 1)[1] for k in row.case_keys[:WORST_SHOWN]), (
            label
        )  # the terminal: the first three
    # the rule itself, on this run: errors first (only those the metric counts), then worst first
    assert view["retrieval.recall@5"].case_keys == (
        "retrieval::boom",
        "retrieval::lower",
        "retrieval::low",
        "retrieval::mid",
    )
    assert view["retrieval.pass_rate"].case_keys == (
        "retrieval::boom",
        "retrieval::neg-err",
        "retrieval::low",
        "retrieval::lower",
    )
    assert view["retrieval.error_rate"].case_keys == ("retrieval::boom", "retrieval::neg-err")
    assert view["retrieval.recall@5 [lang=en]"].case_keys == ("retrieval::boom", "retrieval::low", "retrieval::mid")
    assert "retrieval::neg" not in {
        k for g in view.values() for k in g.case_keys
    }  # measured only: never pulls pass_rate


# --------------------------------------------------------------------------- run_gates: outcomes that cannot hide


def test_a_tier_whose_every_case_skipped_fails_with_a_thresholds_file() -> None:
    t = parse_thresholds({"retrieval": {"recall@5": 0.5}, "judge": {"faithfulness": 0.9}}, "thresholds.toml")
    cases = [*measured({"a": 1.0, "b": 1.0}), case("a", "skip", tier="judge"), case("b", "skip", tier="judge")]
    gates = run_gates(t, cases)
    assert [(g.metric, g.passed) for g in gates] == [("retrieval.recall@5", True), (f"judge.{CASES_RUN}", False)]
    unmeasured = gates[1]
    assert (unmeasured.value, unmeasured.n, unmeasured.worst) == (0.0, 0, ("a", "b"))
    assert "all 2 selected cases were skipped" in unmeasured.reason and 'unmeasured = "pass"' in unmeasured.reason
    assert "FAIL judge.cases_run = 0.0000 (need >= 1; n=0)" in unmeasured.line()
    assert not verdict(gates)
    assert pulling_down(unmeasured.rule(), cases) == ("judge::a", "judge::b")


def test_unmeasured_pass_is_the_documented_opt_out() -> None:
    t = parse_thresholds({"defaults": {"unmeasured": "pass"}, "retrieval": {"recall@5": 0.5}}, "thresholds.toml")
    cases = [*measured({"a": 1.0}), case("a", "skip", tier="judge")]
    assert [g.metric for g in run_gates(t, cases)] == ["retrieval.recall@5"]
    assert verdict(run_gates(t, cases))


def test_a_tier_with_one_measured_case_is_not_unmeasured() -> None:
    t = parse_thresholds({"retrieval": {"recall@5": 0.5}}, "thresholds.toml")
    cases = [*measured({"a": 1.0}), case("a", "skip", tier="judge"), case("b", "pass", tier="judge")]
    assert unmeasured_gates(t, cases) == []


def test_without_thresholds_the_built_in_gates_are_error_rate_zero_and_one_case_run() -> None:
    cases = [*measured({"a": 1.0, "b": 0.0}), case("c", "error"), case("a", "skip", tier="judge")]
    gates = run_gates(None, cases)
    assert [(g.metric, g.op, g.threshold, g.passed) for g in gates] == [
        ("retrieval.error_rate", "max", 0.0, False),
        (f"judge.{CASES_RUN}", "min", 1.0, False),
    ]
    assert gates[0].value == pytest.approx(1 / 3) and gates[0].worst == ("c",)
    assert 'unmeasured = "pass"' not in gates[1].reason  # no file: nothing to set


def test_without_thresholds_a_clean_run_passes_and_every_error_fails() -> None:
    clean = measured({"a": 1.0, "b": 0.0})  # a failing case is not an error: the built-in gates pass
    assert verdict(run_gates(None, clean)) and [g.metric for g in run_gates(None, clean)] == ["retrieval.error_rate"]
    broken = [case("a", "error"), case("b", "error")]
    (only,) = run_gates(None, broken)
    assert (only.value, only.passed) == (1.0, False)


# --------------------------------------------------------------------------- tiers the file does not gate (issue 26.8)

ONLY_JUDGE = parse_thresholds({"judge": {"faithfulness": {"min": 0.5}}}, "thresholds.toml")


def test_a_file_that_gates_only_judge_cannot_turn_a_tier_that_errored_throughout_green() -> None:
    cases = [case(f"d{i}", "error", tier="deterministic") for i in range(4)]
    cases += [case(f"j{i}", tier="judge", metrics={"faithfulness": 1.0}) for i in range(2)]

    results = run_gates(ONLY_JUDGE, cases)

    builtin = [r for r in results if r.tier == "deterministic"]
    assert [(r.key, r.op, r.threshold) for r in builtin] == [("error_rate", "max", 0.0)]
    assert (builtin[0].value, builtin[0].n, builtin[0].errors, builtin[0].passed) == (1.0, 4, 4, False)
    assert 'ungated = "pass"' in builtin[0].reason and "built-in" in builtin[0].line()
    assert not verdict(results)


def test_a_tier_with_a_gate_of_its_own_gets_no_built_in_error_gate() -> None:
    cases = [case("j1", "error", tier="judge"), case("j2", tier="judge", metrics={"faithfulness": 1.0})]
    assert [r.metric for r in run_gates(ONLY_JUDGE, cases)] == ["judge.faithfulness"]


def test_a_tier_gated_only_per_tag_still_gets_the_built_in_error_gate() -> None:
    tagged = parse_thresholds({"tag": {"scenario=negative": {"retrieval": {"pass_rate": 0.0}}}}, "t.toml")
    cases = [case("a", "error"), case("b", tags={"scenario": "negative"})]
    labels = {r.metric: r.passed for r in run_gates(tagged, cases)}
    assert labels == {"retrieval.pass_rate [scenario=negative]": True, "retrieval.error_rate": False}


def test_ungated_pass_opts_out_and_a_clean_ungated_tier_passes() -> None:
    erroring = [case("d1", "error", tier="deterministic"), case("j1", tier="judge", metrics={"faithfulness": 1.0})]
    opted_out = parse_thresholds({"defaults": {"ungated": "pass"}, "judge": {"faithfulness": 0.5}}, "t.toml")
    assert [r.metric for r in run_gates(opted_out, erroring)] == ["judge.faithfulness"]
    clean = [case("d1", tier="deterministic"), case("j1", tier="judge", metrics={"faithfulness": 1.0})]
    results = run_gates(ONLY_JUDGE, clean)
    assert verdict(results) and {r.metric for r in results} == {"judge.faithfulness", "deterministic.error_rate"}


def test_a_tier_whose_cases_all_skipped_gets_cases_run_not_an_error_gate() -> None:
    results = run_gates(ONLY_JUDGE, [case("d1", "skip", tier="deterministic")])
    assert [(r.metric, r.passed) for r in results] == [("deterministic.cases_run", False)]


# --------------------------------------------------------------------------- terminal (issue 26.11)


def test_the_worst_list_escapes_control_bidi_and_nul_in_ids() -> None:
    hostile = ["\x1b]0;T\x07title", "rtl\u202egnp.exe", "nul\x00id"]
    r = evaluate_gate(gate("recall@5", threshold=0.9), measured({i: 0.0 for i in hostile}))
    line = r.line()
    assert not r.passed and "worst:" in line
    assert not any(ch in line for ch in ("\x1b", "\x07", "\u202e", "\x00")), repr(line)
    assert "\\x1b]0;T\\x07title" in line and "rtl\\u202egnp.exe" in line and "nul\\x00id" in line
    assert r.worst == tuple(sorted(hostile))  # the results file keeps the ids as they are


# --------------------------------------------------------------------------- why unmeasured


def test_a_gate_on_a_stage_the_system_never_returned_names_the_stages_it_did() -> None:
    """Undeclared stages: a typo'd stage is not ``n/a (n=0)`` but names what came back."""
    stages = {"stages": {"dense": [], "sparse": [], "final": []}}
    cases = [case(c, metrics={"dense.recall@10": 1.0}, details=stages) for c in ("a", "b")]
    r = evaluate_gate(gate("vectorz.recall@10"), cases)
    assert not r.passed and r.value is None
    assert r.reason == (
        "no case returned stage 'vectorz': the system's stages are dense, final, sparse "
        "(name one of them in the gate, or declare the system's stages)"
    )


def test_an_unmeasurable_pass_at_k_says_the_runs_k() -> None:
    cases = [
        case(c, tier="passk", metrics={"pass@3": 1.0, "pass^3": 1.0}, details={"k": 3, "n": 5}) for c in ("a", "b")
    ]
    r = evaluate_gate(gate("pass@7", tier="passk"), cases)
    assert not r.passed and r.value is None
    assert r.reason == (
        "pass@7 is not measured: this run's k is 3 (set [passk.case] k = 7 or --rag-passk-k 7, "
        "with n >= 7 trials, or gate pass@3)"
    )
    assert evaluate_gate(gate("pass^3", tier="passk"), cases).passed


# --------------------------------------------------------------------------- estimate = "labels" | "ppi"


class _Labels:
    """A labels report as the gate sees it (rag_eval.gates.gate.LabelEstimates)."""

    def __init__(self, values: Mapping[tuple[str, str], tuple[float | None, int, str]]) -> None:
        self.values = values
        self.asked: list[tuple[str, str]] = []

    def estimate(self, metric: str, which: str) -> tuple[float | None, int, str]:
        self.asked.append((metric, which))
        return self.values.get((metric, which), (None, 0, f"no human label for {metric}"))


def _judged(value: float, n: int = 4) -> list[CaseResult]:
    return [case(f"j{i}", tier="judge", metrics={"faithfulness": value}) for i in range(n)]


def test_a_ppi_gate_takes_the_corrected_value_not_the_judges() -> None:
    ppi = dataclasses.replace(gate("faithfulness", threshold=0.75, tier="judge"), estimate="ppi")
    labels = _Labels({("judge.faithfulness", "ppi"): (0.7, 60, "")})
    r = evaluate_gate(ppi, _judged(0.9), labels)
    assert (r.passed, r.value, r.n, r.metric) == (False, 0.7, 60, "judge.faithfulness (ppi estimate)")
    assert labels.asked == [("judge.faithfulness", "ppi")]
    assert evaluate_gate(dataclasses.replace(ppi, estimate="judge"), _judged(0.9), labels).passed  # the judge's own 0.9


def test_a_corrected_gate_without_labels_fails_saying_so() -> None:
    ppi = dataclasses.replace(gate("faithfulness", threshold=0.5, tier="judge"), estimate="labels")
    r = evaluate_gate(ppi, _judged(1.0))
    assert not r.passed and r.value is None and "needs human labels: give --rag-human-labels" in r.reason
    r = evaluate_gate(ppi, _judged(1.0), _Labels({}))
    assert not r.passed and r.value is None and r.reason == "no human label for judge.faithfulness"


def test_a_corrected_gate_over_too_few_labels_fails() -> None:
    ppi = dataclasses.replace(gate("faithfulness", threshold=0.5, min_cases=30, tier="judge"), estimate="ppi")
    r = evaluate_gate(ppi, _judged(1.0), _Labels({("judge.faithfulness", "ppi"): (0.9, 12, "")}))
    assert not r.passed and r.reason == "only 12 cases, the gate needs at least 30"
