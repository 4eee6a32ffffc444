"""The paired tests behind the [regression] gates: the same cases on both sides.

- ``no_new_failures = { alpha = a }``: exact one-sided McNemar on b (pass→fail) against
  c (fail→pass) over the cases present on both sides; fails when p ≤ a (after Holm);
- ``"<tier>.<metric>" = { max_drop = δ, alpha = a }``: the per-case drop dᵢ (baseline −
  now; now − baseline when lower is better) tested against δ (``stats.paired.regression_test``:
  exact sign-flip up to 20 pairs, paired bootstrap above); fails when p ≤ a (after Holm);
- Holm–Bonferroni over every significance-tested regression gate of the run
  (``apply_holm``); each gate rejects when its adjusted p is at most its own alpha.

Cases present on one side only are listed (``one_sided``) and left out of the test,
never compared. A plain ``max_drop`` (no alpha) keeps its meaning; its row still shows
the paired difference with its interval, for reading.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult, case_key
from rag_eval.gates.aggregate import errors_for, lower_is_better, worst_value
from rag_eval.gates.result import GateResult
from rag_eval.stats.paired import Pairing, compare_pass_fail, holm, regression_test
from rag_eval.stats.power import Detectable, mde_paired_binary, mde_paired_continuous

DEFAULT_ALPHA = 0.05  # the level of a plain max_drop's interval and detectable drop (it is not tested)


def outcomes(results: Mapping[str, Any]) -> dict[str, bool]:
    """Per-case pass (True) or fail/error (False) by case key; skipped cases left out."""
    return {case_key(c): c["outcome"] == "pass" for c in results.get("cases", []) if c["outcome"] != "skip"}


def per_case(results: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Each case's value of ``<tier>.<key>`` by case key: an errored case that would have
    measured it at the metric's worst value, a run-level rate (``Tier.pools``) as the case's
    own share of it."""
    tier_name, key = metric.split(".", 1)
    tier = tiers.of(tier_name)
    out: dict[str, float] = {}
    for c in results.get("cases", []):
        if c["tier"] != tier_name or c["outcome"] == "skip":
            continue
        if key in ("pass_rate", "error_rate"):  # a case's own share: 1 or 0 (as aggregate.metric_value)
            if key == "error_rate" or not tier.measured_only(c.get("details") or {}):
                hit = c["outcome"] == ("pass" if key == "pass_rate" else "error")
                out[case_key(c)] = 1.0 if hit else 0.0
        elif c["outcome"] == "error" and errors_for(key, [CaseResult.from_dict(c)]):
            out[case_key(c)] = worst_value(key, tier_name)
        elif key in (c.get("metrics") or {}):
            out[case_key(c)] = float(c["metrics"][key])
        elif tier.pools(key):
            share = tier.contribution(CaseResult.from_dict(c), key)
            if share is not None and share.denominator > 0:
                out[case_key(c)] = share.numerator / share.denominator
    return out


def _one_sided(pairing: Pairing) -> list[str]:
    return sorted(pairing.only_baseline + pairing.only_current)


def _mde(seen: Detectable | str, tolerance: float | None) -> dict[str, Any]:
    if isinstance(seen, str):
        return {"mde_note": seen}
    return {"mde": seen.drop, "mde_note": seen.sentence(tolerance)}


def mcnemar_evidence(current: Mapping[str, Any], baseline: Mapping[str, Any], alpha: float) -> dict[str, Any]:
    """b, c, the paired n, the change in pass rate, the exact McNemar p and the detectable drop."""
    cmp = compare_pass_fail(outcomes(baseline), outcomes(current))
    q = (cmp.b + cmp.c) / cmp.n if cmp.n else 0.0
    seen: Detectable | str = (
        mde_paired_binary(cmp.n, q, alpha)
        if q > 0
        else (f"no case changed between the runs (b = c = 0 over {cmp.n}): the detectable drop is unknown")
    )
    return {
        "test": "mcnemar-exact",
        "diff": cmp.drop,
        "p_value": cmp.p_value,
        "alpha": alpha,
        "b": cmp.b,
        "c": cmp.c,
        "paired_n": cmp.n,
        "one_sided": _one_sided(cmp.pairing),
        **_mde(seen, None),
    }


def drop_evidence(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    metric: str,
    max_drop: float,
    alpha: float | None,
    confidence: float,
) -> dict[str, Any]:
    """The paired drop of ``metric`` with its interval; with ``alpha``, its test against ``max_drop``."""
    tier, key = metric.split(".", 1)
    higher = not lower_is_better(key, tier)
    test = regression_test(
        per_case(baseline, metric),
        per_case(current, metric),
        max_drop,
        alpha or DEFAULT_ALPHA,
        higher,
        confidence=confidence,
    )
    est = test.bootstrap.interval
    out: dict[str, Any] = {"diff": est.estimate, "paired_n": est.n, "one_sided": _one_sided(test.pairing)}
    if est.low is not None and est.high is not None:
        out["diff_ci"] = [est.low, est.high]
    if alpha is not None:
        out.update(
            test="sign-flip" if test.method == "sign_flip" else "paired-bootstrap", p_value=test.p_value, alpha=alpha
        )
    sd = est.se * math.sqrt(est.n) if est.se is not None else None
    seen: Detectable | str = (
        mde_paired_continuous(est.n, sd, alpha or DEFAULT_ALPHA)
        if sd and est.n >= 2
        else (f"{est.reason or 'no paired cases'}: the detectable drop is unknown")
    )
    return {**out, **_mde(seen, max_drop)}


def tested(g: GateResult) -> bool:
    return g.kind == "regression" and "p_value" in g.evidence and "alpha" in g.evidence


def apply_holm(gates: Sequence[GateResult]) -> list[GateResult]:
    """Holm–Bonferroni over the significance-tested regression gates, stated on each of them.

    A tested gate fails when its adjusted p is at most its alpha and its point estimate is
    on the wrong side (``passed`` False going in); the others are returned unchanged."""
    p_values = {g.metric: float(g.evidence["p_value"]) for g in gates if tested(g)}
    if not p_values:
        return list(gates)
    result = holm(p_values, max(float(g.evidence["alpha"]) for g in gates if tested(g)))
    m = len(p_values)
    out: list[GateResult] = []
    for g in gates:
        if not tested(g):
            out.append(g)
            continue
        adjusted = result.adjusted[g.metric]
        rejected = adjusted <= float(g.evidence["alpha"])
        sentence = (
            f"Holm–Bonferroni over {m} significance-tested regression gate(s): p {g.evidence['p_value']:.3g} "
            f"adjusts to {adjusted:.3g}, {'≤' if rejected else '>'} alpha {g.evidence['alpha']:g}"
        )
        evidence = {**g.evidence, "holm": {"m": m, "p_adjusted": adjusted, "rejected": rejected, "sentence": sentence}}
        passed = g.passed or not rejected
        reason = g.reason if not passed else ""
        out.append(dataclasses.replace(g, passed=passed, reason=reason, evidence=evidence))
    return out
