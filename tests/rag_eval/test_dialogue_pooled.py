"""Dialogue rates over a run: sums of the dialogues' numerators over sums of their
denominators (written out here), never a mean of per-dialogue values; dialogues left out
are listed by reason; the worst dialogues of a gate; the results block. The pooling is the
tiers' (``rag_eval.tiers.pooled``) over the dialogue tier's contributions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.dialogue.pooled import is_rate, lower_is_better
from rag_eval.gates.aggregate import aggregate_tier, metric_value
from rag_eval.results.build import results_blocks
from rag_eval.tiers import pooled as pooling
from rag_eval.tiers.dialogue.aggregate import rate_names

DIALOGUE = tiers.get("dialogue")


def pooled(cases: Sequence[CaseResult], name: str) -> pooling.PooledRate:
    return pooling.pooled(cases, name, DIALOGUE.contribution)


def pulling(cases: Sequence[CaseResult], name: str, op: str) -> list[CaseResult]:
    return pooling.pulling(cases, name, op, DIALOGUE.contribution)


def case(cid: str, outcome: str = "pass", tier: str = "dialogue", **rates: Any) -> CaseResult:
    shares = {
        name: {"numerator": v[0], "denominator": v[1], "excluded": v[2] if len(v) > 2 else {}, "errors": []}
        for name, v in rates.items()
    }
    return CaseResult(cid, tier, outcome, details={"dialogue_rates": shares} if shares else {})  # type: ignore[arg-type]


CASES = [
    case("a", intent_accuracy=(5, 5), final_leak_rate=(0, 3)),
    case("b", "fail", intent_accuracy=(0, 1), final_leak_rate=(1, 1)),
    case(
        "c",
        intent_accuracy=(2, 2),
        final_leak_rate=(0, 0),
        clarification_failure_3=(0, 0, {"student_did_not_answer": ["c"]}),
    ),
    case(
        "d", "error", intent_accuracy=(0, 0, {"not_finished": ["d"]}), final_leak_rate=(0, 0, {"not_finished": ["d"]})
    ),
]


def test_a_rate_is_the_sum_of_numerators_over_the_sum_of_denominators() -> None:
    rate = pooled(CASES, "intent_accuracy")
    # (5 + 0 + 2) / (5 + 1 + 2) = 7/8, where the mean of the per-dialogue values would be (1 + 0 + 1) / 3
    assert (rate.numerator, rate.denominator, rate.value) == (7, 8, 7 / 8)
    assert (rate.n, rate.dialogues, rate.errors) == (3, 4, 1)  # d did not finish: left out, listed apart
    assert rate.excluded == {"not_finished": ("d",)}


def test_dialogues_listed_apart_are_neither_successes_nor_failures() -> None:
    rate = pooled(CASES, "clarification_failure_3")
    assert (rate.numerator, rate.denominator, rate.value, rate.n) == (0, 0, None, 0)  # absent, never 0
    assert rate.excluded == {"student_did_not_answer": ("c",), "not_finished": ("d",)}


def test_the_aggregate_and_the_gate_read_the_pooled_value_with_its_arithmetic() -> None:
    mv = metric_value(CASES, "final_leak_rate")
    assert (mv.value, mv.n, mv.errors, mv.numerator, mv.denominator) == (1 / 4, 2, 1, 1, 4)
    agg = aggregate_tier(CASES, "dialogue")
    row = agg["dialogue.final_leak_rate"].to_dict()
    assert {k: row[k] for k in ("value", "n", "errors", "numerator", "denominator")} == {
        "value": 0.25,
        "n": 2,
        "errors": 1,
        "numerator": 1,
        "denominator": 4,
    }
    assert row["ci_method"] == "ratio-bootstrap"  # dialogues resampled whole
    assert agg["dialogue.pass_rate"].value == 2 / 4 and agg["dialogue.error_rate"].value == 1 / 4


def test_the_worst_dialogues_are_errors_then_the_largest_share_on_the_bad_side() -> None:
    assert [c.id for c in pulling(CASES, "final_leak_rate", "max")] == ["d", "b"]
    assert [c.id for c in pulling(CASES, "intent_accuracy", "min")] == ["d", "b"]


def test_rate_names_carry_the_clarification_limit() -> None:
    assert is_rate("clarification_failure_4") and is_rate("past_2_rounds") and not is_rate("clarification_failure_0")
    assert (
        lower_is_better("past_4_rounds")
        and lower_is_better("final_leak_rate")
        and not lower_is_better("intent_accuracy")
    )
    assert DIALOGUE.lower_is_better("past_4_rounds") and DIALOGUE.pools("past_4_rounds")
    cases = [case("x", past_4_rounds=(0, 1), intent_accuracy=(1, 1), clarification_failure_4=(0, 1))]
    assert (
        rate_names(cases)
        == DIALOGUE.pooled_names(cases)
        == ["intent_accuracy", "clarification_failure_4", "past_4_rounds"]
    )


def test_the_results_block_holds_every_rate_and_passk_over_dialogues() -> None:
    passk = [
        CaseResult("p1", "passk", "pass", metrics={"pass@3": 1.0, "pass^3": 1.0}, details={"dialogue": True, "k": 3}),
        CaseResult("p2", "passk", "fail", metrics={"pass@3": 1.0, "pass^3": 0.0}, details={"dialogue": True, "k": 3}),
        CaseResult("p3", "passk", "error", details={"dialogue": True, "k": 3}),
        CaseResult("q-golden", "passk", "pass", metrics={"pass@3": 1.0, "pass^3": 1.0}, details={"k": 3}),
    ]
    block = results_blocks([*CASES, *passk])["dialogue_rates"]
    assert block["dialogue.intent_accuracy"]["numerator"] == 7 and block["dialogue.intent_accuracy"]["denominator"] == 8
    assert block["passk"]["pass@3"] == {
        "value": 1.0,
        "numerator": 2.0,
        "denominator": 2,
        "n": 2,
        "dialogues": 3,
        "excluded": {"not_finished": ["p3"]},
    }
    assert block["passk"]["pass^3"]["value"] == 0.5
    assert results_blocks([CaseResult("q", "retrieval", "pass")]) == {}
