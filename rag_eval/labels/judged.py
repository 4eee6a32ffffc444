"""What the judge said in one run, per metric and case, read from a results dict.

Judge tier: each case with a verdict (outcome pass or fail) gives ``judge.<key>`` for every
key of its metrics; its claims' and key facts' verdicts give the per-unit values of
``judge.faithfulness`` (claim *i*: yes 1, no 0, unknown kept as its own category) and
``judge.coverage`` (fact *j*: 1 / 0.5 / 0). Dialogue tier: ``dialogue.hint_success`` from
``details.hint_verdict`` (true 1, false 0). A case the judge failed on (error, or a hint
verdict without success) has no value: it is counted in ``errors``, never given one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_eval import tiers
from rag_eval.judge.schema import FACT_SCORE
from rag_eval.results.case import CaseResult
from rag_eval.results.file import case_results
from rag_eval.tier_names import DIALOGUE, JUDGE

UNKNOWN = "unknown"  # a claim the judge could not decide: a category of its own in unit agreement


@dataclass
class JudgedMetric:
    """One metric's judge values: ``values[case]``, the cases it erred on, and per-unit verdicts."""

    values: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    units: dict[tuple[str, str, int], float | str] = field(default_factory=dict)  # (case, unit, index) → value


def judged_metrics(results: Mapping[str, Any]) -> dict[str, JudgedMetric]:
    """Every judged metric of the run by key (``judge.faithfulness`` …), in sorted order."""
    out: dict[str, JudgedMetric] = {}
    judge_errors: list[str] = []
    for case in case_results(results):
        if tiers.judges_answers(case.tier):
            if case.outcome == "error":
                judge_errors.append(case.id)
            elif case.outcome in ("pass", "fail"):
                _judge_case(case, out)
        elif case.tier == DIALOGUE:
            _dialogue_case(case, out)
    for key, metric in out.items():
        if key.startswith("judge."):
            metric.errors.extend(judge_errors)
    return dict(sorted(out.items()))


def _judge_case(case: CaseResult, out: dict[str, JudgedMetric]) -> None:
    cid = case.id
    for key, value in case.metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.setdefault(f"judge.{key}", JudgedMetric()).values[cid] = float(value)
    verdict = case.details.get(JUDGE)
    if not isinstance(verdict, Mapping):
        return
    faith = out.setdefault("judge.faithfulness", JudgedMetric())
    for i, claim in enumerate(verdict.get("claims") or (), 1):
        v = claim.get("verdict") if isinstance(claim, Mapping) else None
        faith.units[(cid, "claim", i)] = 1.0 if v == "yes" else 0.0 if v == "no" else UNKNOWN
    coverage = out.setdefault("judge.coverage", JudgedMetric())
    for j, fact in enumerate(verdict.get("key_facts") or (), 1):
        if isinstance(fact, Mapping) and fact.get("verdict") in FACT_SCORE:
            index = fact.get("index")
            coverage.units[(cid, "fact", index if isinstance(index, int) else j)] = FACT_SCORE[fact["verdict"]]
    for key in ("judge.faithfulness", "judge.coverage"):
        if not out[key].values and not out[key].units:
            del out[key]


def _dialogue_case(case: CaseResult, out: dict[str, JudgedMetric]) -> None:
    hint = case.details.get("hint_verdict")
    if not isinstance(hint, Mapping):
        return  # no judge configured, or a dialogue that should not be guided (not judged)
    metric = out.setdefault("dialogue.hint_success", JudgedMetric())
    success = hint.get("success")
    if isinstance(success, bool):
        metric.values[case.id] = 1.0 if success else 0.0
    else:
        metric.errors.append(case.id)
