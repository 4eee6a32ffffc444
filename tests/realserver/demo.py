"""The demo cases the real-server tier and ``bench/realserver_judge.py`` run, and how.

Ten answerable demo items (the first ten of ``golden_sets/demo_maths/golden.jsonl`` that
expect an answer, in file order: sets, logic, inequalities, a quadratic, functions,
exponentials, sequences, a derivative), answered by the demo pipeline as
``pytest eval_tests -m judge`` answers them (the extractive generator, unless a test
says otherwise) and judged through :class:`rag_eval.session.EvalSession`: the object
the pytest plugin runs each case with, minus pytest.

Judge settings for a slow local model: gemma-3-270m makes about 10-15 tokens/s on two
shared cores, so one verdict can take a minute or more; the per-attempt timeout is
raised to match, and one retry is enough (a grammar-constrained reply that fails
validation fails it the same way again).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.adapters.spec import PipelineSpec
from rag_eval.core.case import CaseResult
from rag_eval.dataset import find_paths
from rag_eval.golden.model import GoldenItem
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS
from rag_eval.judge.config import JudgeConfig
from rag_eval.session import EvalConfig, EvalSession
from rag_eval.tiers.judge.endpoint import JudgeEndpoint
from rag_eval.tiers.judge.tier import JUDGE, JudgeArgs

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "golden_sets" / "demo_maths"
N_CASES = 10
JUDGE_TIMEOUT_S = 300
JUDGE_SETTINGS: Mapping[str, str] = {
    "RAG_JUDGE_API_KEY": "none",  # the local server takes any key
    "RAG_JUDGE_TIMEOUT": str(JUDGE_TIMEOUT_S),
    "RAG_JUDGE_MAX_RETRIES": "1",
}


@dataclass(frozen=True)
class JudgeRun:
    """One pass of the judge tier over the demo cases."""

    cases: list[CaseResult]
    usage: dict[str, Any]  # JudgeRunner.totals()["judge"]
    seconds: float

    @property
    def valid(self) -> int:
        """Cases that ended with a verdict (pass or fail), not a judge error."""
        return sum(1 for c in self.cases if c.outcome in ("pass", "fail"))


def judge_env(base_url: str, model: str, **extra: str) -> dict[str, str]:
    return {"RAG_JUDGE_BASE_URL": base_url, "RAG_JUDGE_MODEL": model, **JUDGE_SETTINGS, **extra}


def demo_session(
    judge: JudgeConfig | None = None,
    overrides: Mapping[str, Any] | None = None,
    deepeval_metrics: tuple[str, ...] = DEEPEVAL_DEFAULT_METRICS,
) -> EvalSession:
    """The demo pipeline (repository settings, shared index cache) with this judge."""
    return EvalSession(
        EvalConfig(
            paths=find_paths(DEMO),
            settings_overrides=dict(overrides or {}),
            project_root=REPO,
            tier_args={
                JUDGE.name: JudgeArgs(deepeval_metrics, endpoint=None if judge is None else JudgeEndpoint(judge))
            },
            pipeline=PipelineSpec("rag_app"),
        )
    )


def demo_items(session: EvalSession, n: int = N_CASES) -> list[GoldenItem]:
    items = [i for i in session.dataset.items if i.expected_action == "answer"][:n]
    assert len(items) == n, f"{DEMO}: fewer than {n} answerable items"
    return items


def run_judge(session: EvalSession, items: list[GoldenItem]) -> JudgeRun:
    """The judge tier on ``items``: one outcome per item, usage of the tier."""
    t0 = time.perf_counter()
    cases = [session.run_case("judge", item) for item in items]
    seconds = time.perf_counter() - t0
    usage = dict(JUDGE.runner(session).totals().get("judge", {}))
    return JudgeRun(cases, usage, seconds)
