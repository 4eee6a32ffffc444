"""The judge tier for one case: an answer and the judge's verdict → a CaseResult.

A judge that failed (unreachable, malformed twice, budget) makes the case an
``error`` (or ``skip`` when the budget stopped it before the call), never a pass and
never a silently missing number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from rag_eval.records import AnswerRecord
from rag_eval.golden.model import GoldenItem
from rag_eval.results.case import CaseResult
from rag_eval.tiers.base import limit_problem


@dataclass(frozen=True)
class JudgeCaseConfig:
    """Per-case limits, e.g. {"faithfulness": 0.5}: a case below a floor fails, and for a
    lower-is-better key (hallucination, the noise sensitivities, unknown_share) a case
    above it."""

    floors: Mapping[str, float] = field(default_factory=dict)


def judge_case(
    item: GoldenItem,
    chat: AnswerRecord,
    metrics: Mapping[str, float],
    details: Mapping[str, Any],
    config: JudgeCaseConfig,
    duration: float = 0.0,
) -> CaseResult:
    problems = []
    for key, limit in config.floors.items():
        problem = limit_problem(key, metrics.get(key), limit)
        if problem:
            problems.append(problem)
    return CaseResult(
        id=item.id,
        tier="judge",
        outcome="fail" if problems else "pass",
        failed_stage="judge" if problems else None,
        message="; ".join(problems),
        metrics=dict(metrics),
        tags=dict(item.tags),
        split=item.split,
        negative=item.is_negative,
        duration=duration,
        details={"answer": chat.answer, "generator": chat.generator, **details},
    )


def judge_failure(item: GoldenItem, kind: str, message: str, details: Mapping[str, Any], duration: float = 0.0) -> CaseResult:
    """The judge could not give a verdict: an error — or not run, when the budget stopped it."""
    not_run = kind == "budget"
    return CaseResult(
        id=item.id,
        tier="judge",
        outcome="skip" if not_run else "error",
        failed_stage=None if not_run else "judge",
        message=("not run: " if not_run else f"judge error ({kind}): ") + message,
        tags=dict(item.tags),
        split=item.split,
        negative=item.is_negative,
        duration=duration,
        details=dict(details),
    )
