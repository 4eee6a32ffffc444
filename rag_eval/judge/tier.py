"""The judge tier in one process: the configured engine over the cached client.

One ``JudgeRunner`` per process (per xdist worker): it owns the response cache, the
token/cost records and the engine. Each case: the answer the system gave, with the
context the generator actually saw, goes to the judge; a judge failure becomes an
``error`` case (a budget stop: ``skip``, "not run"), never a pass.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping

from rag_eval.citations import chunk_label
from rag_eval.citations import numbered_chunks
from rag_eval.records import AnswerRecord
from rag_eval.evaluate.judge import JudgeCaseConfig, judge_case, judge_failure
from rag_eval.golden.model import GoldenItem
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS
from rag_eval.judge.client import CachedChatClient, JudgeCallError
from rag_eval.judge.config import JudgeConfig
from rag_eval.judge.native import JudgeInput, NativeJudge
from rag_eval.results import CaseResult



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


class JudgeRunner:
    def __init__(
        self,
        config: JudgeConfig,
        ledger_dir: Path | None = None,
        geval_criteria: str | None = None,
        deepeval_metrics: tuple[str, ...] = DEEPEVAL_DEFAULT_METRICS,
    ) -> None:
        self.config = config
        self.client = CachedChatClient.from_config(config, ledger_dir=ledger_dir)
        if config.engine == "deepeval":
            from rag_eval.judge.deepeval_engine import DeepEvalEngine  # deepeval imports take seconds

            metrics = deepeval_metrics
            if geval_criteria and "geval" not in metrics:
                metrics += ("geval",)
            self.engine: Any = DeepEvalEngine(self.client, config.model, metrics, geval_criteria=geval_criteria)
        else:
            self.engine = NativeJudge(self.client, config.model)

    def run(self, item: GoldenItem, chat: AnswerRecord, case_config: JudgeCaseConfig, trial: int = 0) -> CaseResult:
        t0 = time.perf_counter()
        base: dict[str, Any] = {"judge_model": self.config.model, "engine": self.config.engine}
        try:
            if self.config.engine == "deepeval":
                verdict = self.engine.judge(judge_input(item, chat), trial=trial, expected_output=item.reference_answer)
            else:
                verdict = self.engine.judge(judge_input(item, chat), trial=trial)
        except JudgeCallError as exc:
            details = {**base, "answer": chat.answer, "usage": self.client.usage_for(item.id)}
            return judge_failure(item, exc.kind, str(exc), details, time.perf_counter() - t0)
        details = {
            **base,
            "judge": verdict.details,
            "judge_calls": verdict.calls,
            "judge_mode": verdict.mode,
            "usage": self.client.usage_for(item.id),
        }
        return judge_case(item, chat, verdict.metrics, details, case_config, time.perf_counter() - t0)

    def totals(self) -> Mapping[str, Any]:
        return self.client.totals()
