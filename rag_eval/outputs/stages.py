"""Where a case failed: the system's stage names, their pipeline order, and the
earliest failing stage of a golden item over its tiers.

One place for the order so that the HTML report's rows, counts and filters agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.tiers.report_payload import stage_levels as stage_levels  # the retrieval tier's, from its cases

# Where a case can fail after retrieval, in order; the retrieval part comes from the
# system's own declared stages (each case's details.stage_levels), never from here.
AFTER_RETRIEVAL: tuple[str, ...] = (
    "retrieval",
    "generation",
    "citation",
    "judge",  # failed_stage of a case its judge could not decide
    "clarification",
    "hint",
    "interception",  # a dialogue's steps after its retrieval (rag_eval.dialogue.verdict)
)
UNATTRIBUTED = "unattributed"  # a failing case that names no stage
FAILING: frozenset[str] = frozenset({"fail", "error"})  # outcomes that have a failed stage


def stage_order(levels: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """Every name a failure can carry, earliest first: each level's stages alone (a
    negative's thresholded stage), then the level's joint name (``dense+sparse``), then
    the non-retrieval steps."""
    out: list[str] = []
    for level in levels:
        out.extend(n for n in level if n not in out)
        joint = "+".join(level)
        if joint not in out:
            out.append(joint)
    return (*out, *(s for s in AFTER_RETRIEVAL if s not in out))


def lost_at(stage: str | None, levels: Sequence[Sequence[str]]) -> list[str]:
    """The ranked-list columns a failed stage points at, for highlighting."""
    if not stage:
        return []
    names = {n for level in levels for n in level}
    return [n for n in stage.split("+") if n in names]


def normalize_stage(stage: str | None) -> str | None:
    """A failed stage as the report names it (the system's own names, as recorded)."""
    return stage or None


def stage_rank(stage: str, order: Sequence[str] = AFTER_RETRIEVAL) -> tuple[int, str]:
    """Sort key: pipeline order; unknown stages last, by name."""
    try:
        return (list(order).index(stage), "")
    except ValueError:
        return (len(order), stage)


def tier_rank(tier: str) -> tuple[int, str]:
    """Sort key: the registry's order (built-in tiers first, then tiers as registered);
    a tier no longer registered (an old results file) last, by name."""
    order = tiers.names()
    try:
        return (order.index(tier), "")
    except ValueError:
        return (len(order), tier)


def case_stage(case: CaseResult) -> str | None:
    """The stage a failing or erroring case is attributed to; None for pass and skip."""
    if case.outcome not in FAILING:
        return None
    return normalize_stage(case.failed_stage) or UNATTRIBUTED


def earliest_stage(stages: Iterable[str | None], order: Sequence[str] = AFTER_RETRIEVAL) -> str | None:
    present = [s for s in stages if s]
    return min(present, key=lambda s: stage_rank(s, order)) if present else None
