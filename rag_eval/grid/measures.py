"""What the comparison reads out of one configuration's results file, per case.

Pure functions over a results dict (``load_results``' validated shape) or over its
retrieval cases (``retrieval_cases``, derived once per run: ``comparison.Run.cases``).
Positive cases (with gold) for recall, precision and the irrelevant share; negative
cases (no gold) for the false-retrieval rate. A value that a case cannot give (an errored
case without ranked lists, an empty top-K) is absent from its mapping, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rag_eval.core.case import case_key

FALSE_RETRIEVAL = "negative.any_above_threshold"
Cases = Sequence[Mapping[str, Any]]  # one run's retrieval cases, as ``retrieval_cases`` returns them


def stored(results: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The gate's own row of ``key`` (``metrics_n``: value, n, ci or ci_note) when it has a
    value; None when the gate did not measure it (the caller computes it from the cases)."""
    row = (results.get("metrics_n") or {}).get(key)
    return row if isinstance(row, Mapping) and row.get("value") is not None else None


def ranked_tier(results: Mapping[str, Any]) -> str | None:
    """The tier whose cases carry the system's ranked list per stage (``details.stage_levels``),
    read from the data: the comparison names no tier."""
    for c in results.get("cases", []):
        if (c.get("details") or {}).get("stage_levels"):
            return str(c["tier"])
    return None


def retrieval_cases(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """That tier's cases (errored ones included: they count), skipped ones left out: what
    every reader below takes, derived once per run."""
    tier = ranked_tier(results)
    return [c for c in results.get("cases", []) if c.get("tier") == tier and c.get("outcome") != "skip"]


def stage_names(cases: Cases) -> list[str]:
    """The system's stages in its own order (levels flattened), from the first case that has them."""
    for c in cases:
        levels = (c.get("details") or {}).get("stage_levels")
        if levels:
            return [s for level in levels for s in level]
    return []


def gold_chunks(case: Mapping[str, Any]) -> set[str]:
    gold = (case.get("details") or {}).get("gold") or {}
    return {cid for requirement in gold.get("chunks") or [] for cid in requirement}


def case_metric(cases: Cases, key: str, negative: bool = False) -> dict[str, float]:
    """``key`` of each retrieval case that measured it (positives, or negatives with ``negative``)."""
    out: dict[str, float] = {}
    for c in cases:
        if bool(c.get("negative")) != negative:
            continue
        value = (c.get("metrics") or {}).get(key)
        if value is not None:
            out[case_key(c)] = float(value)
    return out


def irrelevant_share(cases: Cases, stage: str, k: int) -> dict[str, float]:
    """Per positive case: of the first ``k`` items ``stage`` returned, the share that is not gold.

    = |top_k \\ gold| / |top_k|, over the items that came back (absent when none did)."""
    out: dict[str, float] = {}
    for c in cases:
        if c.get("negative"):
            continue
        ranked = ((c.get("details") or {}).get("stages") or {}).get(stage)
        gold = gold_chunks(c)
        if not ranked or not gold:
            continue
        top = [entry[0] if isinstance(entry, list) else entry for entry in ranked[:k]]
        out[case_key(c)] = sum(1 for cid in top if cid not in gold) / len(top)
    return out


def case_ms(cases: Cases) -> list[float]:
    """Each retrieval case's wall time as the gate measured it, in milliseconds."""
    return [float(c["duration"]) * 1000.0 for c in cases if c.get("duration") is not None]


def stage_ms(cases: Cases) -> dict[str, list[float]]:
    """Per stage, the times the system reported (``details.stage_ms``); empty when it reports none."""
    out: dict[str, list[float]] = {}
    for c in cases:
        for stage, ms in ((c.get("details") or {}).get("stage_ms") or {}).items():
            if ms is not None:
                out.setdefault(stage, []).append(float(ms))
    return out


def percentiles(values: Iterable[float]) -> dict[str, Any] | None:
    """p50 and p95 (numpy's linear interpolation) with n; None for no values (absent, not 0)."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        return None
    p50, p95 = np.percentile(arr, [50, 95])
    return {"p50": float(p50), "p95": float(p95), "n": int(arr.size)}


def tokens(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """Prompt and completion tokens over every tier of the run, and ``cost_usd`` where the
    run priced its calls; None when nothing was counted (absent, not 0)."""
    usage = [u for u in ((results.get("run") or {}).get("usage") or {}).values() if isinstance(u, Mapping)]
    prompt = sum(int(u.get("prompt_tokens") or 0) for u in usage)
    completion = sum(int(u.get("completion_tokens") or 0) for u in usage)
    if not prompt and not completion:
        return None
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    priced = [float(u["cost_usd"]) for u in usage if u.get("cost_usd") is not None]
    if priced:
        out["cost_usd"] = sum(priced)
    return out
