"""deepeval engine on the project's judge client, against the scripted OpenAI server.

The server answers deepeval's prompts by recognising each prompt template's opening
words (deepeval 4.3.1 templates under ``deepeval/metrics/*/templates``; the script is
``tests.support.deepeval_replies.SCRIPT``, shared with ``bench/judge_cost.py``), so the scores
below follow from the scripted verdicts by the arithmetic written next to them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_eval.core.errors import ConfigError
from rag_eval.judge.deepeval_engine import DeepEvalEngine, first_json_object
from rag_eval.judge.native import JudgeInput
from rag_eval.llm.cached import CachedChatClient, JudgeCallError
from rag_eval.llm.client import LLMClient
from tests.support.deepeval_replies import Responder
from tests.support.llm_client import judge_llm
from tests.support.openai_server import Reply, ScriptedOpenAIServer, status

REPO = Path(__file__).resolve().parents[2]
ALL4 = ("faithfulness", "answer_relevancy", "contextual_precision", "contextual_recall")

ITEM = JudgeInput(
    case_id="quad-vertex",
    question="二次函数的顶点式是什么？",
    context=(
        ("[1]", "函数的定义域是全体实数。"),
        ("[2]", "二次函数的顶点式为 y=a(x-h)^2+k。"),
        ("[3]", "其顶点坐标为 (h, k)。"),
    ),
    answer="顶点式是 y=a(x-h)^2+k [2]，顶点是 (h, k) [3]。a 必须为正。",
    key_facts=("y=a(x-h)^2+k", "顶点 (h, k)"),
    reference="顶点式为 y=a(x-h)^2+k。顶点是 (h, k)。",
)


@pytest.fixture
def no_outside_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Fail any socket connect that is not to 127.0.0.1 (telemetry, PyPI, OpenAI...)."""
    attempts: list[Any] = []
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else str(address)
        if host not in ("127.0.0.1", "localhost", "::1") and self.family != socket.AF_UNIX:
            attempts.append(address)
            raise OSError(f"test blocks outside network: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    for var in ("OPENAI_API_KEY", "CONFIDENT_API_KEY", "DEEPEVAL_EVAL_MODE"):
        monkeypatch.delenv(var, raising=False)
    return attempts


@pytest.fixture
def judge_client(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> Iterator[CachedChatClient]:
    chat = judge_llm(openai_server.base_url, max_retries=1)
    with CachedChatClient(chat, tmp_path / "cache") as client:
        yield client


def _engine(client: CachedChatClient, metrics: tuple[str, ...] = ALL4, **kw: Any) -> DeepEvalEngine:
    return DeepEvalEngine(client, "judge-m", metrics=metrics, **kw)


def test_scores_follow_scripted_verdicts_and_calls_are_counted(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # anything deepeval writes relative to cwd would land here
    resp = Responder()
    openai_server.set_default("chat", resp)
    verdict = _engine(judge_client).judge(ITEM)

    m = verdict.metrics
    assert m["deepeval.faithfulness"] == pytest.approx(2 / 3)  # 2 of 3 claims "yes"
    assert m["deepeval.answer_relevancy"] == pytest.approx(3 / 4)  # yes, yes, borderline pass; 1 "no"
    assert m["deepeval.contextual_precision"] == pytest.approx((1 / 2 + 2 / 3) / 2)  # relevant at ranks 2, 3
    assert m["deepeval.contextual_recall"] == pytest.approx(1 / 2)  # 1 of 2 reference sentences attributed
    per_metric = {k: v["calls"] for k, v in verdict.details["metrics"].items()}
    # Observed deepeval 4.3.1 call pattern (include_reason=True, sync mode):
    # faithfulness = truths + claims + verdicts + reason; relevancy = statements + verdicts + reason;
    # precision and recall = verdicts + reason.
    assert per_metric == {
        "deepeval.faithfulness": 4,
        "deepeval.answer_relevancy": 3,
        "deepeval.contextual_precision": 2,
        "deepeval.contextual_recall": 2,
    }
    assert verdict.calls == 4 + 3 + 2 + 2 == openai_server.calls("chat")
    assert set(resp.seen.values()) == {1}  # each prompt kind exactly once, none repeated
    assert verdict.mode == "text"
    assert verdict.details["metrics"]["deepeval.faithfulness"]["reason"].startswith("The score is 0.67")
    assert [v["verdict"] for v in verdict.details["metrics"]["deepeval.faithfulness"]["verdicts"]] == [
        "yes",
        "yes",
        "no",
    ]
    assert verdict.details["prompt_tokens"] > 0 and verdict.details["cached_calls"] == 0
    # Every request went to our server with our model, temperature 0, and the trial index in the key.
    bodies = [r.json for r in openai_server.requests_of("chat")]
    assert {b["model"] for b in bodies} == {"judge-m"} and {b["temperature"] for b in bodies} == {0}
    assert no_outside_network == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]  # no .deepeval/ or results in cwd


def test_second_run_with_same_cache_makes_no_server_calls(
    openai_server: ScriptedOpenAIServer,
    tmp_path: Path,
    no_outside_network: list[Any],
) -> None:
    openai_server.set_default("chat", Responder())

    def chat() -> LLMClient:  # closing a CachedChatClient closes its LLMClient: one each
        return judge_llm(openai_server.base_url)

    with CachedChatClient(chat(), tmp_path / "cache") as first:
        v1 = _engine(first).judge(ITEM)
    n = openai_server.calls("chat")
    assert n == 11
    with CachedChatClient(chat(), tmp_path / "cache") as second:
        v2 = _engine(second).judge(ITEM)
        assert openai_server.calls("chat") == n  # zero new requests
        assert v2.metrics == v1.metrics and v2.calls == 11 and v2.details["cached_calls"] == 11
        # A different trial is an independent sample: it misses the cache.
        _engine(second, ("answer_relevancy",)).judge(ITEM, trial=1)
        assert openai_server.calls("chat") == n + 3


def test_every_deepeval_request_carries_the_judge_max_tokens(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
) -> None:
    """Without it a local server (llama-cpp-python) generates until its context is full."""
    openai_server.set_default("chat", Responder())
    _engine(judge_client, ("faithfulness",), max_tokens=700).judge(ITEM)
    assert [r.json["max_tokens"] for r in openai_server.requests_of("chat")] == [700] * 4


def test_without_reference_precision_and_recall_are_skipped_not_zero(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
) -> None:
    openai_server.set_default("chat", Responder())
    item = JudgeInput(ITEM.case_id, ITEM.question, ITEM.context, ITEM.answer, ITEM.key_facts, reference="")
    v = _engine(judge_client).judge(item)
    assert set(v.metrics) == {"deepeval.faithfulness", "deepeval.answer_relevancy"}
    assert set(v.details["skipped"]) == {"deepeval.contextual_precision", "deepeval.contextual_recall"}
    assert v.calls == 4 + 3
    # expected_output passed explicitly stands in for the missing reference.
    v2 = _engine(judge_client, ("contextual_recall",)).judge(item, expected_output="顶点式为 y=a(x-h)^2+k。")
    assert v2.metrics == {"deepeval.contextual_recall": pytest.approx(0.5)}


def test_geval_rubric_score_is_normalised_from_0_10(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
) -> None:
    resp = Responder(wrap="Here you go:\n```json\n{}\n```\nDone.")  # chatter around the JSON is tolerated
    openai_server.set_default("chat", resp)
    v = _engine(judge_client, ("geval",), geval_criteria="答案是否只使用上下文并正确引用？").judge(ITEM)
    assert v.metrics == {"deepeval.geval": pytest.approx(7 / 10)}
    assert v.calls == 2 and resp.seen == Counter({"geval.steps": 1, "geval.result": 1})
    assert v.details["metrics"]["deepeval.geval"]["reason"] == "Mostly right."


def test_server_error_raises_judge_call_error(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
) -> None:
    openai_server.set_default("chat", Responder())
    openai_server.enqueue(status(500), status(500))  # first call and its one retry
    with pytest.raises(JudgeCallError) as info:
        _engine(judge_client, ("faithfulness",)).judge(ITEM)
    assert info.value.kind == "server" and info.value.case_id == "quad-vertex"
    assert "deepeval.faithfulness" in str(info.value) and "SECRET" not in str(info.value)
    assert openai_server.calls("chat") == 2


def test_out_of_schema_reply_is_malformed_not_a_dropped_verdict(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
) -> None:
    resp = Responder()

    def answer(req: dict[str, Any]) -> Reply:
        if req["messages"][0]["content"].startswith("Based on the given claims"):
            return Reply('{"verdicts": [{"verdict": "yes"}, {"verdict": "maybe"}, {"verdict": "no"}]}')
        return resp(req)

    openai_server.set_default("chat", answer)
    with pytest.raises(JudgeCallError) as info:
        _engine(judge_client, ("faithfulness",)).judge(ITEM)
    assert info.value.kind == "malformed" and "Verdicts" in str(info.value)
    assert openai_server.calls("chat") == 3  # truths, claims, verdicts; no silent retry


def test_verdict_count_mismatch_is_malformed(
    openai_server: ScriptedOpenAIServer,
    judge_client: CachedChatClient,
    no_outside_network: list[Any],
) -> None:
    resp = Responder()

    def answer(req: dict[str, Any]) -> Reply:
        if req["messages"][0]["content"].startswith("For the provided list of statements"):
            return Reply('{"verdicts": [{"verdict": "yes"}, {"verdict": "yes"}]}')  # 2 verdicts, 4 statements
        return resp(req)

    openai_server.set_default("chat", answer)
    with pytest.raises(JudgeCallError, match="2 verdicts for 4 items") as info:
        _engine(judge_client, ("answer_relevancy",)).judge(ITEM)
    assert info.value.kind == "malformed"


def test_unknown_metric_and_missing_geval_criteria_are_config_errors(judge_client: CachedChatClient) -> None:
    with pytest.raises(ConfigError, match="faithfullness"):
        _engine(judge_client, ("faithfullness",))
    with pytest.raises(ConfigError, match="geval_criteria"):
        _engine(judge_client, ("geval",))


def test_first_json_object_skips_prose_and_fences() -> None:
    assert first_json_object('note {bad} then ```json\n{"a": [1, {"b": 2}]}\n```') == {"a": [1, {"b": 2}]}
    with pytest.raises(ValueError):
        first_json_object("no json here")


@pytest.mark.slow
def test_importing_deepeval_writes_nothing_and_needs_no_key(tmp_path: Path) -> None:
    """Fresh interpreter (deepeval's import-time side effects happen once per process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPEVAL_", "OPENAI_", "CONFIDENT_"))}
    env.update(HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    (tmp_path / "home").mkdir()
    (tmp_path / "cwd").mkdir()
    code = (
        "from rag_eval.judge.deepeval_engine import _deepeval; import os; d = _deepeval(); "
        "print(d['version'], os.environ['DEEPEVAL_TELEMETRY_OPT_OUT'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path / "cwd", env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "1"
    assert list((tmp_path / "cwd").iterdir()) == [] and list((tmp_path / "home").iterdir()) == []
