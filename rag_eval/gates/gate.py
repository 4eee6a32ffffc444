"""Evaluate every gate of thresholds.toml over the per-case results of a run."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.gates.aggregate import errors_for, is_measured_only, metric_value, select
from rag_eval.gates.evidence import tier_evidence
from rag_eval.gates.result import GateResult
from rag_eval.gates.thresholds import JUDGE_ONLY, Gate, Thresholds
from rag_eval.gates.uncertainty import DEFAULT_CONFIDENCE
from rag_eval.tiers.pooled import pulling

WORST_SHOWN = 3


# The built-in gate of a tier that was selected but measured nothing: its run cases must be >= 1.
CASES_RUN = "cases_run"


class LabelEstimates(Protocol):
    """The human-labels report of a run, as far as a gate with ``estimate = "labels" | "ppi"``
    needs it (``rag_eval.labels.compare.LabelReport``)."""

    def estimate(self, metric: str, which: str) -> tuple[float | None, int, str]:
        """(value, n, reason): the ``which`` estimate of ``metric`` ("judge.faithfulness"),
        its number of cases, and why there is none when the value is None."""
        ...


def run_gates(
    thresholds: Thresholds | None, cases: Sequence[CaseResult], labels: LabelEstimates | None = None
) -> list[GateResult]:
    """Every gate of a run: the thresholds file's (or the built-in ones), the built-in
    error gates of tiers the file does not gate, then the unmeasured-tier gates.

    A tier *ran* when one of its recorded cases did not skip; it was *selected* when it
    recorded any case. Without a thresholds file the built-in gates are ``error_rate``
    at most 0 for every tier that ran, and ``cases_run`` at least 1 for every selected
    tier. With one, a tier that ran and has no (untagged) gate of its own in the file
    gets the built-in ``error_rate`` gate too, so a file that gates only ``[judge]``
    cannot turn a deterministic tier that errored throughout green (``[defaults]
    ungated = "pass"`` opts out); a selected tier that ran nothing (every case skipped:
    a judge budget of 0, an exhausted budget) fails ``cases_run``, unless ``[defaults]
    unmeasured = "pass"``. A tier whose cases were never recorded (no judge configured,
    no dialogue call) is not selected: it is not gated.
    """
    ran = {c.tier for c in cases if c.outcome != "skip"}
    if thresholds is None:
        gates = [evaluate_gate(g, cases) for g in builtin_error_gates(None, ran)]
    else:
        level = thresholds.confidence
        builtin = [
            _said_builtin(evaluate_gate(g, cases, confidence=level)) for g in builtin_error_gates(thresholds, ran)
        ]
        gates = evaluate_gates(thresholds, cases, ran, labels) + builtin
    return gates + unmeasured_gates(thresholds, cases)


def builtin_error_gates(thresholds: Thresholds | None, ran: set[str]) -> list[Gate]:
    """``<tier>.error_rate <= 0`` for each tier that ran and that ``thresholds`` leaves
    ungated (every tier that ran, without a file)."""
    if thresholds is None:
        return [Gate(t, "error_rate", "max", 0.0, 1, {}, "built-in gate (no thresholds file)") for t in sorted(ran)]
    if thresholds.ungated == "pass":
        return []
    gated = {g.tier for g in thresholds.gates if not g.tags}
    where = (
        f"{thresholds.path}: built-in gate, the file has no gate for this tier "
        '([defaults] ungated = "pass" to allow it)'
    )
    return [Gate(t, "error_rate", "max", 0.0, 1, {}, where) for t in sorted(ran - gated)]


def _said_builtin(result: GateResult) -> GateResult:
    """A failed built-in error gate says where it comes from and how to opt out."""
    if result.passed or result.reason:
        return result
    why = 'built-in gate: the thresholds file has no gate for this tier; [defaults] ungated = "pass" allows its errors'
    return dataclasses.replace(result, reason=why)


def unmeasured_gates(thresholds: Thresholds | None, cases: Sequence[CaseResult]) -> list[GateResult]:
    """A failing ``<tier>.cases_run`` gate for each tier whose recorded cases all skipped."""
    if thresholds is not None and thresholds.unmeasured == "pass":
        return []
    out: list[GateResult] = []
    for tier in sorted({c.tier for c in cases}):
        of_tier = [c for c in cases if c.tier == tier]
        if any(c.outcome != "skip" for c in of_tier):
            continue
        where = (
            f"{thresholds.path} [defaults] unmeasured"
            if thresholds is not None
            else "built-in gate (no thresholds file)"
        )
        gate = Gate(tier, CASES_RUN, "min", 1.0, 0, {}, where)
        reason = f"all {len(of_tier)} selected cases were skipped, none measured" + (
            ' (set [defaults] unmeasured = "pass" to allow it)' if thresholds is not None else ""
        )
        worst = tuple(c.id for c in sorted(of_tier, key=lambda c: c.id)[:WORST_SHOWN])
        out.append(GateResult.of(gate, 0.0, 0, 0, False, reason, worst))
    return out


def evaluate_gates(
    thresholds: Thresholds, cases: Sequence[CaseResult], active_tiers: set[str], labels: LabelEstimates | None = None
) -> list[GateResult]:
    """Gates of tiers that ran. A gate over fewer than ``min_cases`` cases fails."""
    return [evaluate_gate(g, cases, labels, thresholds.confidence) for g in thresholds.gates if g.tier in active_tiers]


def evaluate_gate(
    gate: Gate,
    cases: Sequence[CaseResult],
    labels: LabelEstimates | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> GateResult:
    """One gate over the cases in its scope, decided by its rule (``gate.decide``).

    The value is ``aggregate.metric_value``'s, the same number the results file shows:
    errors count as the metric's worst value, rate gates count them in their ``n``.
    The interval is at ``confidence``; a gate over fewer than ``min_cases`` fails
    whatever its interval. A gate with ``estimate = "labels" | "ppi"`` takes that
    estimate of the human-labels report instead; without labels (or without a value) it
    fails, saying why.
    """
    scoped = select(cases, gate.tier, gate.tags)
    worst = _worst(gate, scoped)
    if gate.estimate != JUDGE_ONLY:
        return _corrected_gate(gate, labels, worst)
    mv = metric_value(scoped, gate.metric, confidence)
    value, n, errors = mv.value, mv.n, mv.errors
    ratio = (mv.numerator, mv.denominator)
    ok, evidence = tier_evidence(gate, mv, confidence)
    if value is None or n == 0:
        return GateResult.of(gate, None, n, errors, False, unmeasured_reason(gate, scoped), worst, *ratio, evidence)
    if n < gate.min_cases:
        return GateResult.of(
            gate,
            value,
            n,
            errors,
            False,
            f"only {n} cases, the gate needs at least {gate.min_cases}",
            worst,
            *ratio,
            evidence,
        )
    return GateResult.of(gate, value, n, errors, ok, "", worst, *ratio, evidence)


def _corrected_gate(gate: Gate, labels: LabelEstimates | None, worst: tuple[str, ...]) -> GateResult:
    """A gate on the labels-only or PPI++ estimate of ``gate.tier.gate.metric``."""
    if labels is None:
        reason = (
            f'estimate = "{gate.estimate}" needs human labels: give --rag-human-labels FILE '
            "(or ini rag_eval_human_labels), docs/human-labels.md"
        )
        return GateResult.of(gate, None, 0, 0, False, reason, worst)
    value, n, why = labels.estimate(f"{gate.tier}.{gate.metric}", gate.estimate)
    if value is None:
        return GateResult.of(gate, None, n, 0, False, why, worst)
    if n < gate.min_cases:
        return GateResult.of(
            gate, value, n, 0, False, f"only {n} cases, the gate needs at least {gate.min_cases}", worst
        )
    ok = value >= gate.threshold if gate.op == "min" else value <= gate.threshold
    return GateResult.of(gate, value, n, 0, ok, "", worst)


def unmeasured_reason(gate: Gate, scoped: Sequence[CaseResult]) -> str:
    """Why a gate has no value, in the words the user can act on: the tier's own reason
    (a stage the system never returned, a pass@k the run's k cannot give), or simply no
    case in scope."""
    tier = tiers.get(gate.tier) if gate.tier in tiers.names() else None
    reason = tier.unmeasured_reason(gate.metric, scoped) if tier is not None else None
    return reason or "no cases measured: a gate over 0 cases fails"


def _worst(gate: Gate, cases: Sequence[CaseResult]) -> tuple[str, ...]:
    """The golden ids of the first cases pulling the gate down (the terminal shows these)."""
    return tuple(key.split("::", 1)[1] for key in pulling_down(gate, cases)[:WORST_SHOWN])


def pulling_down(gate: Gate, cases: Sequence[CaseResult]) -> tuple[str, ...]:
    """Every case ("tier::id") in the gate's scope that pulls its value the wrong way,
    in the order shown: the one rule of the terminal, the HTML report and the Markdown
    summary (the terminal shows the first ``WORST_SHOWN``, the others all).

    The scope is the gate's (``aggregate.select``: its tier, its tags, skips left out).
    Errors come first, by id: those the gate's value counts (every error for a rate or
    count gate; for a metric, the errors that would have measured it, as
    ``aggregate.errors_for``). Then, by key:

    * pass_rate, fail_count: the failing cases; a case the tier only measured
      (``details.measured_only``) was never judged and never pulls pass_rate down;
    * error_rate, measured_count: nothing more;
    * flaky_count: the flaky cases;
    * a metric: every case on the wrong side of the threshold, worst first, ties by id.
    """
    scoped = select(cases, gate.tier, gate.tags)
    key = gate.metric
    tier = tiers.of(gate.tier)
    if tier.pools(key):
        # a run-level rate: the cases whose own share is on the wrong side (tiers.pooled)
        return tuple(c.key for c in pulling(scoped, key, gate.op, tier.contribution))
    if key == CASES_RUN:  # every case of the tier skipped: those are the cases to look at
        return tuple(c.key for c in sorted(cases, key=lambda c: c.id) if c.tier == gate.tier)
    if key in ("pass_rate", "fail_count"):
        scoped = [c for c in scoped if not is_measured_only(c)]
    by_id = sorted(scoped, key=lambda c: c.id)
    errors = [c for c in by_id if c.outcome == "error"]
    if key in ("pass_rate", "fail_count"):
        rest = [c for c in by_id if c.outcome == "fail"]
    elif key in ("error_rate", "measured_count"):
        rest = []
    elif key == "flaky_count":
        rest = [c for c in by_id if c.outcome != "error" and c.metrics.get("flaky")]
    else:
        errors = [c for c in errors if errors_for(key, [c])]
        low = gate.op == "min"
        rest = [
            c
            for c in by_id
            if c.outcome != "error"
            and key in c.metrics
            and (float(c.metrics[key]) < gate.threshold if low else float(c.metrics[key]) > gate.threshold)
        ]
        rest.sort(key=lambda c: float(c.metrics[key]) * (1 if low else -1))  # stable: ties stay by id
    return tuple(c.key for c in errors + rest)


def gate_of(row: Mapping[str, Any]) -> Gate:
    """The Gate behind a gate row of a results file (``GateResult.to_dict``)."""
    return Gate(
        tier=str(row["tier"]),
        metric=str(row["key"]),
        op=str(row["op"]),
        threshold=float(row["threshold"]),
        min_cases=int(row["min_cases"]),
        tags={str(k): str(v) for k, v in row["tags"].items()},
    )


def row_pulling_down(row: Mapping[str, Any], cases: Sequence[CaseResult]) -> tuple[str, ...]:
    """``pulling_down`` for a gate row of a results file. A gate of a tier without cases
    here (a regression gate) names its own cases (``worst_cases``, by key)."""
    if not any(c.tier == row.get("tier") for c in cases):
        return tuple(str(k) for k in row.get("worst_cases") or ())
    return pulling_down(gate_of(row), cases)


def verdict(results: Sequence[GateResult]) -> bool:
    return all(r.passed for r in results)
