"""The judge tier in one process: the configured engine over the cached client.

One ``JudgeRunner`` per process (per xdist worker): it owns the response cache, the
token/cost records and the engine. Each case: the answer the system gave, with the
context the generator actually saw, goes to the judge; a judge failure becomes an
``error`` case, never a pass. Only a spending budget reached *before the case's first
call* is ``skip`` ("not run"); a budget reached between two calls of one case, a time
budget, a timeout or a transport failure is an ``error``.

Usage: every call is recorded with (tier, case id, trial). ``run(..., tier="passk",
trial=t)`` records a pass@k trial's judge calls under ``passk``; the case's
``details.usage`` is :meth:`JudgeRunner.usage_for` of that case, tier and trial, and
``usage_for(case_id, "passk")`` (no trial) sums a passk case's trials. Summing
``usage_for`` over the cases of a tier equals ``totals()[tier]``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval.citations import chunk_label, numbered_chunks
from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord
from rag_eval.golden.model import GoldenItem
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS, blame
from rag_eval.judge.config import JudgeConfig
from rag_eval.judge.native import JudgeInput, NativeJudge
from rag_eval.llm.cached import CachedChatClient, JudgeCallError
from rag_eval.tiers.judge.case import JudgeCaseConfig, judge_case, judge_failure
from rag_eval.tiers.judge.details import JudgeDetails
from rag_eval.util.redact import Redactor, redactor_from_env

TIER = "judge"  # the judge tier's name: its calls' usage label unless a passk trial names its own
BUDGET_AFTER_START = "budget_after_start"  # spending budget reached mid-case: an error, not "not run"


def judge_input(item: GoldenItem, chat: AnswerRecord) -> JudgeInput:
    """The context numbered exactly as the generator's prompt numbered it."""
    context = []
    for n, chunk in numbered_chunks(chat.context_used):
        label = chunk_label(n, chunk).removeprefix(f"[{n}]").strip().strip("()")
        context.append((label, chunk.text))
    return JudgeInput(
        case_id=item.id,
        question=item.question,
        context=tuple(context),
        answer=chat.answer,
        key_facts=tuple(f.fact for f in item.key_facts),
        reference=item.reference_answer,
    )


def blame_details(item: GoldenItem, chat: AnswerRecord, judged: Any) -> dict[str, Any]:
    """``blame`` (one line per finding, chain order) and ``blame_side`` of a verdict with the
    claim-level fields (``rag_eval.judge.blame``); nothing for one without (deepeval)."""
    if not isinstance(judged, Mapping) or not isinstance(judged.get("diagnosis"), Mapping):
        return {}
    found = blame.findings(judged, blame.fact_trails(item.key_facts, chat.trace, chat.context_used))
    return {"blame": [f.line for f in found], "blame_side": blame.side_of(found)}


class JudgeRunner:
    def __init__(
        self,
        config: JudgeConfig,
        ledger_dir: Path | None = None,
        geval_criteria: str | None = None,
        deepeval_metrics: tuple[str, ...] = DEEPEVAL_DEFAULT_METRICS,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config
        self.redactor = redactor if redactor is not None else redactor_from_env()
        self.client = CachedChatClient.from_config(config, ledger_dir=ledger_dir, redactor=self.redactor)
        if config.engine == "deepeval":
            from rag_eval.judge.deepeval_engine import DeepEvalEngine  # deepeval imports take seconds

            metrics = deepeval_metrics
            if geval_criteria and "geval" not in metrics:
                metrics += ("geval",)
            self.engine: Any = DeepEvalEngine(
                self.client, config.model, metrics, geval_criteria=geval_criteria, max_tokens=config.max_tokens
            )
        else:
            self.engine = NativeJudge(self.client, config.model, max_tokens=config.max_tokens)

    def run(
        self, item: GoldenItem, chat: AnswerRecord, case_config: JudgeCaseConfig, trial: int = 0, tier: str = TIER
    ) -> CaseResult:
        t0 = time.perf_counter()
        before = len(self.client.records)
        try:
            if self.config.engine == "deepeval":
                verdict = self.engine.judge(
                    judge_input(item, chat), trial=trial, expected_output=item.reference_answer, tier=tier
                )
            else:
                verdict = self.engine.judge(judge_input(item, chat), trial=trial, tier=tier)
        except JudgeCallError as exc:
            kind, message = exc.kind, str(exc)
            if kind == "budget" and self._started(item.id, tier, trial, before):
                kind = BUDGET_AFTER_START
                message = f"the judge budget ran out in the middle of this case: {message}"
            details = self._details(item.id, tier, trial, answer=self.redactor.text(chat.answer))
            return judge_failure(item, kind, self.redactor.text(message), details, time.perf_counter() - t0)
        judged = self.redactor.obj(verdict.details)
        details = self._details(
            item.id,
            tier,
            trial,
            answer=chat.answer,
            judge=judged,
            judge_calls=verdict.calls,
            judge_mode=verdict.mode,
            **blame_details(item, chat, judged),
        )
        return judge_case(item, chat, verdict.metrics, details, case_config, time.perf_counter() - t0)

    def _started(self, case_id: str, tier: str, trial: int, before: int) -> bool:
        """Whether this case sent (or was served) a call before the budget stopped it."""
        return any(
            r.case_id == case_id and r.tier == tier and r.trial == trial and r.error != "budget"
            for r in self.client.records[before:]
        )

    def _details(self, case_id: str, tier: str, trial: int, **verdict: Any) -> JudgeDetails:
        """The case's details: the model, the engine, this case's usage (and a note when the
        server left usage out), plus what the verdict (or the failure) adds."""
        usage = self.client.usage_for(case_id, tier, trial)
        note = None
        if usage.get("calls_without_usage"):
            note = (
                f"the judge server reported no token usage for {usage['calls_without_usage']} "
                "call(s): their tokens and cost are unknown, not 0"
            )
        return JudgeDetails(self.config.model, self.config.engine, usage=usage, usage_note=note, **verdict)

    def usage_for(self, case_id: str, tier: str = TIER, trial: int | None = None) -> dict[str, Any]:
        """Usage of one case of ``tier`` (every trial unless ``trial`` is given)."""
        return self.client.usage_for(case_id, tier, trial)

    def totals(self) -> Mapping[str, Any]:
        return self.client.totals()
