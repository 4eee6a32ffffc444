"""A judge metric of one's own: one verdict field (its prompt part and JSON schema) and one
``register`` call in a conftest; the judge tier asks for it, reads it, computes the metric,
gates on it from thresholds.toml and writes a results file valid under the schema assembled
with it, with no file of rag_eval edited (issue 32: a metric is written once). The judge
is the scripted OpenAI-compatible server of tests/support (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from rag_eval.judge import registry
from rag_eval.results.schema import results_schema
from tests.rag_eval._plugin_sandbox import IDS, POSITIVE_IDS, Sandbox
from tests.support.judge_replies import native_verdict
from tests.support.openai_server import Reply, ScriptedOpenAIServer, reply

N_POS = len(POSITIVE_IDS)
TONE_PROMPT = 'tone: is the ANSWER polite? "polite" = courteous throughout; "rude" = dismissive or insulting.'

CONFTEST = f"""
from rag_eval.judge.registry import JudgeMetric, categorical, register, scored

TONE = categorical("tone", {TONE_PROMPT!r}, ("polite", "rude"))
register(JudgeMetric("politeness", scored("tone", {{"polite": 1.0, "rude": 0.0}}), (TONE,)))
register(JudgeMetric("rudeness", scored("tone", {{"polite": 0.0, "rude": 1.0}}), (TONE,), lower_is_better=True))
"""

THRESHOLDS = """
[judge]
politeness = { min = 0.5 }
rudeness = { max = 0.5 }
faithfulness = { min = 0.9 }

[judge.case]
rudeness = { max = 0.5 }
"""


@pytest.fixture(autouse=True)
def _registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pytester runs in this process: the conftest's metric goes to a copy of the registry."""
    registry.fields()  # the built-in ones registered before the copy
    monkeypatch.setattr(registry, "_FIELDS", dict(registry._FIELDS))
    monkeypatch.setattr(registry, "_METRICS", dict(registry._METRICS))
    yield


def _system(request: Any) -> str:
    return str(next(m["content"] for m in request["messages"] if m["role"] == "system"))


def _tone_of(tone: str) -> Any:
    def answer(request: Any) -> Reply:
        verdict = native_verdict(request)
        if TONE_PROMPT in _system(request):  # asked for: the registered field is in the prompt
            verdict["tone"] = {"verdict": tone, "reason": "the answer's manner"}
        return reply(json.dumps(verdict), prompt_tokens=800, completion_tokens=200)

    return answer


@pytest.fixture
def judge(sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-test")
    sandbox.add_judge_tests()
    sandbox.write_conftest(CONFTEST)
    sandbox.write_thresholds(THRESHOLDS)
    return sandbox


def test_a_judge_metric_registered_in_a_conftest_is_asked_for_gated_and_valid(
    judge: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Any
) -> None:
    openai_server.set_default("chat", _tone_of("polite"))
    result = judge.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "cache"))

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=N_POS, deselected=2 * len(IDS))
    # every case polite: politeness 1 and rudeness 0 on each of the N_POS cases
    result.stdout.fnmatch_lines(
        [
            f"PASS judge.politeness = 1.0000* (need >= 0.5; n={N_POS}*",
            f"PASS judge.rudeness = 0.0000* (need <= 0.5; n={N_POS}*",
        ]
    )
    request = openai_server.requests[0].json
    system = _system(request)
    # the prompt numbers it after the four fields every case gets (correctness, asked only
    # with a reference, comes after it), then the reasons
    assert f"\n5. {TONE_PROMPT}\n" in system
    assert ("6. correctness:" in system) == ("7. Give a short" in system)
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tone"] == registry.obj(
        {"verdict": registry.enum(("polite", "rude")), "reason": registry.STRING}
    )
    assert "tone" in schema["required"]

    results = judge.results()
    cases = judge.cases("judge")
    assert {c["metrics"]["politeness"] for c in cases.values()} == {1.0}
    assert all(c["details"]["judge"]["tone"]["verdict"] == "polite" for c in cases.values())
    assembled = results_schema()  # with the conftest's field in the judge tier's fragment
    assert "tone" in assembled["$defs"]["judgeVerdict"]["properties"]
    jsonschema.validate(results, assembled)
    first = next(c for c in results["cases"] if c["tier"] == "judge")
    first["details"]["judge"]["tone"]["verdict"] = "sarcastic"  # not one of the field's verdicts
    with pytest.raises(jsonschema.ValidationError, match="sarcastic"):
        jsonschema.validate(results, assembled)


def test_its_direction_gates_and_its_missing_field_is_an_error_not_a_pass(
    judge: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_server.set_default("chat", _tone_of("rude"))
    result = judge.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "rude"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # rudeness 1 on every case: above the per-case ceiling 0.5 and the run's ceiling 0.5
    result.assert_outcomes(xfailed=N_POS, deselected=2 * len(IDS))  # a failing case is an xfail
    result.stdout.fnmatch_lines([f"FAIL judge.rudeness = 1.0000* (need <= 0.5; n={N_POS}*"])
    assert {c["outcome"] for c in judge.cases("judge").values()} == {"fail"}
    assert all("rudeness" in c["message"] for c in judge.cases("judge").values())

    monkeypatch.setenv("RAG_JUDGE_MAX_RETRIES", "0")
    openai_server.set_default("chat", lambda request: reply(json.dumps(native_verdict(request))))
    result = judge.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "none"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    case = judge.cases("judge")[POSITIVE_IDS[0]]
    assert case["outcome"] == "error" and "'tone' must be an object" in case["message"]
