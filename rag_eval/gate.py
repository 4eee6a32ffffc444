"""Evaluate every gate of thresholds.toml over the per-case results of a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from rag_eval.aggregate import metric_value, select, worst_value
from rag_eval.dialogue import pooled as dialogue_rates
from rag_eval.results import CaseResult
from rag_eval.thresholds import RATE_KEYS, Gate, Thresholds

WORST_SHOWN = 3


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    value: float | None
    n: int
    errors: int
    passed: bool
    reason: str
    worst: tuple[str, ...]
    numerator: float | None = None  # dialogue rates: the sums the value is the ratio of
    denominator: int | None = None

    def to_dict(self) -> dict[str, Any]:
        ratio = {} if self.denominator is None else {"numerator": self.numerator, "denominator": self.denominator}
        return {
            **ratio,
            "metric": self.gate.label,
            "tier": self.gate.tier,
            "key": self.gate.metric,
            "tags": dict(self.gate.tags),
            "op": self.gate.op,
            "threshold": self.gate.threshold,
            "value": self.value,
            "n": self.n,
            "errors": self.errors,
            "min_cases": self.gate.min_cases,
            "passed": self.passed,
            "reason": self.reason,
            "worst_cases": list(self.worst),
        }

    def line(self) -> str:
        """One terminal line: metric, value, threshold, n, verdict and the worst cases."""
        value = "n/a" if self.value is None else f"{self.value:.4f}"
        sign = ">=" if self.gate.op == "min" else "<="
        verdict = "PASS" if self.passed else "FAIL"
        err = ""
        plural = "s" if self.errors != 1 else ""
        if self.denominator is not None:
            err = f", {self.numerator:g}/{self.denominator}" + (
                f", {self.errors} not finished (left out; see error_rate)" if self.errors else "")
        elif self.errors and self.gate.metric in RATE_KEYS:
            err = f", {self.errors} error{plural}"
        elif self.errors:
            err = f", incl. {self.errors} error{plural} counted as {worst_value(self.gate.metric):g}"
        tail = f"  worst: {', '.join(self.worst)}" if self.worst and not self.passed else ""
        why = f" ({self.reason})" if self.reason and not self.passed else ""
        return f"{verdict} {self.gate.label} = {value} (need {sign} {self.gate.threshold:g}; n={self.n}{err}){why}{tail}"


def evaluate_gates(thresholds: Thresholds, cases: Sequence[CaseResult], active_tiers: set[str]) -> list[GateResult]:
    """Gates of tiers that ran. A gate over fewer than ``min_cases`` cases fails."""
    return [evaluate_gate(g, cases) for g in thresholds.gates if g.tier in active_tiers]


def evaluate_gate(gate: Gate, cases: Sequence[CaseResult]) -> GateResult:
    """One gate over the cases in its scope.

    The value is ``aggregate.metric_value``'s, the same number the results file shows:
    errors count as the metric's worst value, rate gates count them in their ``n``.
    """
    scoped = select(cases, gate.tier, gate.tags)
    mv = metric_value(scoped, gate.metric)
    worst = _worst(gate, scoped)
    value, n, errors = mv.value, mv.n, mv.errors
    ratio = (mv.numerator, mv.denominator)
    if value is None or n == 0:
        return GateResult(gate, None, n, errors, False, "no cases measured: a gate over 0 cases fails", worst, *ratio)
    if n < gate.min_cases:
        return GateResult(gate, value, n, errors, False, f"only {n} cases, the gate needs at least {gate.min_cases}", worst,
                          *ratio)
    ok = value >= gate.threshold if gate.op == "min" else value <= gate.threshold
    return GateResult(gate, value, n, errors, ok, "", worst, *ratio)


def _worst(gate: Gate, cases: Sequence[CaseResult]) -> tuple[str, ...]:
    """The cases that pull the metric the wrong way: errors first, then the lowest (or highest)."""
    if gate.metric in ("pass_rate", "fail_count"):
        bad = [c for c in cases if c.outcome in ("error", "fail")]
        bad.sort(key=lambda c: (c.outcome != "error", c.id))
        return tuple(c.id for c in bad[:WORST_SHOWN])
    if gate.metric == "error_rate":
        return tuple(c.id for c in cases if c.outcome == "error")[:WORST_SHOWN]
    if dialogue_rates.is_rate(gate.metric) and gate.tier == dialogue_rates.TIER:
        return tuple(c.id for c in dialogue_rates.pulling(cases, gate.metric, gate.op))[:WORST_SHOWN]
    errors = [c.id for c in cases if c.outcome == "error"]
    measured = [c for c in cases if gate.metric in c.metrics]
    sign = 1 if gate.op == "min" else -1
    measured.sort(key=lambda c: (sign * float(c.metrics[gate.metric]), c.id))
    limit = gate.threshold
    pulling = [
        c.id for c in measured if (float(c.metrics[gate.metric]) < limit if gate.op == "min" else float(c.metrics[gate.metric]) > limit)
    ]
    return tuple((errors + pulling)[:WORST_SHOWN])


def verdict(results: Sequence[GateResult]) -> bool:
    return all(r.passed for r in results)
