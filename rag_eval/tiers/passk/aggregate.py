"""The passk tier over a run: PASS@k and PASS^k over the dialogues its dialogue cases replayed
(METRICS.md of the project's steering docs), the results file's ``dialogue_rates.passk`` table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.dialogue.pooled import RATES_KEY

TABLE = "passk"  # its key under dialogue_rates


def dialogue_trials(cases: Sequence[CaseResult], tier: str) -> dict[str, Any]:
    """``{"dialogue_rates": {"passk": {"pass@k": ..., "pass^k": ...}}}``: dialogues with at least
    one (every) passing replay ÷ dialogues with k finished replays; dialogues whose replays did
    not all finish are listed apart, not in the denominator. Absent without dialogue cases."""
    scoped = [c for c in cases if c.tier == tier and c.details.get("dialogue") and c.outcome != "skip"]
    out: dict[str, dict[str, Any]] = {}
    for k in sorted({int(c.details.get("k") or 0) for c in scoped} - {0}):
        at_k = [c for c in scoped if int(c.details.get("k") or 0) == k]
        done = [c for c in at_k if f"pass@{k}" in c.metrics]
        apart = {"not_finished": sorted(c.id for c in at_k if c not in done)}
        for name in (f"pass@{k}", f"pass^{k}"):
            numerator = sum(float(c.metrics[name]) for c in done)
            out[name] = {
                "value": numerator / len(done) if done else None,
                "numerator": numerator,
                "denominator": len(done),
                "n": len(done),
                "dialogues": len(at_k),
                "excluded": {r: ids for r, ids in apart.items() if ids},
            }
    return {RATES_KEY: {TABLE: out}} if out else {}
