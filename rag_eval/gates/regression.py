"""The [regression] gates: this run against a baseline run (usually main's).

Fixed floors let quality slide down to the floor one pull request at a time; these
gates fail a change that makes things worse than the baseline, even above the floor:
a case that passed there must not fail here (``no_new_failures``), and a metric may
fall at most ``max_drop`` below the baseline's value. Without a baseline they are not
evaluated (an empty list); the caller says so. With an ``alpha`` a gate fails only on a
change that is significant by a paired test over the cases on both sides
(``paired_gates``), Holm–Bonferroni-adjusted over every such gate of the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from rag_eval.core.case import case_key
from rag_eval.gates import paired_gates
from rag_eval.gates.aggregate import lower_is_better, metric_of
from rag_eval.gates.result import NO_NEW_FAILURES, GateResult
from rag_eval.gates.result import REGRESSION_TIER as TIER
from rag_eval.gates.thresholds import MaxDrop, Thresholds
from rag_eval.gates.transitions import case_transitions
from rag_eval.gates.uncertainty import DEFAULT_CONFIDENCE

# Means of the same cases can differ in the last bits (sum order); a drop of 1e-12 is
# no regression, and ``max_drop = 0.0`` must not flap on it.
EPSILON = 1e-9


def evaluate_regression(
    thresholds: Thresholds, current_results: Mapping[str, Any], baseline: Mapping[str, Any] | None
) -> list[GateResult]:
    """The [regression] gates of ``thresholds`` over two results dicts.

    ``baseline`` is the loaded baseline results file (``baseline.load_baseline``), already
    checked with ``baseline.check_compatible``. A max_drop gate on a tier that did not
    run now (e.g. ``-m retrieval`` and a deterministic gate) is not evaluated, as the
    tier's own gates are not.
    """
    rules = thresholds.regression
    if baseline is None or not rules:
        return []
    out: list[GateResult] = []
    if rules.no_new_failures:
        out.append(no_new_failures(current_results, baseline, rules.no_new_failures_alpha))
    active = _active_tiers(current_results)
    out.extend(
        max_drop(rule, current_results, baseline, thresholds.confidence)
        for rule in rules.max_drops
        if rule.metric.split(".")[0] in active
    )
    return paired_gates.apply_holm(out)


def no_new_failures(current: Mapping[str, Any], baseline: Mapping[str, Any], alpha: float | None = None) -> GateResult:
    """Cases that passed on the baseline and fail or error now; n = baseline passes that ran now.

    With ``alpha``: fails only when b (pass→fail) exceeds c (fail→pass) significantly
    (exact one-sided McNemar p ≤ alpha, Holm-adjusted by the caller)."""
    if alpha is not None:
        return _tested_no_new_failures(no_new_failures(current, baseline), current, baseline, alpha)
    newly = case_transitions(current, baseline)["pass_to_fail"]
    now = {case_key(c): c["outcome"] for c in current["cases"]}
    n = sum(1 for c in baseline["cases"] if c["outcome"] == "pass" and now.get(case_key(c)) not in (None, "skip"))
    errors = sum(1 for t in newly if t["now"] == "error")
    keys = tuple(t["key"] for t in newly)
    if n == 0:
        return GateResult.regression(
            f"{TIER}.{NO_NEW_FAILURES}",
            NO_NEW_FAILURES,
            "max",
            0.0,
            float(len(keys)),
            0,
            errors,
            False,
            "no case that passed on the baseline ran now: a gate over 0 cases fails",
            keys,
        )
    cases = (
        "1 case that passed on the baseline fails"
        if len(keys) == 1
        else f"{len(keys)} cases that passed on the baseline fail"
    )
    reason = f"{cases} now"
    return GateResult.regression(
        f"{TIER}.{NO_NEW_FAILURES}",
        NO_NEW_FAILURES,
        "max",
        0.0,
        float(len(keys)),
        n,
        errors,
        not keys,
        reason if keys else "",
        keys,
    )


def _tested_no_new_failures(
    plain: GateResult, current: Mapping[str, Any], baseline: Mapping[str, Any], alpha: float
) -> GateResult:
    evidence = paired_gates.mcnemar_evidence(current, baseline, alpha)
    if plain.n == 0:
        return dataclasses.replace(plain, evidence=evidence)
    significant = evidence["p_value"] <= alpha
    reason = (
        ""
        if not significant
        else (
            f"{plain.reason}: b={evidence['b']} pass→fail against c={evidence['c']} fail→pass, "
            f"exact McNemar p={evidence['p_value']:.3g} <= alpha {alpha:g}"
        )
    )
    return dataclasses.replace(plain, passed=not significant, reason=reason, evidence=evidence)


def max_drop(
    rule: MaxDrop, current: Mapping[str, Any], baseline: Mapping[str, Any], confidence: float = DEFAULT_CONFIDENCE
) -> GateResult:
    """``value >= baseline - max_drop``; for a lower-is-better metric (error_rate, …),
    ``value <= baseline + max_drop``: a drop means getting worse either way.

    With ``rule.alpha``: fails only when the paired drop over the cases on both sides is
    larger than max_drop at significance alpha (``paired_gates.drop_evidence``)."""
    label = f"{TIER}.max_drop {rule.metric}"
    now, then = metric_of(current, rule.metric), metric_of(baseline, rule.metric)
    value, n, errors = now.value, now.n, now.errors
    base, base_n = then.value, then.n
    lower_better = lower_is_better(*_key_and_tier(rule.metric))
    op = "max" if lower_better else "min"

    evidence = paired_gates.drop_evidence(current, baseline, rule.metric, rule.max_drop, rule.alpha, confidence)

    def result(threshold: float | None, passed: bool, reason: str) -> GateResult:
        return GateResult.regression(
            label,
            rule.metric,
            op,
            threshold,
            value,
            n,
            errors,
            passed,
            reason,
            (),
            base,
            base_n,
            rule.max_drop,
            evidence,
        )

    if base is None:
        return result(
            None,
            False,
            f"the baseline did not measure {rule.metric} (its run did not run that tier or metric); "
            "regenerate the baseline on main with the same tiers",
        )
    bound = base + rule.max_drop if lower_better else base - rule.max_drop
    if value is None or n == 0:
        return result(bound, False, f"{rule.metric} was not measured in this run: a gate over 0 cases fails")
    worse = value - base if lower_better else base - value
    if rule.alpha is not None:
        return _tested_drop(result(bound, True, ""), worse, base, base_n)
    passed = value <= bound + EPSILON if lower_better else value >= bound - EPSILON
    reason = (
        ""
        if passed
        else (
            f"{'rose' if lower_better else 'fell'} {worse:.4f} from the baseline's {base:.4f} (n={base_n}), "
            f"more than max_drop {rule.max_drop:g}"
        )
    )
    return result(bound, passed, reason)


def _tested_drop(row: GateResult, worse: float, base: float, base_n: int) -> GateResult:
    """A max_drop gate with alpha: the paired test decides (Holm follows in ``apply_holm``)."""
    e = row.evidence
    if e.get("paired_n", 0) == 0:
        return dataclasses.replace(row, passed=False, reason="no case was measured on both sides: nothing to compare")
    significant = e["p_value"] <= e["alpha"]
    reason = (
        ""
        if not significant
        else (
            f"{'rose' if row.op == 'max' else 'fell'} {worse:.4f} from the baseline's {base:.4f} (n={base_n}); "
            f"the paired drop {e['diff']:.4f} over {e['paired_n']} cases is more than max_drop {row.max_drop:g} "
            f"at alpha {e['alpha']:g} (p={e['p_value']:.3g})"
        )
    )
    return dataclasses.replace(row, passed=not significant, reason=reason)


def _active_tiers(results: Mapping[str, Any]) -> set[str]:
    """Tiers that ran: a tier that only skipped did not (as in the plugin)."""
    return {c["tier"] for c in results["cases"] if c["outcome"] != "skip"}


def _key_and_tier(metric: str) -> tuple[str, str]:
    """``"<tier>.<key>"`` → (key, tier), as ``aggregate.lower_is_better`` takes them."""
    tier, key = metric.split(".", 1)
    return key, tier
