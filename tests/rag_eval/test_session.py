"""session.EvalSession.top_k: EvalConfig.top_k (set by --rag-top-k) is the call's top_k for
every adapter, rag_app included; a rag_app setting (--rag-set rerank_top_n=...) is not.
EvalSession.system_concurrency and calling: a system gets at most the calls at once it
declares, an abandoned case gives its slot back, and one answer per item across threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters.spec import PipelineSpec
from rag_eval.core.errors import ConfigError
from rag_eval.dataset import DatasetPaths
from rag_eval.golden.model import GoldenItem
from rag_eval.session import CaseTimeout, EvalConfig, EvalSession, within

PATHS = DatasetPaths(Path("."), None, Path("golden.jsonl"))


@pytest.mark.parametrize("kind", ["rag_app", "python", "http"])
def test_the_configs_top_k_is_the_calls_top_k_for_every_adapter(kind: str) -> None:
    assert EvalSession(EvalConfig(PATHS, top_k=4, pipeline=PipelineSpec(kind))).top_k == 4


def test_a_rag_app_setting_is_not_the_calls_top_k() -> None:
    # rerank_top_n is rag_app's own setting: rag_app applies it itself when the call has no top_k
    assert EvalSession(EvalConfig(PATHS, {"rerank_top_n": 4}, pipeline=PipelineSpec("rag_app"))).top_k is None
    assert EvalSession(EvalConfig(PATHS, pipeline=PipelineSpec("rag_app"))).top_k is None


def test_a_config_names_its_pipeline() -> None:
    with pytest.raises(TypeError, match="pipeline"):
        EvalConfig(PATHS)  # type: ignore[call-arg]


class Counting:
    """A system that records how many of its calls ran at once."""

    answers = True

    def __init__(self, concurrency: Any = None) -> None:
        if concurrency is not None:
            self.concurrency = concurrency
        self.lock = threading.Lock()
        self.now = self.most = self.chats = 0

    def _busy(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.05)
        with self.lock:
            self.now -= 1

    def retrieve(self, question: str, top_k: int | None = None) -> list[Any]:
        self._busy()
        return []

    def describe(self) -> dict[str, Any]:
        return {}


def session_of(system: Any, concurrency: int = 8) -> EvalSession:
    return EvalSession(EvalConfig(PATHS, pipeline=PipelineSpec("python"), concurrency=concurrency), lambda: system)


def overlap(session: EvalSession, system: Counting, threads: int = 6) -> int:
    workers = [threading.Thread(target=session.calling, args=(lambda: system.retrieve("q"),)) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return system.most


@pytest.mark.parametrize(("declared", "run", "expected"), [(None, 8, 1), (3, 8, 3), (16, 2, 2)])
def test_a_system_gets_at_most_the_calls_it_declares_and_the_run_allows(declared: Any, run: int, expected: int) -> None:
    system = Counting(declared)
    session = session_of(system, run)
    assert session.system_concurrency == expected
    assert overlap(session, system) == expected


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True])
def test_a_bad_declared_concurrency_is_a_configuration_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match=r"concurrency = .*a whole number >= 1 \(1: not thread-safe\)"):
        session_of(Counting(bad)).system_concurrency  # noqa: B018 - reading the property builds it (fails early)


def test_an_abandoned_case_gives_its_slot_back() -> None:
    release = threading.Event()
    session = session_of(Counting(None))
    with pytest.raises(CaseTimeout):
        within(0.05, lambda: session.calling(lambda: release.wait(5)), session.abandon)
    done = threading.Event()
    threading.Thread(target=lambda: session.calling(done.set), daemon=True).start()
    assert done.wait(2)  # the next call did not wait for the abandoned one
    release.set()


def test_two_tiers_of_one_item_on_two_threads_get_one_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    session = session_of(Counting(None))
    calls: list[str] = []

    def answer(item: GoldenItem) -> Any:
        calls.append(item.id)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(session, "answer", answer)
    item = GoldenItem(id="q1", question="q?")
    got: list[Any] = []
    workers = [threading.Thread(target=lambda: got.append(session.chat(item))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert calls == ["q1"] and len({id(g) for g in got}) == 1


def test_warm_leaves_the_judge_runner_to_the_first_case_that_judges(tmp_path: Path) -> None:
    """A run whose selected tests never judge does not import the openai SDK (~1 s) for a
    configured judge; the first judging case builds the runner once, whatever the thread."""
    from rag_eval.judge.config import JudgeConfig
    from rag_eval.tiers.judge.endpoint import JudgeEndpoint
    from rag_eval.tiers.judge.tier import JUDGE, JUDGE_RUNNER, JudgeArgs

    judge = JudgeConfig.from_env(
        {"RAG_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "RAG_JUDGE_MODEL": "m", "RAG_JUDGE_API_KEY": "k"},
        cache_dir=tmp_path / "cache",
    )
    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"id": "q1", "question": "What is 1 + 1?", "expected_action": "answer"}\n', encoding="utf-8")
    paths = DatasetPaths(tmp_path, None, golden)
    session = EvalSession(
        EvalConfig(
            paths, pipeline=PipelineSpec("python"), tier_args={JUDGE.name: JudgeArgs(endpoint=JudgeEndpoint(judge))}
        ),
        lambda: Counting(),
    )
    assert JUDGE.ready(session)
    session.warm()
    assert session.memoized(JUDGE_RUNNER) is None
    built: list[Any] = []
    workers = [threading.Thread(target=lambda: built.append(JUDGE.runner(session))) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(built) == 4 and all(r is built[0] for r in built) and session.memoized(JUDGE_RUNNER) is built[0]
