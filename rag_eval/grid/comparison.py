"""The comparison of a grid's configurations (a results kind of its own, with a schema).

Per configuration × stage: recall@k, precision@k and the irrelevant share of the top k
over positive cases; the false-retrieval rate over negatives; latency (the gate's per-case
time and, where the system reports them, per-stage times) as p50/p95; tokens where answers
were generated. Each configuration is tested against the reference with the gate's own
paired tests (``stats.paired.regression_test``: exact sign-flip up to 20 pairs, paired
bootstrap above), both ways: ``p_worse`` is exactly what a ``[regression]`` gate with
``max_drop = 0`` against the reference as baseline computes, ``p_better`` the same with
roles swapped, ``p_value`` = min(1, 2·min(p_worse, p_better)) is two-sided, and Holm runs
over every configuration × metric. ``mde`` is the smallest difference each comparison
could detect (80 % power, from its paired differences).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.gates.paired_gates import per_case
from rag_eval.grid.losses import counts, losses
from rag_eval.grid.measures import (
    FALSE_RETRIEVAL,
    case_metric,
    case_ms,
    irrelevant_share,
    percentiles,
    retrieval_cases,
    stage_ms,
    stage_names,
    stored,
    tokens,
)
from rag_eval.grid.spec import Configuration
from rag_eval.stats.bootstrap import bootstrap_mean
from rag_eval.stats.paired import holm, regression_test
from rag_eval.stats.power import mde_paired_continuous

COMPARISON_VERSION = 1
ALPHA = 0.05
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Run:
    """One configuration's finished results (merged over its shards)."""

    config: Configuration
    path: Path
    results: Mapping[str, Any]

    @functools.cached_property
    def cases(self) -> list[Mapping[str, Any]]:
        """The run's retrieval cases (``measures.retrieval_cases``), derived once per run."""
        return retrieval_cases(self.results)


def metric_keys(k: int) -> list[tuple[str, bool]]:
    """The tested metrics (name, higher is better), final stage."""
    return [
        (f"retrieval.recall@{k}", True),
        (f"retrieval.precision@{k}", True),
        (f"retrieval.irrelevant@{k}", False),
        ("retrieval.pass_rate", True),
        (f"retrieval.{FALSE_RETRIEVAL}", False),
    ]


def values(run: Run, metric: str, k: int) -> dict[str, float]:
    """Per-case values of a tested metric: the gate's own ``per_case`` where the gate has
    the metric (errored cases at their worst value), the irrelevant share computed here."""
    if metric == f"retrieval.irrelevant@{k}":
        stages = stage_names(run.cases)
        return irrelevant_share(run.cases, stages[-1], k) if stages else {}
    return per_case(run.results, metric)


def estimate(results: Mapping[str, Any], key: str, units: Mapping[str, float]) -> dict[str, Any]:
    """value, n and interval: the gate's own (metrics_n) where it has the metric, else a
    bootstrap over cases; no cases: value None and a note."""
    row = stored(results, key)
    if row is not None:
        out = {"value": row["value"], "n": row.get("n"), "ci": row.get("ci")}
        return out if out["ci"] is not None else {**out, "ci_note": row.get("ci_note")}
    if not units:
        return {"value": None, "n": 0, "ci": None, "ci_note": "no case measured it"}
    est = bootstrap_mean(dict(units), CONFIDENCE)
    ci = [est.low, est.high] if est.low is not None and est.high is not None else None
    return {"value": est.estimate, "n": est.n, "ci": ci, **({} if ci else {"ci_note": est.reason})}


def stage_rows(run: Run, k: int) -> list[dict[str, Any]]:
    results, cases = run.results, run.cases
    rows = []
    for stage in stage_names(cases):
        recall = case_metric(cases, f"{stage}.recall@{k}")
        precision = case_metric(cases, f"{stage}.precision@{k}")
        rows.append(
            {
                "stage": stage,
                "recall": estimate(results, f"retrieval.{stage}.recall@{k}", recall),
                "precision": estimate(results, f"retrieval.{stage}.precision@{k}", precision),
                "irrelevant": estimate(results, "", irrelevant_share(cases, stage, k)),
            }
        )
    return rows


def latency(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    per_stage = {s: percentiles(v) for s, v in stage_ms(cases).items()}
    out: dict[str, Any] = {"case_ms": percentiles(case_ms(cases)), "stage_ms": per_stage}
    if not per_stage:
        out["stage_ms_note"] = "the system reports no per-stage timings: per-stage latency is absent, not 0"
    return out


def entry(run: Run, k: int) -> dict[str, Any]:
    r = run.results
    system = (r.get("run") or {}).get("system") or {}
    negatives = case_metric(run.cases, FALSE_RETRIEVAL, negative=True)
    return {
        **run.config.to_dict(),
        "results": str(run.path),
        "verdict": r.get("verdict"),
        "cases": len(run.cases),
        "errors": sum(1 for c in run.cases if c.get("outcome") == "error"),
        "warnings": list((r.get("run") or {}).get("warnings") or []),
        "index_built": system.get("index_built"),
        "stages": stage_rows(run, k),
        "false_retrieval": estimate(r, f"retrieval.{FALSE_RETRIEVAL}", negatives),
        "latency": latency(run.cases),
        "tokens": tokens(r),
    }


def paired(a: Mapping[str, float], b: Mapping[str, float], higher: bool) -> dict[str, Any]:
    """B against A on the cases both have: B − A with its interval, both one-sided p, the MDE."""
    worse = regression_test(a, b, 0.0, ALPHA, higher, confidence=CONFIDENCE)
    better = regression_test(b, a, 0.0, ALPHA, higher, confidence=CONFIDENCE)
    est = worse.bootstrap.interval  # the drop: A − B (higher is better) or B − A (lower)
    sign = -1.0 if higher else 1.0
    out: dict[str, Any] = {
        "paired_n": est.n,
        "diff": None if est.estimate is None else sign * est.estimate,
        "p_worse": worse.p_value,
        "p_better": better.p_value,
        "p_value": min(1.0, 2.0 * min(worse.p_value, better.p_value)),
        "test": worse.method.replace("_", "-"),
    }
    if est.low is not None and est.high is not None:
        out["diff_ci"] = sorted([sign * est.low, sign * est.high])
    if est.se is not None and est.n >= 2 and est.se > 0:
        out["mde"] = mde_paired_continuous(est.n, est.se * math.sqrt(est.n), ALPHA).drop
    else:
        out["mde_note"] = f"{est.reason or 'no paired cases'}: the detectable difference is unknown"
    shared = sorted(set(a) & set(b))
    ahead = [c for c in shared if (b[c] > a[c]) == higher and b[c] != a[c]]
    behind = [c for c in shared if (b[c] < a[c]) == higher and b[c] != a[c]]
    out.update(wins=len(ahead), losses=len(behind), ties=len(shared) - len(ahead) - len(behind))
    out.update(win_cases=ahead[:20], loss_cases=behind[:20])
    return out


def tests(reference: Run, others: Sequence[Run], k: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = []
    for run in others:
        for metric, higher in metric_keys(k):
            a, b = values(reference, metric, k), values(run, metric, k)
            rows.append({"configuration": run.config.name, "metric": metric, **paired(a, b, higher)})
    key = [f"{r['configuration']} :: {r['metric']}" for r in rows]
    if not rows:
        return rows, {"m": 0, "alpha": ALPHA}
    result = holm({name: float(r["p_value"]) for name, r in zip(key, rows)}, ALPHA)
    for name, r in zip(key, rows):
        r.update(p_adjusted=result.adjusted[name], different=result.rejected[name])
    return rows, {"m": len(rows), "alpha": ALPHA, "sentence": result.sentence}


def pareto(entries: Sequence[Mapping[str, Any]], k: int) -> list[str]:
    """Names of the configurations no other beats on both final recall@k (higher) and case
    p50 latency (lower); a configuration missing either value is left out of the front."""
    points = []
    for e in entries:
        recall = e["stages"][-1]["recall"]["value"] if e["stages"] else None
        ms = (e["latency"]["case_ms"] or {}).get("p50")
        if recall is not None and ms is not None:
            points.append((e["name"], float(recall), float(ms)))
    front = []
    for name, q, t in points:
        beaten = any((q2 >= q and t2 <= t) and (q2 > q or t2 < t) for _, q2, t2 in points)
        if not beaten:
            front.append(name)
    return front


def compare(
    runs: Sequence[Run], reference: Configuration, k: int, split: str, problems: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The comparison dict (``comparison.schema.json``) of the finished runs."""
    ref = next((r for r in runs if r.config.name == reference.name), None)
    entries = [entry(r, k) for r in runs]
    others = [r for r in runs if ref is None or r.config.name != ref.config.name]
    rows, holm_info = tests(ref, others, k) if ref is not None else ([], {"m": 0, "alpha": ALPHA})
    lost = {r.config.name: losses(ref.cases, r.cases) for r in others} if ref is not None else {}
    return {
        "version": COMPARISON_VERSION,
        "kind": "rag_eval.grid.comparison",
        "split": split,
        "k": k,
        "reference": reference.name,
        "reference_missing": ref is None,
        "configurations": entries,
        "tests": rows,
        "holm": holm_info,
        "losses": {name: [x.to_dict() for x in found] for name, found in lost.items()},
        "loss_counts": {name: counts(found) for name, found in lost.items()},
        "pareto": pareto(entries, k),
        "problems": dict(problems or {}),
    }
