"""Where configuration B loses what reference A keeps: per case, the stage and the cause.

A case is lost when its retrieval case passes under A and fails (or errors) under B. Its
cause, from B's case against A's, first that applies:

- ``error``: B's case errored (the system or the gate failed; its message says why);
- ``not in the corpus``: B has no gold chunk for the case (its gold could not be mapped
  onto B's chunks, or B's system does not hold it);
- ``cut by chunking``: B's gold differs from A's (another chunking) and some requirement
  needs more chunks under B (the evidence was split across chunks);
- ``filtered by threshold``: B lost it at its score-thresholded stage, which returned fewer
  items than A's did there (a threshold cut the list short);
- ``cut at context``: B lost it only at its last stage (the context budget);
- ``ranked low``: any other loss (retrieved too low, or dropped at fusion or reranking).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval.core.case import case_key
from rag_eval.grid.measures import Cases

CAUSES = ("error", "not in the corpus", "cut by chunking", "filtered by threshold", "cut at context", "ranked low")


@dataclass(frozen=True)
class Loss:
    case: str
    stage: str | None  # B's failed stage, as the gate named it
    cause: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "stage": self.stage, "cause": self.cause, "message": self.message}


def losses(reference: Cases, other: Cases) -> list[Loss]:
    """Retrieval cases (``measures.retrieval_cases``) that pass in ``reference`` and fail
    or error in ``other``, in case order."""
    kept = {case_key(c): c for c in reference if c.get("outcome") == "pass"}
    out = []
    for b in other:
        a = kept.get(case_key(b))
        if a is None or b.get("outcome") == "pass":
            continue
        out.append(Loss(case_key(b), b.get("failed_stage"), cause(a, b), str(b.get("message") or "")))
    return out


def cause(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    if b.get("outcome") == "error":
        return "error"
    da, db = a.get("details") or {}, b.get("details") or {}
    gold_a, gold_b = (da.get("gold") or {}).get("chunks") or [], (db.get("gold") or {}).get("chunks") or []
    if not any(gold_b):
        return "not in the corpus"
    if gold_a != gold_b and any(len(rb) > len(ra) for ra, rb in zip(gold_a, gold_b)):
        return "cut by chunking"
    stage = str(b.get("failed_stage") or "")
    levels = db.get("stage_levels") or []
    thresholded = db.get("thresholded_stage")
    lists_a, lists_b = da.get("stages") or {}, db.get("stages") or {}
    first = set(levels[0]) if levels else set()
    named = set(stage.split("+"))
    cut_short = [
        s
        for s in named & first
        if (thresholded is None or s == thresholded) and len(lists_b.get(s) or []) < len(lists_a.get(s) or [])
    ]
    if cut_short:
        return "filtered by threshold"
    if levels and stage in levels[-1]:
        return "cut at context"
    return "ranked low"


def counts(found: list[Loss]) -> dict[str, int]:
    """Losses per cause, every cause listed (0 is a count here, not a missing value)."""
    return {c: sum(1 for x in found if x.cause == c) for c in CAUSES}
