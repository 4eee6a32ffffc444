"""Repeated trials through pytest: c/n, pass@k and pass^k per case, independent trials
(one judge call each, nothing shared), gates on flakiness, honest single trials for a
deterministic generator, and n < k refused as a configuration error."""

from __future__ import annotations

import collections
import itertools
import json
import threading
from math import comb
from pathlib import Path
from typing import Any

import pytest

from tests.rag_eval._plugin_sandbox import IDS, Sandbox
from tests.support.judge_replies import native_verdict
from tests.support.openai_server import Reply, ScriptedOpenAIServer, reply

N_ITEMS = len(IDS)  # passk runs every item, negatives included


@pytest.fixture
def sandbox(sandbox: Sandbox) -> Sandbox:
    sandbox.add_passk_tests()
    return sandbox


def test_a_deterministic_generator_runs_one_trial_and_says_so(sandbox: Sandbox) -> None:
    sandbox.write_thresholds("[passk]\nflaky_count = { max = 0 }\n\n[passk.case]\nn = 5\nk = 3\n")
    result = sandbox.run("-m", "passk")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["passk: the generator is deterministic, so each of * cases ran one trial standing for n=5*"]
    )
    cases = sandbox.cases("passk")
    for case in cases.values():
        assert case["details"]["trials_run"] == 1 and case["details"]["deterministic_generator"] is True
        assert case["metrics"]["pass@3"] == case["metrics"]["pass^3"] in (0.0, 1.0)
        assert case["metrics"]["flaky"] == 0.0


def test_alternating_judge_verdicts_give_the_expected_c_over_n(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-test")
    # each case's trial 1 passes, trial 2 fails, ...: counted per case (its prompt), so that
    # cases run ahead on other threads (--rag-concurrency) interleave without changing it
    seen: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def alternate(request: Any) -> Reply:
        with lock:
            prompt = json.dumps(request["messages"], sort_keys=True)
            seen[prompt] += 1
            verdict = "yes" if seen[prompt] % 2 else "no"
        return reply(json.dumps(native_verdict(request, claim_verdict=verdict)))

    openai_server.set_default("chat", alternate)
    sandbox.write_thresholds(
        '[passk]\nflaky_count = { max = 0 }\n"pass^2" = { min = 0.5 }\n\n'
        '[passk.case]\nn = 4\nk = 2\ncondition = "judge"\nfaithfulness = { min = 1.0 }\n'
    )
    result = sandbox.run("-m", "passk", "--rag-judge-cache", str(tmp_path / "c"))
    # every trial is its own judge call: no cache entry is shared between trials
    assert openai_server.calls("chat") == 4 * N_ITEMS
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # every case is flaky: the gates fail the build
    result.stdout.fnmatch_lines(
        [
            f"FAIL passk.flaky_count = {N_ITEMS:.4f}* (need <= 0; n={N_ITEMS})*",
            f"FAIL passk.pass^2 = {comb(2, 2) / comb(4, 2):.4f}* (need >= 0.5; n={N_ITEMS})*",
        ]
    )
    for case in sandbox.cases("passk").values():
        assert (case["details"]["c"], case["details"]["n"]) == (2, 4)
        assert case["metrics"]["pass@2"] == pytest.approx(1 - comb(2, 2) / comb(4, 2))  # 5/6
        assert case["metrics"]["pass^2"] == pytest.approx(comb(2, 2) / comb(4, 2))  # 1/6
        assert case["details"]["class"] == "flaky"
        assert [t["outcome"] for t in case["details"]["trials"]] == ["pass", "fail", "pass", "fail"]


def test_parallel_equals_serial(sandbox: Sandbox) -> None:
    sandbox.write_thresholds("[passk]\nflaky_count = { max = 0 }\n")
    serial = sandbox.run_subprocess("-m", "passk")
    first = sandbox.results()["metrics"]
    parallel = sandbox.run_subprocess("-m", "passk", "-n", "2")
    assert serial.ret == parallel.ret == pytest.ExitCode.OK
    assert sandbox.results()["metrics"] == first


def test_n_below_k_is_a_configuration_error(sandbox: Sandbox) -> None:
    sandbox.write_thresholds("[passk.case]\nn = 2\nk = 3\n")
    result = sandbox.run("-m", "passk")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*n = 2 < k = 3: pass@k needs at least k trials*configuration error*"])
    sandbox.write_thresholds("[passk.case]\nn = 5\nk = 3\n")
    override = sandbox.run("-m", "passk", "--rag-passk-n", "2")
    assert override.ret == pytest.ExitCode.USAGE_ERROR
    override.stderr.fnmatch_lines(["*passk (from --rag-passk-n/--rag-passk-k or [[]passk.case[]]): n = 2 < k = 3*"])


def test_an_llm_generator_is_sampled_n_times(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_GENERATOR_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_GENERATOR_MODEL", "gen-model")
    monkeypatch.setenv("RAG_GENERATOR_API_KEY", "sk-gen")
    # a good cited answer, then an empty one, alternately: trials are independent draws
    answers = itertools.cycle(["The material answers this question [1].", ""])
    openai_server.set_default("chat", lambda request: reply(next(answers)))
    sandbox.write_thresholds("[passk]\nflaky_count = { max = 100 }\n\n[passk.case]\nn = 4\nk = 2\n")
    result = sandbox.run("-m", "passk", "--rag-set", "generator=openai", "--rag-tag", "lang=en")
    assert result.ret == pytest.ExitCode.OK
    cases = sandbox.cases("passk")
    assert cases and openai_server.calls("chat") == 4 * len(cases)  # n generations per case
    for case in cases.values():
        assert case["details"]["deterministic_generator"] is False and case["details"]["trials_run"] == 4
        outcomes = [t["outcome"] for t in case["details"]["trials"]]
        if case["negative"]:
            continue  # a negative expects a refusal: both draws fail it
        assert outcomes == ["pass", "fail", "pass", "fail"] and case["details"]["c"] == 2


def test_usage_is_attributed_per_tier_and_totals_equal_the_sum_over_cases(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Judge calls of the judge tier and of passk's judge trials, in one run: each call is
    counted once, under the tier and case that made it, and run.usage is their sum."""
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-test")
    openai_server.set_default("chat", lambda request: reply(json.dumps(native_verdict(request))))
    sandbox.add_judge_tests()
    sandbox.write_thresholds('[passk.case]\nn = 3\nk = 2\ncondition = "judge"\n')
    sandbox.run("-m", "judge or passk", "--rag-judge-cache", str(tmp_path / "c"))
    results = sandbox.results()
    judge_cases = [c for c in results["cases"] if c["tier"] == "judge" and c["outcome"] != "skip"]
    passk_cases = [c for c in results["cases"] if c["tier"] == "passk"]
    assert judge_cases and passk_cases
    for tier, cases, calls_each in (("judge", judge_cases, 1), ("passk", passk_cases, 3)):
        assert all(c["details"]["usage"]["calls"] == calls_each for c in cases), tier
        for key in ("calls", "prompt_tokens", "completion_tokens"):
            assert results["run"]["usage"][tier][key] == sum(c["details"]["usage"][key] for c in cases), (tier, key)
    usage = results["run"]["usage"]
    total_calls = sum(usage[t]["calls"] for t in ("judge", "passk"))
    assert total_calls == len(judge_cases) + 3 * len(passk_cases)
    # an identical request (the judge tier's and passk trial 0's, same answer) is served
    # from the cache once it exists: counted as a call of its case, not sent twice
    cached = sum(usage[t].get("cached_calls", 0) for t in ("judge", "passk"))
    assert total_calls - cached == openai_server.calls("chat")
