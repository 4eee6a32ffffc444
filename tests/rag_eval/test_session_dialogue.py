"""The dialogue tier in a session: the LLM student over a scripted OpenAI-compatible server
(its replies worded by the model, each replay its own cache entries, usage per case), the
hint judge when a judge is configured, configuration errors and the skip of a system
without a dialogue call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters.spec import PipelineSpec
from rag_eval.dataset import DatasetPaths
from rag_eval.gates.thresholds import parse_thresholds
from rag_eval.judge.config import JudgeConfig
from rag_eval.session import EvalConfig, EvalSession
from rag_eval.tiers.dialogue.tier import DIALOGUE
from rag_eval.tiers.judge.endpoint import JudgeEndpoint
from rag_eval.tiers.judge.tier import JUDGE, JudgeArgs
from tests.rag_eval._dialogue_systems import DEMO, OracleTutor, demo_items
from tests.support.openai_server import Reply, ScriptedOpenAIServer, reply

ITEMS = {i.id: i for i in demo_items()}
MISSING = ITEMS["dlg-missing-001"]  # clarify (interval), then two hints


def session(
    tmp_path: Path, case: str = "", system: Any = None, judge: JudgeConfig | None = None, concurrency: int = 1
) -> EvalSession:
    thresholds = parse_thresholds({"dialogue": {"case": {"retrieval": "off", **json.loads(case or "{}")}}}, "t.toml")
    cfg = EvalConfig(
        paths=DatasetPaths(DEMO.parent, None, DEMO.parent / "golden.jsonl"),
        thresholds=thresholds,
        project_root=tmp_path,
        tier_args={} if judge is None else {JUDGE.name: JudgeArgs(endpoint=JudgeEndpoint(judge))},
        pipeline=PipelineSpec("rag_app"),
        concurrency=concurrency,
    )
    return EvalSession(cfg, lambda: system if system is not None else OracleTutor(list(ITEMS.values())))


@pytest.fixture
def student_env(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    monkeypatch.setenv("RAG_SIMULATOR_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_SIMULATOR_MODEL", "student-model")
    monkeypatch.setenv("RAG_SIMULATOR_API_KEY", "sk-student-secret-1234")
    openai_server.set_default("chat", lambda request: reply("嗯，区间是 [1,4]。"))
    return openai_server


def test_the_llm_student_words_the_scripted_replies(tmp_path: Path, student_env: ScriptedOpenAIServer) -> None:
    case = session(tmp_path, '{"simulator": "llm"}').run_case("dialogue", MISSING)
    assert case.outcome == "pass", case.message
    assert case.details["simulator"] == "llm:student-model"
    turns = case.details["transcript"]["turns"]
    assert turns[0]["reply"]["text"] == "嗯，区间是 [1,4]。" and turns[0]["reply"]["answered"] == ["interval"]
    # the decision stays the scripted one: the model is told what to convey
    system_prompt = student_env.requests_of("chat")[0].json["messages"][0]["content"]
    assert "CONTENT to convey in your next message: 题目说的是在 [1,4] 上" in system_prompt
    assert case.details["usage"]["calls"] == student_env.calls("chat") == 2  # one per student reply
    assert "sk-student-secret-1234" not in json.dumps(case.to_dict(), ensure_ascii=False)


def test_replays_never_share_a_cache_entry(tmp_path: Path, student_env: ScriptedOpenAIServer) -> None:
    s = session(tmp_path, '{"simulator": "llm"}')
    case = s.run_case("passk", MISSING)
    assert case.tier == "passk" and case.outcome == "pass" and case.details["n"] == 3
    assert student_env.calls("chat") == 3 * 2  # k replays x 2 replies, nothing served from another replay's entry
    again = session(tmp_path, '{"simulator": "llm"}').run_case("passk", MISSING)  # a second run: all from the cache
    assert student_env.calls("chat") == 6 and again.details["usage"]["cached_calls"] == 6


@pytest.mark.parametrize(("env", "expected"), [(None, 16), ("2", 2)], ids=["the-runs", "its-own"])
def test_the_students_requests_in_flight_follow_the_run_unless_set(
    tmp_path: Path, student_env: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch, env: str | None, expected: int
) -> None:
    """As the judge's endpoint: ``RAG_SIMULATOR_CONCURRENCY``, else the run's ``--rag-concurrency``."""
    if env is None:
        monkeypatch.delenv("RAG_SIMULATOR_CONCURRENCY", raising=False)
    else:
        monkeypatch.setenv("RAG_SIMULATOR_CONCURRENCY", env)
    s = session(tmp_path, '{"simulator": "llm"}', concurrency=16)
    assert DIALOGUE.student_client(s).client.policy.concurrency == expected


def test_the_student_and_the_judge_spend_one_budget(tmp_path: Path, student_env: ScriptedOpenAIServer) -> None:
    """One budget for the two clients (its spend, its calls in flight): the student's calls
    count for the judge's next call, once, and a budget reached mid-dialogue is an error."""
    env = {"RAG_JUDGE_BASE_URL": student_env.base_url, "RAG_JUDGE_MODEL": "judge-model", "RAG_JUDGE_API_KEY": "sk-j"}
    judge = JudgeConfig.from_env(env, cache_dir=tmp_path / "cache", budget_tokens=1000)
    student_env.set_default(
        "chat", lambda request: reply("嗯，区间是 [1,4]。", prompt_tokens=900, completion_tokens=200)
    )
    s = session(tmp_path, '{"simulator": "llm"}', judge=judge)
    student, judge_client = DIALOGUE.student_client(s), JUDGE.runner(s).client
    assert student.budget is judge_client.budget
    case = s.run_case("dialogue", MISSING)  # the first reply spends 900 + 200 >= 1000: no second call
    assert student_env.calls("chat") == 1
    assert student.spent() == judge_client.spent() == (0.0, 900 + 200)  # counted once, for both
    assert case.outcome == "error" and "budget_tokens 1000 reached: 1100 tokens spent" in case.message


def test_a_failing_student_model_is_an_error_never_a_pass(tmp_path: Path, student_env: ScriptedOpenAIServer) -> None:
    student_env.set_default("chat", lambda request: reply("   "))
    case = session(tmp_path, '{"simulator": "llm"}').run_case("dialogue", MISSING)
    assert case.outcome == "error" and case.failed_stage == "simulator"
    # blank text is a reply with no text: asked again within the retries, then the client's error
    assert "the LLM student's completion failed" in case.message and "no text content" in case.message


def test_the_llm_student_without_an_endpoint_names_the_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("RAG_SIMULATOR_MODEL", "RAG_SIMULATOR_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    case = session(tmp_path, '{"simulator": "llm"}').run_case("dialogue", MISSING)
    assert case.outcome == "error"
    assert "the LLM student is not configured: set RAG_SIMULATOR_MODEL" in case.message


def test_hint_success_is_judged_when_a_judge_is_configured(
    tmp_path: Path, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "RAG_JUDGE_BASE_URL": openai_server.base_url,
        "RAG_JUDGE_MODEL": "judge-model",
        "RAG_JUDGE_API_KEY": "sk-judge",
    }
    judge = JudgeConfig.from_env(env, cache_dir=tmp_path / "cache")
    openai_server.set_default(
        "chat", lambda request: Reply('{"success": false, "reason": "the second hint gives the vertex away"}')
    )
    case = session(tmp_path, judge=judge).run_case("dialogue", MISSING)
    assert case.outcome == "fail" and case.failed_stage == "hint"
    assert (
        case.message
        == "hint failed: the hint judge found the hints unsuccessful: the second hint gives the vertex away"
    )
    assert case.details["dialogue_rates"]["hint_success"]["numerator"] == 0
    assert case.details["dialogue_rates"]["hint_success"]["denominator"] == 1
    assert case.details["usage"]["calls"] == 1
    prompt = openai_server.requests_of("chat")[0].json["messages"][1]["content"]
    assert "<conversation>" in prompt and MISSING.opening in prompt


def test_a_system_without_a_dialogue_call_is_skipped_with_the_reason(tmp_path: Path) -> None:
    class RetrievalOnly:
        def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
            return {"items": []}

        def describe(self) -> dict[str, Any]:
            return {}

    case = session(tmp_path, system=RetrievalOnly()).run_case("dialogue", MISSING)
    assert case.outcome == "skip" and "has no dialogue call" in case.message
