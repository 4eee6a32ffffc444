"""The decision rules bench/gate_noise.py compares, each applied to two results dicts.

Every rule reads only what a results file holds (``rag_eval.results.build.build_results``): the
per-case ``outcome`` and per-case ``metrics`` of the retrieval tier, and ``metrics_n``.
- today's point-estimate regression gates: ``rag_eval.gates.regression.no_new_failures`` and
  ``rag_eval.gates.regression.max_drop`` (called, not copied);
- the paired tests of ``rag_eval.stats.paired``: exact McNemar on per-case pass/fail,
  the tolerance test of the mean drop (bootstrap and sign-flip) on per-case values, and
  Holm over the tested gates;
- the floor rules of ``rag_eval.stats.floors`` on one run: estimate / clearly_below /
  clearly_above, with the bootstrap interval of a mean over cases or Wilson for pass_rate.
A rule "fires" when the gate would fail the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_eval.gates.regression import max_drop, no_new_failures
from rag_eval.gates.thresholds import MaxDrop
from rag_eval.stats.bootstrap import bootstrap_mean
from rag_eval.stats.closed_form import wilson
from rag_eval.stats.floors import RULES, decide_floor
from rag_eval.stats.paired import compare_pass_fail, drops, holm, regression_test
from rag_eval.stats.power import mde_paired_binary, mde_paired_continuous

TODAY_MAX_DROP = 0.01
ALPHA = 0.05


def positives(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The retrieval cases that are judged (negatives are measured apart, never pass or fail)."""
    return [c for c in results["cases"] if c["tier"] == "retrieval" and not c["negative"]]


def passed_of(results: Mapping[str, Any]) -> dict[str, bool]:
    """Case id → passed, over the judged retrieval cases (an error is a failure)."""
    return {c["id"]: c["outcome"] == "pass" for c in positives(results)}


def values_of(results: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Case id → the case's value of ``metric`` (e.g. 'doc.recall@5'), where the case has one."""
    return {c["id"]: float(c["metrics"][metric]) for c in positives(results) if metric in c.get("metrics", {})}


def today_rules(baseline: Mapping[str, Any], current: Mapping[str, Any], metrics: Sequence[str]) -> dict[str, bool]:
    """Today's [regression] gates: no_new_failures and max_drop = 0.01 per metric; True = fails."""
    out = {"today.no_new_failures": not no_new_failures(current, baseline).passed}
    for m in metrics:
        rule = MaxDrop(metric=f"retrieval.{m}", max_drop=TODAY_MAX_DROP)
        out[f"today.max_drop {m}"] = not max_drop(rule, current, baseline).passed
    out["today.any"] = any(out.values())
    return out


def paired_rules(
    baseline: Mapping[str, Any], current: Mapping[str, Any], metrics: Sequence[str], tolerances: Sequence[float]
) -> tuple[dict[str, bool], dict[str, float]]:
    """McNemar on pass/fail; per tolerance δ and method (bootstrap, sign-flip) the test
    "mean drop > δ" per metric and Holm over the three gates (pass/fail + each metric);
    True = fails. Also the p-values."""
    pf = compare_pass_fail(passed_of(baseline), passed_of(current))
    fired = {"paired.mcnemar pass_rate": pf.p_value <= ALPHA}
    p = {"mcnemar": pf.p_value}
    for delta in tolerances:
        for method in ("bootstrap", "sign_flip"):
            family = {"pass_rate": pf.p_value}
            tag = f"{method} δ={delta:g}"
            for m in metrics:
                test = regression_test(values_of(baseline, m), values_of(current, m), delta, ALPHA, method=method)
                fired[f"paired.{tag} {m}"] = test.failed
                p[f"{tag} {m}"] = family[m] = test.p_value
            fired[f"paired.holm ({tag}, McNemar)"] = any(holm(family, ALPHA).rejected.values())
    return fired, p


def floors_of(calibration: Mapping[str, Any], metrics: Sequence[str]) -> dict[str, float]:
    """Floors one case below the calibration run's values (as thresholds.toml sets them)."""
    n = len(positives(calibration))
    out = {m: calibration["metrics_n"][f"retrieval.{m}"]["value"] - 1.0 / n for m in metrics}
    out["pass_rate"] = sum(passed_of(calibration).values()) / n - 1.0 / n
    return out


def floor_rules(current: Mapping[str, Any], floors: Mapping[str, float]) -> dict[str, bool]:
    """Each floor under each rule (estimate / clearly_below / clearly_above); True = fails."""
    out: dict[str, bool] = {}
    for m, floor in floors.items():
        if m == "pass_rate":
            passed = passed_of(current)
            interval = wilson(sum(passed.values()), len(passed))
        else:
            interval = bootstrap_mean(values_of(current, m))
        for rule in RULES:
            out[f"floor.{rule} {m}"] = not decide_floor(interval, floor, "min", rule).passed
    return out


def spread(baseline: Mapping[str, Any], current: Mapping[str, Any], metric: str) -> tuple[float, float]:
    """Of one pair: the sd of the per-case drops of ``metric`` and the pass/fail discordance (b + c)/n."""
    d, _ = drops(values_of(baseline, metric), values_of(current, metric))
    pf = compare_pass_fail(passed_of(baseline), passed_of(current))
    return float(np.std(list(d.values()), ddof=1)), (pf.b + pf.c) / pf.n


def detectable(n: int, sd: float, discordance: float) -> dict[str, float]:
    """The smallest drop the paired tests see with 80 % power at alpha = 0.05 (rag_eval.stats.power),
    from an unchanged pair's spread: the mean's test and McNemar's."""
    return {
        "mean_drop": mde_paired_continuous(n, sd, ALPHA).drop,
        "pass_rate_drop": mde_paired_binary(n, discordance, ALPHA).drop,
    }
