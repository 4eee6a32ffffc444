"""The judge tier through pytest: skipped cleanly without a judge, one cached call per
case with one, errors counted and gated, and the key never written anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.rag_eval._plugin_sandbox import HANDOVER_CHECK, POSITIVE_IDS, Sandbox
from tests.support.judge_replies import native_judge_reply
from tests.support.openai_server import ScriptedOpenAIServer, raw

KEY = "sk-judge-key-NEVER-WRITTEN"
N_POS = len(POSITIVE_IDS)
THRESHOLDS = """
[judge]
faithfulness = { min = 0.9 }
relevance = { min = 0.9 }
error_rate = { max = 0.0 }
"""


@pytest.fixture
def sandbox(sandbox: Sandbox) -> Sandbox:
    """The shared sandbox plus the judge test of eval_tests/test_rag.py."""
    sandbox.add_judge_tests()
    return sandbox


@pytest.fixture
def judge_env(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", KEY)
    openai_server.set_default("chat", native_judge_reply)
    return openai_server


def test_without_a_judge_the_tier_is_skipped_with_one_reason(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RAG_JUDGE_BASE_URL", "RAG_JUDGE_MODEL", "RAG_JUDGE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    sandbox.write_thresholds(THRESHOLDS + "\n[retrieval]\npass_rate = { min = 0.0 }\n")
    result = sandbox.run("-m", "judge or retrieval", "-rs")
    result.assert_outcomes(skipped=N_POS, passed=len(POSITIVE_IDS) + 2, deselected=len(POSITIVE_IDS) + 2)
    result.stdout.fnmatch_lines(["SKIPPED [[]*[]] *judge not configured: set RAG_JUDGE_MODEL, RAG_JUDGE_BASE_URL*"])
    assert result.ret == pytest.ExitCode.OK  # judge gates are not evaluated: the tier did not run
    assert all(g["tier"] != "judge" for g in sandbox.results()["gates"])


def test_one_judge_call_per_case_then_zero_on_rerun(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    sandbox.write_thresholds(THRESHOLDS)
    cache = tmp_path / "judge-cache"
    result = sandbox.run("-m", "judge", "--rag-judge-cache", str(cache))
    result.assert_outcomes(passed=N_POS, deselected=2 * len(POSITIVE_IDS) + 4)
    assert result.ret == pytest.ExitCode.OK
    assert judge_env.calls("chat") == N_POS  # one call per case for every judge metric
    results = sandbox.results()
    # 2 claims, both "yes": faithfulness 2 / (2 + 0) = 1.0 on every case
    faithfulness = results["metrics_n"]["judge.faithfulness"]
    assert {k: faithfulness[k] for k in ("value", "n", "errors")} == {"value": 1.0, "n": N_POS, "errors": 0}
    assert faithfulness["ci_method"] == "wilson" and faithfulness["ci"][1] == 1.0  # every score 1: a proportion
    assert results["metrics"]["judge.relevance"] == 1.0
    assert results["run"]["usage"]["judge"]["calls"] == N_POS
    assert results["run"]["usage"]["judge"]["prompt_tokens"] == 800 * N_POS
    assert all(h.header("authorization") == f"Bearer {KEY}" for h in judge_env.requests)

    rerun = sandbox.run("-m", "judge", "--rag-judge-cache", str(cache))
    assert rerun.ret == pytest.ExitCode.OK
    assert judge_env.calls("chat") == N_POS  # unchanged suite: zero new calls
    assert sandbox.results()["run"]["usage"]["judge"]["cached_calls"] == N_POS
    rerun.stdout.fnmatch_lines([f"judge: {N_POS} calls ({N_POS} from cache)*"])

    fresh = sandbox.run("-m", "judge", "--rag-judge-cache", str(cache), "--rag-fresh")
    assert fresh.ret == pytest.ExitCode.OK
    assert judge_env.calls("chat") == 2 * N_POS

    for path in [sandbox.results_path, *cache.rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_a_malformed_judge_is_an_error_counted_by_the_gate(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No retries: their backoff slept ~45 s here; retrying a malformed reply is
    # test_llm_client.py's and test_judge_native.py's subject, the gate's counting is this one's.
    monkeypatch.setenv("RAG_JUDGE_MAX_RETRIES", "0")
    judge_env.set_default("chat", lambda req: raw(b'{"claims": [ {'))
    sandbox.write_thresholds(THRESHOLDS)
    result = sandbox.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "c"))
    result.assert_outcomes(xfailed=N_POS, deselected=2 * len(POSITIVE_IDS) + 4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"judge: {N_POS} error",
            f"FAIL judge.faithfulness = 0.0000* (need >= 0.9; n={N_POS}, incl. {N_POS} errors counted as 0)*",
            f"FAIL judge.error_rate = 1.0000* (need <= 0; n={N_POS}, {N_POS} errors)*",
        ]
    )
    case = json.loads(json.dumps(sandbox.cases("judge")))[POSITIVE_IDS[0]]
    assert case["outcome"] == "error" and case["failed_stage"] == "judge" and "malformed" in case["message"]


def test_a_serial_run_hands_each_judged_case_over_equal_to_its_json(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """The judged case (verdict, claims, per-claim details) handed to the controller in
    process equals what an xdist worker would send as JSON."""
    sandbox.write_conftest(HANDOVER_CHECK)
    sandbox.write_thresholds(THRESHOLDS)
    result = sandbox.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "c"))
    assert result.ret == pytest.ExitCode.OK
    handed = sandbox.handed_over()
    assert set(handed) == {f"judge::{i}" for i in POSITIVE_IDS} and set(handed.values()) == {"same"}
    assert all(c["details"]["judge"]["claims"] for c in sandbox.cases("judge").values())


def test_the_cache_holds_under_two_workers(sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path) -> None:
    sandbox.write_thresholds(THRESHOLDS)
    cache = tmp_path / "judge-cache"
    first = sandbox.run_subprocess("-m", "judge", "-n", "2", "--rag-judge-cache", str(cache))
    assert first.ret == pytest.ExitCode.OK
    assert judge_env.calls("chat") == N_POS
    second = sandbox.run_subprocess("-m", "judge", "-n", "2", "--rag-judge-cache", str(cache))
    assert second.ret == pytest.ExitCode.OK
    assert judge_env.calls("chat") == N_POS  # second run: zero calls


def test_both_engines_give_results_for_the_same_cases(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from tests.support.deepeval_replies import Responder

    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    native = sandbox.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "native"))
    assert native.ret == pytest.ExitCode.OK
    native_cases = sandbox.cases("judge")
    judge_env.set_default("chat", Responder())
    deep = sandbox.run("-m", "judge", "--rag-judge-engine", "deepeval", "--rag-judge-cache", str(tmp_path / "deep"))
    assert deep.ret == pytest.ExitCode.OK
    deep_cases = sandbox.cases("judge")
    assert set(native_cases) == set(deep_cases) == set(POSITIVE_IDS)
    for cid in POSITIVE_IDS:
        assert "faithfulness" in native_cases[cid]["metrics"]
        assert {"deepeval.faithfulness", "deepeval.answer_relevancy"} <= set(deep_cases[cid]["metrics"])
    # no reference answers in the sandbox: deepeval's contextual metrics are left out, not zero
    assert "judge.deepeval.contextual_recall" not in sandbox.results()["metrics"]


def test_a_reached_budget_stops_new_calls_and_keeps_what_was_computed(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    # every scripted reply uses 800 + 200 tokens: the first case spends the whole budget
    result = sandbox.run(
        "-m", "judge", "--rag-judge-cache", str(tmp_path / "c"), "--rag-judge-budget-tokens", "1000", "-rs"
    )
    result.assert_outcomes(passed=1, skipped=N_POS - 1, deselected=2 * len(POSITIVE_IDS) + 4)
    result.stdout.fnmatch_lines(["SKIPPED * not run: *budget*"])
    assert judge_env.calls("chat") == 1
    cases = sandbox.cases("judge")
    assert sorted(c["outcome"] for c in cases.values()) == ["pass"] + ["skip"] * (N_POS - 1)


def test_a_judge_tier_whose_every_case_skipped_fails_the_gate(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    args = ("-m", "judge", "--rag-judge-cache", str(tmp_path / "c"), "--rag-judge-budget-tokens", "0")
    result = sandbox.run(*args)
    result.assert_outcomes(skipped=N_POS, deselected=2 * len(POSITIVE_IDS) + 4)
    assert judge_env.calls("chat") == 0
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # selected, none measured: not a silent pass
    (gate,) = sandbox.results()["gates"]
    assert (gate["metric"], gate["value"], gate["passed"]) == ("judge.cases_run", 0.0, False)
    result.stdout.fnmatch_lines(
        [
            f"FAIL judge.cases_run = 0.0000* (need >= 1; n=0) (all {N_POS} selected cases were skipped*",
            "rag-eval gate FAILED: 1 of 1 gates failed*",
        ]
    )

    sandbox.write_thresholds('[defaults]\nunmeasured = "pass"\n\n[judge]\nerror_rate = { max = 0.0 }\n')
    allowed = sandbox.run(*args)
    assert allowed.ret == pytest.ExitCode.OK and sandbox.results()["gates"] == []  # the documented opt-out


def test_the_same_model_judging_its_own_answers_is_warned_about() -> None:
    from rag_eval.core.case import CaseResult
    from rag_eval.results.build import tier_warnings

    own = CaseResult(id="a", tier="judge", outcome="pass", details={"judge_model": "qwen", "generator": "openai:qwen"})
    other = CaseResult(
        id="b", tier="judge", outcome="pass", details={"judge_model": "qwen", "generator": "extractive-baseline"}
    )
    assert tier_warnings([other]) == []
    (warning,) = tier_warnings([own, other])
    assert "grading its own answers inflates scores" in warning and "RAG_JUDGE_MODEL" in warning


def test_deepeval_metrics_are_selectable(sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path) -> None:
    from tests.support.deepeval_replies import Responder

    judge_env.set_default("chat", Responder())
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    result = sandbox.run(
        "-m",
        "judge",
        "--rag-judge-engine",
        "deepeval",
        "--rag-deepeval-metrics",
        "answer_relevancy",
        "--rag-judge-cache",
        str(tmp_path / "c"),
    )
    assert result.ret == pytest.ExitCode.OK
    metrics = sandbox.results()["metrics"]
    assert "judge.deepeval.answer_relevancy" in metrics and "judge.deepeval.faithfulness" not in metrics
    bad = sandbox.run("-m", "judge", "--rag-deepeval-metrics", "faithfulnes")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--rag-deepeval-metrics: unknown *'faithfulnes'*; valid: faithfulness, answer_relevancy*"]
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_the_judge_tier_reports_its_progress_also_under_xdist(
    sandbox: Sandbox,
    judge_env: ScriptedOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workers: tuple[str, ...],
) -> None:
    """'judge: 7/7 cases, 3.1 cases/s' on the controller; under xdist the total comes from a
    worker (the controller collects nothing). Quiet under -q."""
    monkeypatch.setattr("rag_eval.plugin.terminal.JUDGE_PROGRESS_MIN", 1)  # the sandbox has 7 judge cases, not 20
    sandbox.write_thresholds(THRESHOLDS)
    result = sandbox.run("-m", "judge", *workers, "--rag-judge-cache", str(tmp_path / "cache"))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"judge: {N_POS}/{N_POS} cases, * cases/s*"])  # on a line of its own
    rates = [float(m.group(1)) for m in re.finditer(r"judge: \d+/\d+ cases, ([0-9.]+) cases/s", result.stdout.str())]
    assert rates[-1] > 0  # timed from the first judge case on
    quiet = sandbox.run("-q", "-m", "judge", *workers, "--rag-judge-cache", str(tmp_path / "cache"))
    assert quiet.ret == pytest.ExitCode.OK
    assert not [line for line in quiet.stdout.lines if re.match(r"judge: \d+/\d+ cases", line)]


def test_under_xdist_one_budget_holds_across_the_workers(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """The judge tier makes one spending ledger on the controller and hands it to each worker
    (``Tier.worker_input``): 2 workers share one budget instead of each spending it alone."""
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    cost, budget, workers = 800 + 200, 2500, 2  # tokens of one call (judge_replies), the budget
    result = sandbox.run(
        "-m",
        "judge",
        "-n",
        str(workers),
        "--rag-judge-cache",
        str(tmp_path / "c"),
        "--rag-judge-budget-tokens",
        str(budget),
        "--rag-concurrency",
        "1",  # one call at a time per worker: at most one in flight elsewhere
    )
    calls = judge_env.calls("chat")
    # Calls go out while the run's spend is under the budget: 3 calls (0, 1000, 2000 spent
    # before each) with one process, plus at most one call in flight on the other worker;
    # each worker with a budget of its own would make 3 of its >= 3 cases (6 calls).
    assert 1 <= calls <= budget // cost + 1 + (workers - 1), result.stdout.str()
    outcomes = [c["outcome"] for c in sandbox.cases("judge").values()]
    assert outcomes.count("pass") == calls and outcomes.count("skip") == N_POS - calls  # not run: never a pass
