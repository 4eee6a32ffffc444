"""Cases run ahead of their tests (``--rag-concurrency``, rag_eval.plugin.ahead) through
pytest, against the scripted OpenAI-compatible server over real HTTP: the judge's calls
overlap, the results are those of a serial run, each case is called once (serial, and
under ``-n 2`` by the worker that runs it), a rerun makes no call, a system that takes
one call at a time gets one, a 429 slows every thread, the budget holds with calls in
flight, and a bad setting stops the run naming where it was set."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rag_eval.llm.client import LLMClient
from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.messages import ChatRequest
from rag_eval.llm.policy import CallPolicy
from tests.rag_eval._plugin_sandbox import POSITIVE_IDS, PYTEST_INI, Sandbox
from tests.support.in_flight import InFlight, without
from tests.support.judge_replies import native_judge_reply
from tests.support.openai_server import ScriptedOpenAIServer, one_request_per

N_POS = len(POSITIVE_IDS)
THRESHOLDS = "[judge]\nerror_rate = { max = 0.0 }\n"


@pytest.fixture
def sandbox(sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    sandbox.add_judge_tests()
    sandbox.write_thresholds(THRESHOLDS)
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-concurrency-test")
    monkeypatch.delenv("RAG_EVAL_CONCURRENCY", raising=False)
    monkeypatch.delenv("RAG_JUDGE_CONCURRENCY", raising=False)
    return sandbox


def judge_cases(sandbox: Sandbox) -> dict[str, Any]:
    return without(sandbox.cases("judge"))


def prompts(server: ScriptedOpenAIServer) -> list[str]:
    return [json.dumps(r.json["messages"], sort_keys=True) for r in server.requests_of("chat")]


def test_cases_run_ahead_overlap_their_calls_and_give_the_serial_results(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    judge = InFlight(0.3)
    openai_server.set_default("chat", judge.answering(native_judge_reply))
    serial = sandbox.run("-m", "judge", "--rag-concurrency", "1", "--rag-judge-cache", str(tmp_path / "serial"))
    assert serial.ret == pytest.ExitCode.OK, serial.stdout.str()
    assert openai_server.calls("chat") == N_POS and judge.most == 1
    expected = judge_cases(sandbox)
    assert len(expected) == N_POS and all(c["outcome"] == "pass" for c in expected.values())

    openai_server.reset()
    judge.reset()
    ahead = sandbox.run("-m", "judge", "--rag-concurrency=4", "--rag-judge-cache", str(tmp_path / "ahead"))
    assert ahead.ret == pytest.ExitCode.OK, ahead.stdout.str()
    assert openai_server.calls("chat") == N_POS  # each case called once
    assert len(set(prompts(openai_server))) == N_POS
    assert 2 <= judge.most <= 4  # the calls overlapped, never more than the setting
    assert judge_cases(sandbox) == expected

    openai_server.reset()
    rerun = sandbox.run("-m", "judge", "--rag-concurrency", "4", "--rag-judge-cache", str(tmp_path / "ahead"))
    assert rerun.ret == pytest.ExitCode.OK
    assert openai_server.calls("chat") == 0  # every verdict from the cache
    again = judge_cases(sandbox)
    assert {cid: (c["outcome"], c["metrics"]) for cid, c in again.items()} == {
        cid: (c["outcome"], c["metrics"]) for cid, c in expected.items()
    }


def test_under_xdist_each_worker_runs_ahead_only_the_cases_it_runs(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.set_default("chat", InFlight(0.2).answering(native_judge_reply))
    serial = sandbox.run("-m", "judge", "--rag-concurrency", "1", "--rag-judge-cache", str(tmp_path / "serial"))
    assert serial.ret == pytest.ExitCode.OK
    expected = judge_cases(sandbox)
    openai_server.reset()
    parallel = sandbox.run_subprocess(
        "-m", "judge", "-n", "2", "--rag-concurrency", "4", "--rag-judge-cache", str(tmp_path / "xdist")
    )
    assert parallel.ret == pytest.ExitCode.OK, parallel.stdout.str()
    calls = prompts(openai_server)
    assert len(calls) == N_POS and len(set(calls)) == N_POS  # no case called by two workers
    assert judge_cases(sandbox) == expected


SYSTEM = """
import threading
import time

TEXT = {"deriv": "The derivative of x squared is two x.", "vec": "The dot product equals lengths times cosine."}
_lock = threading.Lock()
state = {"now": 0, "most": 0}


class Sut:
    CONCURRENCY_LINE

    def retrieve(self, question, top_k=None):
        return {"items": [{"id": "deriv", "text": TEXT["deriv"], "metadata": {"doc_id": "deriv"}}]}

    def chat(self, question, top_k=None):
        with _lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.1)
        with _lock:
            state["now"] -= 1
            most = state["most"]
        with open("overlap.txt", "w") as out:
            out.write(str(most))
        return {"answer": "Two x [1].", "context": self.retrieve(question)["items"]}
"""


@pytest.mark.parametrize(("declared", "most"), [("", 1), ("concurrency = 4", 4)], ids=["says-nothing", "says-4"])
def test_a_system_is_called_at_most_as_often_at_once_as_it_says(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path, declared: str, most: int
) -> None:
    """An in-process object that says nothing is not thread-safe: one call at a time, while the
    judge's calls still overlap; one that declares ``concurrency = 4`` gets up to 4."""
    judge = InFlight(0.3)
    openai_server.set_default("chat", judge.answering(native_judge_reply))
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(
        SYSTEM.replace("CONCURRENCY_LINE", declared or "pass"), encoding="utf-8"
    )
    result = sandbox.run(
        "-m",
        "judge",
        "--rag-pipeline",
        "sandbox_sut:Sut",
        "--rag-concurrency",
        "4",
        "--rag-judge-cache",
        str(tmp_path / "c"),
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    overlap = int((sandbox.root / "overlap.txt").read_text())
    assert (overlap == 1) if most == 1 else (2 <= overlap <= most)
    assert judge.most >= 2


def test_a_429_slows_every_thread_fewer_429s_than_independent_loops_and_no_case_errors(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    respond, refused = one_request_per(0.15, native_judge_reply)
    openai_server.set_default("chat", respond)
    monkeypatch.setenv("RAG_JUDGE_MAX_RETRIES", "30")
    # the reference: as many independent retry loops as threads, each with its own limiter
    policy = CallPolicy(timeout=10.0, max_retries=30, concurrency=1)
    loops = [
        LLMClient(Endpoint("RAG_JUDGE", base_url=openai_server.base_url, model="judge-model", api_key="sk-x"), policy)
        for _ in range(4)
    ]
    request = ChatRequest("judge-model", [{"role": "user", "content": "QUESTION:\nq\n"}], max_tokens=100)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda i: loops[i % 4].complete(request), range(N_POS)))
    independent, refused[0] = refused[0], 0

    result = sandbox.run("-m", "judge", "--rag-concurrency", "4", "--rag-judge-cache", str(tmp_path / "c"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    cases = sandbox.cases("judge")
    assert len(cases) == N_POS and all(c["outcome"] == "pass" for c in cases.values())
    assert refused[0] < independent, (refused[0], independent)


def test_the_budget_is_never_exceeded_with_calls_in_flight(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.set_default("chat", InFlight(0.2).answering(native_judge_reply))  # 1000 tokens per verdict
    budget = ["--rag-judge-budget-tokens", "2500"]
    sandbox.run("-m", "judge", "--rag-concurrency", "1", "--rag-judge-cache", str(tmp_path / "s"), *budget)
    serial_calls = openai_server.calls("chat")
    assert serial_calls == 3  # 0, 1000, 2000 are under 2500: a serial run stops after the third
    openai_server.reset()
    result = sandbox.run("-m", "judge", "--rag-concurrency", "4", "--rag-judge-cache", str(tmp_path / "c"), *budget)
    calls = openai_server.calls("chat")
    assert 1 <= calls <= serial_calls  # calls in flight count as spent: never past a serial run
    cases = sandbox.cases("judge")
    assert sum(c["details"].get("usage", {}).get("total_tokens", 0) for c in cases.values()) <= 1000 * serial_calls
    outcomes = sorted(c["outcome"] for c in cases.values())
    assert outcomes == sorted(["pass"] * calls + ["skip"] * (N_POS - calls)), result.stdout.str()


@pytest.mark.parametrize(
    ("how", "where"),
    [
        (["--rag-concurrency", "0"], "--rag-concurrency = '0'"),
        (["--rag-concurrency=-2"], "--rag-concurrency = '-2'"),
        ("ini", "ini rag_eval_concurrency (in pytest.ini) = 'many'"),
        ("env", "the environment variable RAG_EVAL_CONCURRENCY = '1.5'"),
    ],
    ids=["space-form", "equals-form", "ini", "env"],
)
def test_a_bad_setting_stops_the_run_naming_where_it_was_set(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, how: Any, where: str
) -> None:
    args: list[str] = []
    if how == "ini":
        (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "rag_eval_concurrency = many\n", encoding="utf-8")
    elif how == "env":
        monkeypatch.setenv("RAG_EVAL_CONCURRENCY", "1.5")
    else:
        args = how
    result = sandbox.run("-m", "judge", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{where}: a whole number >= 1*"])


def rejected_then_repaired() -> Any:
    """A scripted judge: for one case in three (by its prompt) the first verdict has a
    relevance verdict outside its set ("maybe": it parses, the checks reject it); the
    first such case gets "maybe" again after the repair (the request that quotes the reply
    back), the others a valid verdict."""
    import threading

    from tests.support.judge_replies import native_verdict
    from tests.support.openai_server import reply

    lock, unrepairable = threading.Lock(), set()

    def answer(request: Any) -> Any:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        repairing = any(m["role"] == "assistant" for m in request["messages"])
        verdict = native_verdict(request)
        if sum(map(ord, user)) % 3 == 0:
            with lock:
                if not unrepairable:
                    unrepairable.add(user)
                if not repairing or user in unrepairable:
                    verdict["relevance"]["verdict"] = "maybe"
        return reply(json.dumps(verdict, ensure_ascii=False), prompt_tokens=800, completion_tokens=200)

    return answer


def test_a_verdict_rejected_for_a_semantic_reason_is_never_sent_again_identically(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.set_default("chat", InFlight(0.05).answering(rejected_then_repaired()))
    sandbox.write_thresholds("")
    sandbox.run("-m", "judge", "--rag-concurrency", "4", "--rag-judge-cache", str(tmp_path / "c"))
    bodies = [json.dumps(r.json, sort_keys=True) for r in openai_server.requests_of("chat")]
    assert len(bodies) == len(set(bodies))  # each request body at most once in the run
    cases = sandbox.cases("judge")
    repaired = [c for c in cases.values() if c["details"].get("judge", {}).get("repair_errors")]
    failed = [c for c in cases.values() if c["outcome"] == "error"]
    assert len(failed) == 1 and repaired, "the scripted buckets give both kinds on the sandbox's cases"
    assert all("maybe" in c["details"]["judge"]["repair_errors"][0] for c in repaired)
    assert all(c["details"]["usage"]["calls"] == 2 for c in repaired + failed)  # first call, one repair
    assert all(c["details"]["usage"]["repairs"] == 1 for c in repaired + failed)
    assert len(bodies) == N_POS + len(repaired) + len(failed)
