"""The judge tier: LLM-as-judge metrics of each answer (the runner:
``rag_eval.judge.tier.JudgeRunner``; the case: ``rag_eval.tiers.judge_case``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rag_eval import tier_names
from rag_eval.judge import JUDGE_METRICS, blame
from rag_eval.results.case import CaseResult
from rag_eval.tiers.base import RATE_KEYS, Item, Tier, as_golden, floors
from rag_eval.tiers.judge_case import JudgeCaseConfig

if TYPE_CHECKING:
    from rag_eval.session import EvalConfig, EvalSession


class JudgeTier(Tier):
    name = tier_names.JUDGE
    marker = "judge tier: LLM-as-judge metrics (needs a configured judge endpoint)"
    valid_names = f"{', '.join(JUDGE_METRICS + RATE_KEYS)}"
    progress = True  # one model call per case
    judged = True
    judges_answers = True

    def applies(self, item: Item) -> bool:
        return super().applies(item) and not getattr(item, "is_negative", False)

    def metric_ok(self, key: str) -> bool:
        return key in RATE_KEYS or key in JUDGE_METRICS

    def options(self, config: EvalConfig) -> JudgeCaseConfig:
        return JudgeCaseConfig(floors(config, self.name))

    def skip_reason(self, session: EvalSession, item: Item) -> str | None:
        return session.judge_skip_reason()

    def ahead(self, session: EvalSession) -> bool:
        return True  # a judge call per case: they overlap even when the system takes one call at a time

    def terminal_lines(self, cases: Sequence[CaseResult], usage: Mapping[str, Mapping[str, float]]) -> list[str]:
        judge = usage.get(self.name)
        lines = []
        if judge:
            lines.append(
                f"judge: {int(judge.get('calls', 0))} calls ({int(judge.get('cached_calls', 0))} from cache), "
                f"{int(judge.get('prompt_tokens', 0))} prompt + {int(judge.get('completion_tokens', 0))} completion "
                f"tokens, ${judge.get('cost_usd', 0.0):.4f}"
            )
        diagnosis = blame.summary_line(blame.run_block(cases).get(blame.RUN_KEY))
        return lines + ([diagnosis] if diagnosis else [])

    def run(self, session: EvalSession, item: Item) -> CaseResult:
        golden = as_golden(item)
        chat = session.chat(golden)
        return session.with_system(session.judge_runner.run(golden, chat, session.tier_options(self)))


JUDGE = JudgeTier()
