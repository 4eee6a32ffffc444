"""The judge tier for one case: an answer and the judge's verdict → a CaseResult.

A judge that failed (unreachable, malformed twice, budget) makes the case an
``error`` (or ``skip`` when the budget stopped it before the call), never a pass and
never a silently missing number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord
from rag_eval.golden.model import GoldenItem
from rag_eval.judge import registry
from rag_eval.tiers.base import LOWER_RATE_KEYS, limit_problem
from rag_eval.tiers.judge.details import JudgeDetails


def judge_lower_is_better(key: str) -> bool:
    """A judge metric where lower is better, as registered (``rag_eval.judge.registry``:
    unknown_share and, of the claim-level metrics, hallucination and the two noise
    sensitivities), or a lower-is-better rate key."""
    return key in LOWER_RATE_KEYS or registry.lower_is_better(key)


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
    details: JudgeDetails,
    config: JudgeCaseConfig,
    duration: float = 0.0,
) -> CaseResult:
    problems = []
    for key, limit in config.floors.items():
        problem = limit_problem(key, metrics.get(key), limit, judge_lower_is_better(key))
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
        details=replace(details, answer=chat.answer, generator=chat.generator).to_dict(),
    )


def judge_failure(
    item: GoldenItem, kind: str, message: str, details: JudgeDetails, duration: float = 0.0
) -> CaseResult:
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
        details=details.to_dict(),
    )
