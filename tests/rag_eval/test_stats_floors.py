"""Floor decision rules (rag_eval.stats.floors): estimate / clearly_below / clearly_above for min and
max floors, each with the sentence a reader sees."""

from __future__ import annotations

import pytest

from rag_eval.stats.floors import decide_floor
from rag_eval.stats.interval import Interval, no_interval


def _iv(estimate: float, low: float, high: float) -> Interval:
    return Interval(estimate=estimate, se=(high - low) / 3.92, low=low, high=high, n=83, confidence=0.95, method="t")


NOISY = _iv(0.74, 0.66, 0.82)  # the issue's example, min 0.76


@pytest.mark.parametrize(
    "rule,passed,sentence",
    [
        ("estimate", False, "0.74 [0.66, 0.82]: 0.74 < 0.76 → fail"),
        ("clearly_below", True, "0.74 [0.66, 0.82]: not clearly below 0.76 → pass"),
        ("clearly_above", False, "0.74 [0.66, 0.82]: not clearly above 0.76 → fail"),
    ],
)
def test_min_floor_rules_on_the_issue_example(rule: str, passed: bool, sentence: str) -> None:
    got = decide_floor(NOISY, 0.76, "min", rule)  # type: ignore[arg-type]
    assert (got.passed, got.sentence, got.rule, got.kind) == (passed, sentence, rule, "min")


@pytest.mark.parametrize(
    "interval,rule,passed",
    [
        (_iv(0.70, 0.65, 0.75), "clearly_below", False),  # hi 0.75 < 0.76: clearly below
        (_iv(0.80, 0.76, 0.84), "clearly_above", True),  # lo 0.76 >= 0.76: clearly above
        (_iv(0.80, 0.75, 0.84), "clearly_above", False),
        (_iv(0.76, 0.70, 0.82), "estimate", True),  # value >= min passes
    ],
)
def test_min_floor_boundaries(interval: Interval, rule: str, passed: bool) -> None:
    assert decide_floor(interval, 0.76, "min", rule).passed is passed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "interval,rule,passed,sentence",
    [
        (_iv(0.12, 0.08, 0.16), "estimate", False, "0.12 [0.08, 0.16]: 0.12 > 0.10 → fail"),
        (_iv(0.12, 0.08, 0.16), "clearly_below", True, "0.12 [0.08, 0.16]: not clearly above the max 0.10 → pass"),
        (_iv(0.14, 0.11, 0.17), "clearly_below", False, "0.14 [0.11, 0.17]: clearly above the max 0.10 → fail"),
        (_iv(0.05, 0.02, 0.09), "clearly_above", True, "0.05 [0.02, 0.09]: clearly below the max 0.10 → pass"),
        (_iv(0.05, 0.02, 0.11), "clearly_above", False, "0.05 [0.02, 0.11]: not clearly below the max 0.10 → fail"),
    ],
)
def test_max_floor_mirrors(interval: Interval, rule: str, passed: bool, sentence: str) -> None:
    got = decide_floor(interval, 0.10, "max", rule)  # type: ignore[arg-type]
    assert (got.passed, got.sentence) == (passed, sentence)


def test_without_an_interval_the_rule_decides_on_the_estimate_and_says_so() -> None:
    flat = no_interval(
        0.8, 83, 0.95, "bootstrap", "every one of the 83 values equals 0.8: the spread is unknown, not zero"
    )
    got = decide_floor(flat, 0.76, "min", "clearly_above")
    assert got.passed and got.sentence == (
        "0.80 (no interval: every one of the 83 values equals 0.8: the spread is unknown, not zero): "
        "0.80 >= 0.76 (clearly_above needs an interval; decided on the estimate) → pass"
    )


def test_nothing_measured_never_passes() -> None:
    empty = no_interval(None, 0, 0.95, "wilson", "n=0: no units to count")
    for rule in ("estimate", "clearly_below", "clearly_above"):
        assert not decide_floor(empty, 0.5, "min", rule).passed  # type: ignore[arg-type]


def test_unknown_rule_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="use one of estimate, clearly_below, clearly_above"):
        decide_floor(NOISY, 0.76, "min", "lenient")  # type: ignore[arg-type]
