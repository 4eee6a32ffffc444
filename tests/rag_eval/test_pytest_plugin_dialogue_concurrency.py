"""Dialogue cases run ahead of their tests (``--rag-concurrency``) through pytest, against
the scripted OpenAI-compatible server over real HTTP: a case's whole conversation with
the model (the LLM student's turns, the hint judge and its repair) runs on its thread
ahead of its test, between the system's turns; calls per dialogue are exactly the scripted
expectation at any concurrency (tests/support/dialogue_replies.py), the results equal a
serial run's, a rerun on the warm cache asks again only the dialogues that ended without
a verdict, and a tutor that does not declare ``concurrency`` is called one call at a time."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.rag_eval._dialogue_systems import DEMO, OracleTutor, demo_items
from tests.rag_eval._plugin_sandbox import Sandbox
from tests.support.counting_tutor import MOST_FILE
from tests.support.dialogue_replies import bucket, calls_by_dialogue, expected_calls, responder, scripted_costs
from tests.support.in_flight import InFlight, without
from tests.support.openai_server import Responder, ScriptedOpenAIServer, Status, Step

ITEMS = demo_items()
OPENINGS = [i.opening for i in ITEMS]
THRESHOLDS = '[dialogue.case]\nsimulator = "llm"\n'
COSTS = scripted_costs(ITEMS, OracleTutor(ITEMS))


@pytest.fixture
def sandbox(sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    shutil.copy(DEMO, sandbox.dataset / "dialogues.jsonl")
    sandbox.add_dialogue_tests()
    sandbox.write_thresholds(THRESHOLDS)
    for prefix, model in (("RAG_SIMULATOR", "student-model"), ("RAG_JUDGE", "judge-model")):
        monkeypatch.setenv(f"{prefix}_BASE_URL", openai_server.base_url)
        monkeypatch.setenv(f"{prefix}_MODEL", model)
        monkeypatch.setenv(f"{prefix}_API_KEY", f"sk-{model}-secret")
        monkeypatch.delenv(f"{prefix}_CONCURRENCY", raising=False)
    monkeypatch.delenv("RAG_EVAL_CONCURRENCY", raising=False)
    return sandbox


def run(
    sandbox: Sandbox,
    server: ScriptedOpenAIServer,
    level: int,
    cache: Path,
    system: str = "tests.support.counting_tutor:tutor",
    *extra: str,
    wrap: Callable[[Responder], Responder] = lambda answer: answer,
) -> dict[str, Any]:
    """One ``-m dialogue`` run on a fresh scripted model; the cases, calls per dialogue, bodies,
    the most calls held at once by each endpoint (student, hint judge) and by the system."""
    server.reset()
    gauges = {"student": InFlight(0.05), "judge": InFlight(0.05)}
    server.set_default("chat", wrap(responder(OPENINGS, {k: g.hold for k, g in gauges.items()})))
    pipeline = ["--rag-pipeline-config", system] if system.endswith(".toml") else ["--rag-pipeline", system]
    result = sandbox.run(
        "-m", "dialogue", *pipeline, "--rag-concurrency", str(level),
        "--rag-judge-cache", str(cache), *extra,
    )  # fmt: skip
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    requests = server.requests_of("chat")
    return {
        "cases": without(sandbox.cases("dialogue")),
        "calls": calls_by_dialogue(requests, OPENINGS),
        "bodies": Counter(json.dumps(r.json, sort_keys=True) for r in requests),
        "most": {k: g.most for k, g in gauges.items()},
        "system_most": int((sandbox.root / MOST_FILE).read_text()),
    }


def test_a_dialogues_whole_conversation_runs_ahead_with_the_serial_results_and_calls(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    serial = run(sandbox, openai_server, 1, tmp_path / "serial")
    assert serial["calls"] == expected_calls(COSTS)  # per dialogue, exactly as scripted
    assert serial["most"] == {"student": 1, "judge": 1} and serial["system_most"] == 1
    kinds = Counter(bucket(i) for i in range(len(ITEMS)))
    assert kinds["repaired"] and kinds["unrepairable"], kinds
    cases = serial["cases"]
    unrepairable = {ITEMS[i].id for i, c in enumerate(COSTS) if bucket(i) == "unrepairable" and c.judged}
    assert unrepairable and {cid for cid, c in cases.items() if c["failed_stage"] == "hint"} == unrepairable
    assert all("the hint judge failed: judge error" in cases[cid]["message"] for cid in unrepairable)

    ahead = run(sandbox, openai_server, 8, tmp_path / "ahead")
    assert ahead["calls"] == serial["calls"]
    # the model's calls overlapped, never more than the setting (one server: one shared limiter)
    assert all(1 <= most <= 8 for most in ahead["most"].values()) and max(ahead["most"].values()) >= 2
    assert ahead["system_most"] == 1  # the tutor says nothing: one call at a time all the same
    # the one identical request sent twice is a blank student reply asked again (no text: a
    # transport-level fault), once per repaired dialogue with a student reply
    repeated = sum(n - 1 for n in ahead["bodies"].values())
    assert repeated == sum(1 for i, c in enumerate(COSTS) if bucket(i) == "repaired" and c.student)
    assert ahead["cases"] == cases  # the serial results, timings aside

    rerun = run(sandbox, openai_server, 8, tmp_path / "ahead")
    assert rerun["calls"] == [c.rerun(bucket(i)) for i, c in enumerate(COSTS)]  # only the unrepairable judged
    assert {cid: c["outcome"] for cid, c in rerun["cases"].items()} == {cid: c["outcome"] for cid, c in cases.items()}


def test_a_tutor_that_declares_concurrency_gets_that_many_calls_between_the_turns(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    config = sandbox.root / "tutor.toml"
    config.write_text(
        'pipeline = "tests.support.counting_tutor:tutor"\n[options]\nconcurrency = 4\nhold_s = 0.1\n', encoding="utf-8"
    )
    ahead = run(sandbox, openai_server, 8, tmp_path / "c", str(config))
    assert ahead["calls"] == expected_calls(COSTS)
    assert 2 <= ahead["system_most"] <= 4  # the dialogues' system turns overlapped, never past what it declared


def test_the_budget_holds_for_the_student_and_the_judge_together_with_calls_in_flight(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    budget = 3000
    system = "tests.support.counting_tutor:tutor"
    ahead = run(sandbox, openai_server, 8, tmp_path / "c", system, "--rag-judge-budget-tokens", str(budget))
    cases = ahead["cases"].values()
    usage = [c["details"].get("usage") or {} for c in cases]
    spent = sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0) for u in usage)
    # one budget for both clients: a call goes only while the spend plus every call in flight,
    # the student's and the judge's, is under it, so only the last call sent may cross it, by
    # at most the largest scripted call (the hint judge's: 600 + 30 tokens)
    assert budget <= spent < budget + 600 + 30
    stopped = [c for c in cases if f"budget_tokens {budget} reached" in c["message"]]
    assert stopped and all(c["outcome"] != "pass" for c in stopped)  # a case the budget stopped never passes
    assert any(c["outcome"] == "skip" and c["message"].startswith("not run: ") for c in stopped)


def test_a_dialogue_the_budget_stopped_before_its_first_call_is_not_run_as_in_the_judge_tier(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    # a 1-token budget lets one call go (nothing spent yet), then refuses every other call:
    # the dialogue that sent it started (its later calls refused: an error, not a skip); every
    # other dialogue that makes model calls is "not run"; one that makes none runs as usual
    serial = run(sandbox, openai_server, 1, tmp_path / "c", "tests.support.counting_tutor:tutor",
                 "--rag-judge-budget-tokens", "1")  # fmt: skip
    assert len(openai_server.requests_of("chat")) == 1
    calling = sum(1 for n in expected_calls(COSTS) if n > 0)
    cases = list(serial["cases"].values())
    skipped = [c for c in cases if c["outcome"] == "skip"]
    assert len(skipped) == calling - 1
    assert all(c["message"].startswith("not run: judge budget_tokens 1 reached") for c in skipped)
    assert all(c["failed_stage"] is None for c in skipped)
    assert sum(1 for c in cases if c["outcome"] == "error" or c["failed_stage"] == "hint") == 1


def test_the_student_spends_against_the_runs_budget_without_a_judge(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("BASE_URL", "MODEL", "API_KEY"):
        monkeypatch.delenv(f"RAG_JUDGE_{var}", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # no judge: only the student calls; a 1-token budget lets its first call go and refuses the rest
    serial = run(sandbox, openai_server, 1, tmp_path / "c", "tests.support.counting_tutor:tutor",
                 "--rag-judge-budget-tokens", "1")  # fmt: skip
    assert len(openai_server.requests_of("chat")) == 1
    students = sum(1 for c in COSTS if c.student > 0)
    skipped = [c for c in serial["cases"].values() if c["outcome"] == "skip"]
    assert len(skipped) == students - 1
    assert all(c["message"].startswith("not run: judge budget_tokens 1 reached") for c in skipped)


def test_a_429_to_the_hint_judge_holds_the_student_on_the_same_server(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """The student and the judge on one server share one rate limiter and one breaker (the
    tier joins them): the fifth hint-judge request gets a 429 with Retry-After 1 s, and no
    request of either client is sent until that second has passed, while the dialogues that
    were mid-conversation keep needing the student. The results are the 429-free run's."""
    plain = run(sandbox, openai_server, 8, tmp_path / "plain")
    lock, judged, refused = threading.Lock(), [0], []

    def wrap(answer: Responder) -> Responder:
        def respond(req: Any) -> Step:
            with lock:
                judged[0] += req.get("model") == "judge-model"
                if judged[0] == 5 and not refused:  # mid-run: students are mid-conversation
                    refused.append(time.time())
                    return Status(429, headers={"Retry-After": "1"})
            return answer(req)

        return respond

    held = run(sandbox, openai_server, 8, tmp_path / "held", wrap=wrap)
    assert len(refused) == 1
    after = [r.received_at - refused[0] for r in openai_server.requests_of("chat") if r.received_at > refused[0]]
    models = {r.json["model"] for r in openai_server.requests_of("chat") if r.received_at > refused[0] + 0.9}
    # requests already on the wire when the 429 went back arrive within a few ms; after
    # that nothing until the Retry-After has passed, then both clients again
    assert after and not [t for t in after if 0.1 < t < 0.9], after
    assert models == {"student-model", "judge-model"}
    assert {c: v["outcome"] for c, v in held["cases"].items()} == {c: v["outcome"] for c, v in plain["cases"].items()}
