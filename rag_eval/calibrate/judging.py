"""The project's native judge on both responses of each meta-evaluation instance.

Each response is one native-judge case: the query, no context (the set has none), the
response as the answer and the instance's reference answer (``gt_answer``) as the
reference. The verdict's correctness lists (``tp``: answer claims the reference supports,
``fp``: answer claims it does not, ``fn``: reference claims the answer misses) give the
three scores, mirroring RAGChecker's precision / recall / F1 on the same three human labels:

=============  =====================  ===========================================
human label    judge score            formula
=============  =====================  ===========================================
correctness    precision              TP / (TP + FP)
completeness   recall                 TP / (TP + FN) (claim-level recall of the reference)
overall        factual_f1             TP / (TP + 0.5·(FP + FN)) (the judge's answer correctness)
=============  =====================  ===========================================

The set has no key facts, so the key-fact recall (``answer_recall``) has nothing to read;
the reference's claims (``fn``) stand in for them. A score without a denominator (no
claims listed) is absent, and becomes the median difference like any missing score of
the paper's baselines. A response whose judge call failed is an *error*: counted and
reported; its instance's difference is also missing (the median). A call the budget
stopped is *not run*: its instance leaves the sample, and what was judged is kept.

Calls go through :class:`~rag_eval.llm.cached.CachedChatClient` (cache, retries, budget,
accounting), ``concurrency`` responses at a time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rag_eval.calibrate.meta_eval import METRICS, SIDES, Instance
from rag_eval.judge.native import JudgeInput, NativeJudge
from rag_eval.judge.prompt import system_message
from rag_eval.judge.schema import response_schema
from rag_eval.llm.cached import JudgeCallError

TIER = "calibrate"
SCORE_NAMES: Mapping[str, str] = {"correctness": "precision", "completeness": "recall", "overall": "factual_f1"}


@dataclass(frozen=True)
class Judged:
    """One response's outcome: its scores (absent when undefined), or an error, or not run."""

    scores: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None
    not_run: bool = False
    tp: int | None = None
    fp: int | None = None
    fn: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scores": dict(self.scores)}
        if self.tp is not None:
            out["tp"], out["fp"], out["fn"] = self.tp, self.fp, self.fn
        if self.error is not None:
            out["error"] = self.error
        if self.not_run:
            out["not_run"] = True
        return out


def case_id(instance: Instance, side: str) -> str:
    return f"ragchecker-meta-{instance.id}-{side}"


def judge_input(instance: Instance, side: str) -> JudgeInput:
    return JudgeInput(
        case_id=case_id(instance, side),
        question=instance.query,
        context=(),
        answer=instance.responses[SIDES.index(side)],
        reference=instance.reference,
    )


def prompt_version() -> str:
    """The first 12 hex of the sha256 of the judge's rules and schema for a referenced case.

    Recorded with every calibration: a change of the prompt or the verdict schema changes it,
    so a calibration is never read as that of another prompt."""
    text = system_message(True, response_schema(True, 0, [], 0))
    return hashlib.sha256(json.dumps(text).encode("utf-8")).hexdigest()[:12]


def scores_of(tp: int, fp: int, fn: int) -> dict[str, float]:
    """Precision, recall and F1 of the correctness lists, each only with a denominator."""
    out: dict[str, float] = {}
    if tp + fp:
        out["precision"] = tp / (tp + fp)
    if tp + fn:
        out["recall"] = tp / (tp + fn)
    if tp + fp + fn:
        out["factual_f1"] = tp / (tp + 0.5 * (fp + fn))
    return out


def judge_one(judge: NativeJudge, instance: Instance, side: str) -> Judged:
    """One response through the judge; an error or a budget stop is returned, not raised."""
    try:
        verdict = judge.judge(judge_input(instance, side), tier=TIER)
    except JudgeCallError as exc:
        if exc.kind == "budget":
            return Judged(not_run=True, error=str(exc))
        return Judged(error=f"{exc.kind}: {exc}")
    lists = verdict.details.get("correctness") or {}
    tp, fp, fn = (len(lists.get(k) or ()) for k in ("tp", "fp", "fn"))
    return Judged(scores=scores_of(tp, fp, fn), tp=tp, fp=fp, fn=fn)


Progress = Callable[[str, str, Judged], None]  # (instance id, side, outcome), as each response is done


def judge_instances(
    judge: NativeJudge, instances: Sequence[Instance], concurrency: int = 4, progress: Progress | None = None
) -> dict[tuple[str, str], Judged]:
    """Both responses of every instance, ``concurrency`` calls at a time; keyed (instance id, side)."""
    jobs = [(inst, side) for inst in instances for side in SIDES]

    def one(job: tuple[Instance, str]) -> Judged:
        result = judge_one(judge, *job)
        if progress is not None:
            progress(job[0].id, job[1], result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        done = list(pool.map(one, jobs))
    return {(inst.id, side): result for (inst, side), result in zip(jobs, done)}


def score_pairs(
    instances: Sequence[Instance], judged: Mapping[tuple[str, str], Judged], metric: str
) -> list[tuple[float | None, float | None]]:
    """(model1's, model2's) judge score of ``metric``'s paired score, per instance (None: absent)."""
    name = SCORE_NAMES[metric]
    return [(judged[(i.id, "model1")].scores.get(name), judged[(i.id, "model2")].scores.get(name)) for i in instances]


assert set(SCORE_NAMES) == set(METRICS)
