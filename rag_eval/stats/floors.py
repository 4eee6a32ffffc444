"""Decision rules for a floor given a value with its interval: estimate, clearly_below, clearly_above.

For a ``min = m`` floor and interval [lo, hi] (STATISTICS.md of the project's steering docs, "Floors"):
- ``estimate``: pass iff value ≥ m (the point estimate decides, as before intervals);
- ``clearly_below`` (lenient): fail iff hi < m — a noisy metric fails only when the whole
  interval is on the wrong side;
- ``clearly_above`` (strict): pass iff lo ≥ m — a release gate that demands evidence.
A ``max = m`` floor mirrors them: estimate passes iff value ≤ m; the lenient rule fails iff
lo > m; the strict rule passes iff hi ≤ m. The rule names keep their meaning (lenient /
strict) for both kinds; the sentence words the side ("clearly above the max").
When the interval is absent (n < 2, every value equal) the two interval rules decide on
the estimate and the sentence says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rag_eval.stats.interval import Interval, fmt_interval

Rule = Literal["estimate", "clearly_below", "clearly_above"]
FloorKind = Literal["min", "max"]
RULES: tuple[Rule, ...] = ("estimate", "clearly_below", "clearly_above")


@dataclass(frozen=True)
class FloorDecision:
    """The verdict, the rule that gave it, and the sentence a reader sees."""

    passed: bool
    rule: Rule
    kind: FloorKind
    threshold: float
    sentence: str


def _verdict(passed: bool) -> str:
    return "pass" if passed else "fail"


def decide_floor(
    interval: Interval, threshold: float, kind: FloorKind = "min", rule: Rule = "estimate", digits: int = 2
) -> FloorDecision:
    """Apply ``rule`` to ``interval`` against a ``kind`` floor at ``threshold``.

    Example: 0.74 [0.66, 0.82], min 0.76, clearly_below → pass,
    "0.74 [0.66, 0.82]: not clearly below 0.76 → pass". An interval without an estimate
    (nothing was measured) fails under every rule: an absent value is never a pass.
    """
    if rule not in RULES:
        raise ValueError(f"decide={rule!r} is not a rule; use one of {', '.join(RULES)}")
    if kind not in ("min", "max"):
        raise ValueError(f"floor kind {kind!r} must be 'min' or 'max'")
    shown = fmt_interval(interval, digits)
    m = f"{threshold:.{digits}f}"
    value = interval.estimate
    if value is None:
        return FloorDecision(False, rule, kind, threshold, f"{shown}: nothing to compare with {m} → fail")
    ok_estimate = value >= threshold if kind == "min" else value <= threshold
    lo, hi = interval.low, interval.high
    if rule == "estimate" or lo is None or hi is None:
        sign = (">=" if ok_estimate else "<") if kind == "min" else ("<=" if ok_estimate else ">")
        note = "" if rule == "estimate" else f" ({rule} needs an interval; decided on the estimate)"
        sentence = f"{shown}: {value:.{digits}f} {sign} {m}{note} → {_verdict(ok_estimate)}"
        return FloorDecision(ok_estimate, rule, kind, threshold, sentence)
    wrong = "below" if kind == "min" else "above"
    right = "above" if kind == "min" else "below"
    target = m if kind == "min" else f"the max {m}"
    if rule == "clearly_below":
        clearly_wrong = hi < threshold if kind == "min" else lo > threshold
        passed = not clearly_wrong
        words = f"clearly {wrong} {target}" if clearly_wrong else f"not clearly {wrong} {target}"
    else:
        clearly_right = lo >= threshold if kind == "min" else hi <= threshold
        passed = clearly_right
        words = f"clearly {right} {target}" if clearly_right else f"not clearly {right} {target}"
    return FloorDecision(passed, rule, kind, threshold, f"{shown}: {words} → {_verdict(passed)}")
