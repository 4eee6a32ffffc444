"""The judge tier: LLM-as-judge metrics of each answer (the runner:
``rag_eval.tiers.judge.runner.JudgeRunner``; the case: ``rag_eval.tiers.judge.case``)."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.core.case import CaseResult
from rag_eval.core.errors import ConfigError
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS, DEEPEVAL_ENGINE_METRICS, blame, judge_metric_names, registry
from rag_eval.tiers.base import (
    RATE_KEYS,
    Item,
    JudgedValues,
    Options,
    OptionValues,
    Tier,
    as_golden,
    floors,
    package_fragment,
)
from rag_eval.tiers.judge import labels
from rag_eval.tiers.judge.case import JudgeCaseConfig, judge_lower_is_better
from rag_eval.tiers.judge.details import JudgeDetails
from rag_eval.tiers.judge.endpoint import LEDGER_KEY, JudgeEndpoint, add_endpoint_options, read_endpoint

if TYPE_CHECKING:
    from rag_eval.judge.config import JudgeConfig
    from rag_eval.session import EvalConfig, EvalSession
    from rag_eval.tiers.judge.runner import JudgeRunner

JUDGE_RUNNER = "judge.runner"  # the session memo of the process's one JudgeRunner


@dataclass(frozen=True)
class JudgeArgs:
    """The judge's command-line choices: its endpoint (``endpoint.py``: ``--rag-judge-*``) and the
    deepeval engine's (``--rag-deepeval-metrics``, ``--rag-geval-criteria``)."""

    deepeval_metrics: tuple[str, ...] = DEEPEVAL_DEFAULT_METRICS
    geval_criteria: str | None = None
    endpoint: JudgeEndpoint | None = None  # the run's judge (env + --rag-judge-*; None: not configured)


class JudgeTier(Tier):
    name = "judge"
    details_type = JudgeDetails
    option_help = "RAG evaluation: judge tier (RAG_JUDGE_BASE_URL, RAG_JUDGE_MODEL, RAG_JUDGE_API_KEY)"
    marker = "judge tier: LLM-as-judge metrics (needs a configured judge endpoint)"
    progress = True  # one model call per case
    judged = True
    judges_answers = True
    run_keys = (blame.RUN_KEY,)

    def schema_fragment(self) -> Mapping[str, Any]:
        """``schema.json`` with each registered verdict field's part of ``judgeVerdict``."""
        return verdict_fragment(package_fragment(str(Path(__file__).parent)))

    def applies(self, item: Item) -> bool:
        return super().applies(item) and not getattr(item, "is_negative", False)

    @property
    def valid_names(self) -> str:  # the registry's metrics now, with any registered after import
        return ", ".join(judge_metric_names() + RATE_KEYS)

    def metric_ok(self, key: str) -> bool:
        return key in RATE_KEYS or key in judge_metric_names()

    def lower_is_better(self, key: str) -> bool:
        return judge_lower_is_better(key)

    def run_block(self, cases: Sequence[CaseResult]) -> dict[str, Any]:
        """``judge_blame``: the failing diagnosed cases by whose fault they are (``rag_eval.judge.blame``)."""
        return blame.run_block([c for c in cases if c.tier == self.name])

    def warnings(self, cases: Sequence[CaseResult]) -> list[str]:
        """A judge grading answers of its own model inflates scores: say so, visibly."""
        return self_judging([c for c in cases if c.tier == self.name])

    # --- human labels -------------------------------------------------------------------------
    label_questions = labels.QUESTIONS

    def judged_values(self, case: CaseResult) -> JudgedValues | None:
        return labels.judged_values(case)

    # --- command line ---------------------------------------------------------------------------
    def add_options(self, options: Options) -> None:
        add_endpoint_options(options)
        # read by the plugin (its labels: judge-human agreement and corrected estimates)
        options.addoption(
            "--rag-human-labels",
            default=None,
            metavar="PATH",
            help="human labels (JSONL, docs/human-labels.md): judge-human agreement and corrected estimates",
        )
        options.addini("rag_eval_human_labels", "default --rag-human-labels (relative to the rootdir)", default="")
        options.addoption(
            "--rag-deepeval-metrics",
            default=",".join(DEEPEVAL_DEFAULT_METRICS),
            help="with --rag-judge-engine deepeval: which of its metrics to run (comma-separated)",
        )
        options.addoption(
            "--rag-geval-criteria",
            default=None,
            help="with --rag-judge-engine deepeval: also run a GEval rubric with these criteria",
        )

    def read_options(self, values: OptionValues) -> JudgeArgs:
        names = tuple(n.strip() for n in str(values.getoption("rag_deepeval_metrics")).split(",") if n.strip())
        unknown = [n for n in names if n not in DEEPEVAL_ENGINE_METRICS]
        if unknown or not names:
            valid = ", ".join(DEEPEVAL_ENGINE_METRICS)
            raise ConfigError(f"--rag-deepeval-metrics: unknown {unknown or 'empty list'}; valid: {valid}")
        return JudgeArgs(names, values.getoption("rag_geval_criteria"), read_endpoint(values))

    # --- the judge of a run (this tier, passk's judged trials, dialogue's hints and LLM student) ---
    def endpoint(self, config: EvalConfig) -> JudgeConfig | None:
        """The run's judge endpoint; None without a command line (e.g. a script)."""
        args = self.args(config)
        return None if args is None or args.endpoint is None else args.endpoint.config

    def ledger(self, config: EvalConfig) -> Path | None:
        """The run's spending ledger folder, shared by the xdist workers (None without a budget)."""
        args = self.args(config)
        return None if args is None or args.endpoint is None else args.endpoint.ledger

    def worker_input(self, config: EvalConfig) -> Mapping[str, str]:
        ledger = self.ledger(config)
        return {LEDGER_KEY: str(ledger) if ledger else ""}

    def close(self, config: EvalConfig) -> None:
        ledger = self.ledger(config)
        if ledger is not None:
            shutil.rmtree(ledger, ignore_errors=True)  # the run's budget ledger: nothing to keep

    def options(self, config: EvalConfig) -> JudgeCaseConfig:
        return JudgeCaseConfig(floors(config, self.name))

    def skip_reason(self, session: EvalSession, item: Item) -> str | None:
        return self.missing_reason(session)

    def missing_reason(self, session: EvalSession) -> str | None:
        """Why the judge cannot run on this session (one sentence naming what to set), or None."""
        judge = self.endpoint(session.config)
        if judge is None:
            return "judge not configured"
        return session.answer_skip_reason() or judge.missing_reason()

    def ready(self, session: EvalSession) -> bool:
        """Whether the judge is configured (dialogue hints are judged then)."""
        judge = self.endpoint(session.config)
        return judge is not None and judge.missing_reason() is None

    def runner(self, session: EvalSession) -> JudgeRunner:
        """The session's one :class:`JudgeRunner`, built by the first case that judges."""
        return session.memo(JUDGE_RUNNER, lambda: _runner(session))

    def usage(self, session: EvalSession, case_id: str, tier: str) -> dict[str, Any] | None:
        """The judge's usage for one case of ``tier``, or None when this process never judged."""
        runner = session.memoized(JUDGE_RUNNER)
        return None if runner is None else dict(runner.usage_for(case_id, tier))

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
        diagnosis = blame.summary_line(self.run_block(cases).get(blame.RUN_KEY))
        return lines + ([diagnosis] if diagnosis else [])

    def run(self, session: EvalSession, item: Item) -> CaseResult:
        golden = as_golden(item)
        chat = session.chat(golden)
        return session.with_system(self.runner(session).run(golden, chat, session.tier_options(self)))


def verdict_fragment(fragment: Mapping[str, Any]) -> dict[str, Any]:
    """``fragment`` (the folder's schema.json) with the registered verdict fields' details
    (``VerdictField.results_schema``) among ``judgeVerdict``'s properties."""
    out = copy.deepcopy(dict(fragment))
    props = out["$defs"]["judgeVerdict"]["properties"]
    for f in registry.fields():
        props.update(copy.deepcopy(dict(f.results_schema)))
    return out


def self_judging(cases: Sequence[CaseResult]) -> list[str]:
    """One warning per (judge model, generator) pair where the judge generated the answers."""
    pairs = {(str(c.details.get("judge_model", "")), str(c.details.get("generator", ""))) for c in cases}
    return sorted(
        f"judge model {m!r} also generated the answers ({g}): a model grading its own answers inflates "
        "scores; set RAG_JUDGE_MODEL to a different model"
        for m, g in pairs
        if m and g.lower() == f"openai:{m}".lower()
    )


def _runner(session: EvalSession) -> JudgeRunner:
    from rag_eval.tiers.judge.runner import JudgeRunner  # the openai client only when judging

    config = session.config
    judge = JUDGE.endpoint(config)
    assert judge is not None  # missing_reason: no case judges without one
    args = JUDGE.args(config) or JudgeArgs()
    return JudgeRunner(judge, JUDGE.ledger(config), args.geval_criteria, args.deepeval_metrics)


JUDGE = JudgeTier()
