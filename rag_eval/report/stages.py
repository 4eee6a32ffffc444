"""Where a case failed: the stage names of the report, their pipeline order, and the
earliest failing stage of a golden item over its tiers.

One place for the order so that the HTML report's rows, counts and filters agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rag_eval.evaluate.retrieval import LOSS_STAGE

# Where a case can fail, earliest first. "vector" and "bm25" alone come from negative
# items (chunks above the similarity threshold); "vector+bm25" is gold that neither
# first-stage retriever found.
STAGE_ORDER: tuple[str, ...] = (
    "vector", "bm25", "vector+bm25", "fusion", "rerank", "truncation",
    "retrieval", "generation", "citation", "judge",
)
# Trace stage names that may appear as a failed stage (a negative item whose context
# was not empty fails at "context"), mapped to the loss names above -- the project's
# own mapping, minus vector/bm25 which keep their names.
STAGE_ALIASES: Mapping[str, str] = {k: v for k, v in LOSS_STAGE.items() if k not in ("vector", "bm25")}
UNATTRIBUTED = "unattributed"  # a failing case that names no stage
TIER_ORDER: tuple[str, ...] = ("retrieval", "deterministic", "judge", "passk")
FAILING: frozenset[str] = frozenset({"fail", "error"})  # outcomes that have a failed stage


def normalize_stage(stage: str | None) -> str | None:
    """A failed stage as the report names it (trace names mapped to loss names)."""
    if not stage:
        return None
    return STAGE_ALIASES.get(stage, stage)


def stage_rank(stage: str) -> tuple[int, str]:
    """Sort key: pipeline order; unknown stages last, by name."""
    try:
        return (STAGE_ORDER.index(stage), "")
    except ValueError:
        return (len(STAGE_ORDER), stage)


def tier_rank(tier: str) -> tuple[int, str]:
    try:
        return (TIER_ORDER.index(tier), "")
    except ValueError:
        return (len(TIER_ORDER), tier)


def case_stage(case: Mapping[str, Any]) -> str | None:
    """The stage a failing or erroring case is attributed to; None for pass and skip."""
    if case.get("outcome") not in FAILING:
        return None
    return normalize_stage(case.get("failed_stage")) or UNATTRIBUTED


def earliest_stage(stages: Iterable[str | None]) -> str | None:
    present = [s for s in stages if s]
    return min(present, key=stage_rank) if present else None
