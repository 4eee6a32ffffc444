"""The dialogue tier through pytest: the demo dialogue set replayed against scripted tutors
(Python and HTTP); each faulty tutor fails exactly its gate; rates pooled exactly (equal
under -n 2); passk over dialogues; the results file's dialogue keys; a system without a
dialogue call skips the tier with its reason."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_eval.dialogue.metrics import compute_all
from rag_eval.dialogue.replay import replay
from rag_eval.gates.thresholds import load_thresholds
from tests.rag_eval._dialogue_systems import DEMO, TUTORS, demo_items
from tests.rag_eval._plugin_sandbox import HANDOVER_CHECK, Sandbox
from tests.support.scripted_http import ScriptedJSONServer, Status

ITEMS = demo_items()
N = len(ITEMS)
RATE_GATES = {
    "intent_accuracy": "min = 1.0",
    "missed_clarification_rate": "max = 0.0",
    "over_clarification_rate": "max = 0.0",
    "clarification_failure_3": "max = 0.0",
    "past_3_rounds": "max = 0.0",
    "hint_level_accuracy": "min = 1.0",
    "false_interception_rate": "max = 0.0",
    "final_leak_rate": "max = 0.0",
}
RESULT_KEYS = (
    "intent_accuracy",
    "missed_clarification_rate",
    "over_clarification_rate",
    "clarification_failure_3",
    "past_3_rounds",
    "hint_level_accuracy",
    "interception_rate",
    "false_interception_rate",
    "final_leak_rate",
)


def thresholds(extra: str = "", gates: dict[str, str] = RATE_GATES) -> str:
    lines = "\n".join(f"{k} = {{ {v} }}" for k, v in gates.items())
    return f"[defaults]\nmin_cases = 3\n\n[dialogue]\n{lines}\nerror_rate = {{ max = 0.0 }}\n{extra}"


@pytest.fixture(scope="session")
def http_warm() -> None:
    """One real call of the HTTP adapter before any in-process run: pytester drops the modules
    first imported during a run (httpcore's lazily imported backends among them), and fresh
    copies would no longer match the exception classes httpx maps for the later tests."""
    from rag_eval.adapters.http import HttpSystem
    from rag_eval.adapters.http_config import HttpConfig

    with ScriptedJSONServer(lambda path, body: Status(200, {"items": []})) as server:
        data = {"retrieve": {"url": f"{server.url}/r", "fields": {"ids": "items[].id"}}}
        HttpSystem(HttpConfig.parse(data, "warm-up")).retrieve("q")


@pytest.fixture
def sandbox(http_warm: None, sandbox: Sandbox) -> Sandbox:
    shutil.copy(DEMO, sandbox.dataset / "dialogues.jsonl")
    sandbox.add_dialogue_tests()
    sandbox.write_thresholds(thresholds())
    return sandbox


def pipeline(sandbox: Sandbox, name: str) -> list[str]:
    """A scripted Python tutor of tests/rag_eval/_dialogue_systems.py, chosen by [options] tutor."""
    config = sandbox.root / f"tutor-{name}.toml"
    config.write_text(
        f'pipeline = "tests.rag_eval._dialogue_systems:tutor"\n[options]\ntutor = "{name}"\n', encoding="utf-8"
    )
    return ["--rag-pipeline-config", str(config)]


def failed_gates(sandbox: Sandbox) -> set[str]:
    return {g["key"] for g in sandbox.results()["gates"] if not g["passed"]}


def test_the_faithful_tutor_passes_every_case_and_gate(sandbox: Sandbox) -> None:
    result = sandbox.run("-m", "dialogue", *pipeline(sandbox, "oracle"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    cases = sandbox.cases("dialogue")
    assert len(cases) == N and {c["outcome"] for c in cases.values()} == {"pass"}
    result.stdout.fnmatch_lines(
        ["dialogue: 40 pass", "PASS dialogue.over_clarification_rate = 0.0000* (need <= 0; n=34, 0/51)"]
    )


@pytest.mark.parametrize(
    ("tutor", "gates", "case"),
    [
        ("over_clarifier", {"over_clarification_rate"}, ("dlg-concept-001", "clarification", "turn 1")),
        (
            "never_clarifier",
            {"missed_clarification_rate", "clarification_failure_3", "past_3_rounds"},
            ("dlg-missing-001", "clarification", "turn 1"),
        ),
        ("reasker", {"over_clarification_rate"}, ("dlg-missing-001", "clarification", "turn 2")),
        ("hint_blocker", {"false_interception_rate"}, ("dlg-concept-001", "interception", "turn 1")),
        ("leaker", {"final_leak_rate"}, ("dlg-push-001", "interception", "turn 3")),
    ],
)
def test_each_faulty_tutor_fails_exactly_its_gate(
    sandbox: Sandbox, tutor: str, gates: set[str], case: tuple[str, str, str]
) -> None:
    result = sandbox.run("-m", "dialogue", *pipeline(sandbox, tutor))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert failed_gates(sandbox) == gates
    dialogue_id, step, turn = case
    failing = sandbox.cases("dialogue")[dialogue_id]
    assert failing["outcome"] == "fail" and failing["failed_stage"] == step
    assert failing["message"].startswith(f"{step} failed at {turn}:")


def test_a_leaking_tutor_fails_the_interception_gate_and_an_intercepting_one_passes(sandbox: Sandbox) -> None:
    sandbox.write_thresholds(thresholds("interception_rate = { min = 1.0, min_cases = 1 }\n"))
    assert sandbox.run("-m", "dialogue", *pipeline(sandbox, "leaker")).ret == pytest.ExitCode.TESTS_FAILED
    assert failed_gates(sandbox) == {"final_leak_rate", "interception_rate"}
    gate = next(g for g in sandbox.results()["gates"] if g["key"] == "interception_rate")
    assert (gate["numerator"], gate["denominator"], gate["n"], gate["value"]) == (0, 4, 4, 0.0)
    assert sandbox.run("-m", "dialogue", *pipeline(sandbox, "interceptor")).ret == pytest.ExitCode.OK
    assert sandbox.results()["dialogue_rates"]["dialogue.interception_rate"]["value"] == 1.0


def test_retrieval_off_gold_fails_the_cases_at_the_retrieval_step(sandbox: Sandbox) -> None:
    sandbox.write_thresholds(thresholds("pass_rate = { min = 1.0 }\n"))
    assert sandbox.run("-m", "dialogue", *pipeline(sandbox, "wrong_retriever")).ret == pytest.ExitCode.TESTS_FAILED
    assert failed_gates(sandbox) == {"pass_rate"}  # no rate measures retrieval: the cases fail, and pass_rate says so
    case = sandbox.cases("dialogue")["dlg-concept-001"]
    assert case["failed_stage"] == "retrieval"
    assert case["message"].startswith("retrieval failed at turn 1: gold evidence not retrieved at doc level")
    evidence = case["details"]["evidence"][0]
    assert evidence["judged"] and evidence["items"][0]["gold"] is False


def test_the_results_file_pools_every_rate_exactly(sandbox: Sandbox) -> None:
    sandbox.run("-m", "dialogue", *pipeline(sandbox, "leaker"))
    results = sandbox.results()
    expected = compute_all([replay(TUTORS["leaker"](ITEMS), item) for item in ITEMS])
    block = results["dialogue_rates"]
    for name in RESULT_KEYS:
        key = f"dialogue.{name}"
        rate = expected[name]
        assert (block[key]["numerator"], block[key]["denominator"]) == (rate.numerator, rate.denominator), key
        assert results["metrics"][key] == rate.value
        assert results["metrics_n"][key]["numerator"] == rate.numerator
        assert results["metrics_n"][key]["denominator"] == rate.denominator
        assert results["metrics_n"][key]["n"] == block[key]["n"]
    assert "dialogue.hint_success" not in block  # no judge configured: absent, never 0
    cannot = sorted(i.id for i in ITEMS if i.tags.get("scenario") == "cannot-answer")
    assert block["dialogue.clarification_failure_3"]["excluded"] == {"student_did_not_answer": cannot}
    case = sandbox.cases("dialogue")["dlg-push-001"]
    assert case["details"]["transcript"]["turns"][2]["final_leaks"] is True
    assert case["details"]["calls"] == {"turns": 3, "system_calls": 3, "student_replies": 2}
    assert set(results["items"]["dlg-push-001"]) >= {"opening", "expected_turns"}


def test_dialogue_cases_under_two_workers_equal_serial(sandbox: Sandbox) -> None:
    sandbox.write_conftest(HANDOVER_CHECK)  # the serial run's cases, handed over in process
    serial = sandbox.run_subprocess("-m", "dialogue", *pipeline(sandbox, "reasker"))
    first = sandbox.results()
    handed = sandbox.handed_over()
    assert set(handed) == {f"dialogue::{c['id']}" for c in first["cases"]} and set(handed.values()) == {"same"}
    parallel = sandbox.run_subprocess("-m", "dialogue", *pipeline(sandbox, "reasker"), "-n", "2")
    second = sandbox.results()
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    assert second["run"]["workers"] == 2
    assert first["metrics"] == second["metrics"] and first["dialogue_rates"] == second["dialogue_rates"]
    assert [g["value"] for g in first["gates"]] == [g["value"] for g in second["gates"]]


def test_passk_over_dialogues_replays_k_times_independently(sandbox: Sandbox) -> None:
    sandbox.write_thresholds('[passk]\n"pass^3" = { min = 0.9 }\n\n[passk.case]\nn = 3\nk = 3\n')
    result = sandbox.run("-m", "passk", "-k", "dialogue", *pipeline(sandbox, "flaky"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = sandbox.cases("passk")
    # every second replay over-clarifies the first turn of the 10 dialogues that need no clarification
    flaky = {i.id for i in ITEMS if not i.needs_clarification and i.expected_turns[0].action == "answer"}
    assert len(flaky) == 10 and {d for d, c in cases.items() if c["outcome"] == "fail"} == flaky
    some = cases[sorted(flaky)[0]]
    assert (some["details"]["c"], some["details"]["n"], some["details"]["class"]) == (2, 3, "flaky")
    assert [t["outcome"] for t in some["details"]["trials"]] == ["pass", "fail", "pass"]
    assert (some["metrics"]["pass@3"], some["metrics"]["pass^3"]) == (1.0, 0.0)
    block = sandbox.results()["dialogue_rates"]["passk"]
    assert (block["pass@3"]["numerator"], block["pass@3"]["denominator"]) == (N, N)
    assert (block["pass^3"]["numerator"], block["pass^3"]["denominator"]) == (N - 10, N)
    result.stdout.fnmatch_lines([f"FAIL passk.pass^3 = {(N - 10) / N:.4f}* (need >= 0.9; n={N})*"])


def test_a_system_without_a_dialogue_call_skips_the_tier_with_its_reason(sandbox: Sandbox) -> None:
    (sandbox.root / "retrieval_only.py").write_text(
        "class R:\n    def retrieve(self, question, top_k=None):\n        return []\n\ndef make():\n    return R()\n",
        encoding="utf-8",
    )
    result = sandbox.run("-m", "dialogue", "-rs", "--rag-pipeline", "retrieval_only:make")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=N)
    result.stdout.fnmatch_lines(
        [
            f"SKIPPED [[]{N}[]] *: the system under test (--rag-pipeline retrieval_only:make) has no dialogue call*"
            "so the dialogue tier does not apply"
        ]
    )
    assert not sandbox.results_path.exists()  # nothing ran: no case, no gate


@pytest.fixture
def http_tutor() -> Iterator[ScriptedJSONServer]:
    """A scripted tutor behind HTTP: /api/dialogue answers like the Python Leaker."""
    tutor = TUTORS["leaker"](ITEMS)

    def answer(path: str, body: Any) -> Status:
        if path == "/api/dialogue":
            return Status(200, {"reply": tutor.dialogue(body["turns"], body["context"])})
        return Status(200, {"items": []})

    with ScriptedJSONServer(answer) as server:
        yield server


def test_an_http_tutor_is_evaluated_like_the_python_one(sandbox: Sandbox, http_tutor: ScriptedJSONServer) -> None:
    config = sandbox.root / "tutor.toml"
    config.write_text(
        f'pipeline = "http"\n[retrieve]\nurl = "{http_tutor.url}/api/retrieve"\n[retrieve.fields]\nids = "items[].id"\n'
        f'[dialogue]\nurl = "{http_tutor.url}/api/dialogue"\n'
        '[dialogue.fields]\naction = "reply.action"\nmessage = "reply.message"\nintent = "?reply.intent"\n'
        'asked_conditions = "?reply.asked_conditions"\nhint_level = "?reply.hint_level"\n'
        'candidate = "?reply.candidate"\ninterception = "?reply.interception"\n'
        '[dialogue.retrieval]\nids = "?reply.retrieval.items[].id"\ndoc_ids = "?reply.retrieval.items[].metadata.doc_id"\n',
        encoding="utf-8",
    )
    result = sandbox.run("-m", "dialogue", "--rag-pipeline-config", str(config))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert failed_gates(sandbox) == {"final_leak_rate"}
    http = sandbox.results()["dialogue_rates"]
    sandbox.run("-m", "dialogue", *pipeline(sandbox, "leaker"))
    assert http == sandbox.results()["dialogue_rates"]
    first = next(r for r in http_tutor.requests if r.path == "/api/dialogue")
    assert first.json["turns"][0]["role"] == "user" and isinstance(first.json["context"], dict)


def test_a_missing_dialogue_set_given_explicitly_is_a_collection_error(sandbox: Sandbox, tmp_path: Path) -> None:
    result = sandbox.run(
        "-m", "dialogue", "--rag-dialogues", str(tmp_path / "none.jsonl"), *pipeline(sandbox, "oracle")
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*--rag-dialogues*none.jsonl: no such file*"])


def test_the_demo_gates_every_dialogue_rate() -> None:
    """thresholds.toml gates each dialogue rate for rag_app's tutor (measured values in its comments)."""
    thresholds = load_thresholds(Path(__file__).resolve().parents[2] / "thresholds.toml")
    metrics = {g.metric for g in thresholds.gates if g.tier == "dialogue"}
    assert metrics >= set(RATE_GATES) | {"interception_rate", "error_rate", "pass_rate"}
    assert thresholds.case_rules("dialogue").options == {"clarification_limit": 3}
