"""LLMClient against scripted servers on 127.0.0.1: what is retried (exact call counts),
what is redacted, the time budget, and the circuit breaker on a black-holed endpoint."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
from collections.abc import Iterator

import pytest

from rag_eval.core.errors import ConfigError
from rag_eval.llm.messages import ChatError, ChatRequest
from rag_eval.llm.policy import CallPolicy
from tests.support.leaks import assert_no_window
from tests.support.llm_client import judge_llm
from tests.support.openai_server import (
    Reply,
    ScriptedOpenAIServer,
    drip,
    empty_choices,
    hang,
    insufficient_quota,
    rate_limited,
    raw,
    reply,
    reset,
    status,
)

KEY = "sk-echo-THIS-MUST-NOT-LEAK-1234"
REQ = ChatRequest("judge-m", [{"role": "user", "content": "grade this"}])
FORMAT_500 = status(
    500,
    {
        "error": {
            "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\"}]"
        }
    },
)


@pytest.fixture
def srv() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


def test_empty_choices_and_truncated_json_are_asked_again_within_the_attempts(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(empty_choices(), raw(b'{"choices": [{"mess'), reply("fine"))
    resp = judge_llm(srv.base_url, max_retries=2).complete(REQ)
    assert (resp.content, resp.attempts, srv.calls("chat")) == ("fine", 3, 3)
    srv.enqueue(empty_choices(), empty_choices(), reply("too late"))
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=1).complete(REQ)
    assert (info.value.kind, info.value.attempts, srv.calls("chat")) == ("malformed", 2, 5)


def test_a_transport_fault_and_a_malformed_reply_share_one_attempt_count(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(status(503), empty_choices(), status(503), reply("never"))
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=2).complete(REQ)
    assert info.value.attempts == 3 and srv.calls("chat") == 3


def test_accept_rejects_are_returned_marked_at_once_never_asked_again(srv: ScriptedOpenAIServer) -> None:
    """A reply with text the caller rejects would come back the same (issue 33): the caller repairs it."""
    srv.enqueue(reply("{bad"), reply("{still bad"))
    resp = judge_llm(srv.base_url, max_retries=1).complete(REQ, accept=lambda c: None if c == "ok" else "not ok")
    assert (resp.content, resp.rejected, srv.calls("chat")) == ("{bad", "not ok", 1)
    srv.reset()  # "{still bad" was never asked for
    srv.enqueue(reply("  "), reply("ok"))  # blank text is no answer: asked again like a transport fault
    resp = judge_llm(srv.base_url, max_retries=1).complete(REQ, accept=lambda c: None if c == "ok" else "not ok")
    assert (resp.content, resp.rejected, srv.calls("chat")) == ("ok", "", 2)


def test_a_reply_cut_at_max_tokens_is_not_asked_again_at_the_same_budget(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(Reply('{"claims": [', finish_reason="length"))
    resp = judge_llm(srv.base_url, max_retries=3).complete(REQ, accept=lambda c: "cut")
    assert (resp.rejected, resp.finish_reason, srv.calls("chat")) == ("cut", "length", 1)


def test_429_with_an_http_date_retry_after_is_waited_for(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(rate_limited(email.utils.formatdate(time.time() + 2, usegmt=True)), reply("ok"))
    t0 = time.monotonic()
    resp = judge_llm(srv.base_url, max_retries=1).complete(REQ)
    assert resp.attempts == 2 and srv.calls("chat") == 2 and time.monotonic() - t0 >= 0.9


def test_a_500_naming_response_format_is_not_retried(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(FORMAT_500)
    req = ChatRequest("judge-m", REQ.messages, response_format={"type": "json_schema", "json_schema": {}})
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=3).complete(req)
    assert (info.value.kind, info.value.status_code, srv.calls("chat")) == ("format", 500, 1)
    srv.enqueue(FORMAT_500, reply("ok"))  # without a response_format it is an ordinary 5xx: retried
    assert judge_llm(srv.base_url, max_retries=3).complete(REQ).content == "ok"


def test_quota_and_refused_are_not_retried(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(insufficient_quota(), reply("never"))
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=3).complete(REQ)
    assert (info.value.kind, srv.calls("chat")) == ("quota", 1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ChatError) as info:
        judge_llm(f"http://127.0.0.1:{port}/v1", max_retries=3).complete(REQ)
    assert (info.value.kind, info.value.attempts) == ("refused", 1) and time.monotonic() - t0 < 2.0
    assert "RAG_JUDGE_BASE_URL" in str(info.value)


def test_timeouts_are_retried_and_the_message_names_the_setting(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(hang(5), hang(5))
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=1, timeout=0.3).complete(REQ)
    assert (info.value.kind, info.value.attempts, srv.calls("chat")) == ("timeout", 2, 2)
    assert "RAG_JUDGE_TIMEOUT" in str(info.value) and "0.3s" in str(info.value)


def test_the_time_budget_ends_a_call_that_already_started(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(hang(3), hang(3), reply("late"))
    with pytest.raises(ChatError) as info:  # 0.5 s attempt + >= 0.375 s backoff > 0.8 s budget
        judge_llm(srv.base_url, max_retries=3, timeout=0.5, total_budget_s=0.8).complete(REQ)
    assert (info.value.kind, info.value.attempts, srv.calls("chat")) == ("time_budget", 1, 1)


@pytest.mark.parametrize(
    "step",
    [
        reply(f"the key is {KEY}"),
        status(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        status(400, {"error": {"message": f"bad request from {KEY}"}}),
        status(500, {"error": {"message": f"upstream saw {KEY}"}}),
        raw(f"<html>proxy error for {KEY}</html>".encode()),
    ],
)
def test_an_echoed_key_never_leaves_the_client(
    srv: ScriptedOpenAIServer, step: object, caplog: pytest.LogCaptureFixture
) -> None:
    srv.enqueue(step)  # type: ignore[arg-type]
    client = judge_llm(srv.base_url, KEY, max_retries=0)
    try:
        texts = [client.complete(REQ).content]
    except ChatError as exc:
        texts = [str(exc), repr(exc)]
    texts += [repr(client)] + [r.getMessage() for r in caplog.records]
    assert all(KEY not in t for t in texts) and any("[redacted]" in t for t in texts)


def test_black_holed_endpoint_is_given_up_by_the_breaker() -> None:
    """Accepts connections, never answers: 50 calls cost about breaker x timeout (the
    breaker counts timed-out attempts, so 5 attempts = 2.5 calls of 2 attempts each)."""
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(128)  # never accept(): the kernel completes the handshake, nobody answers
        client = judge_llm(f"http://127.0.0.1:{hole.getsockname()[1]}/v1", max_retries=1, timeout=1.0, breaker=5)
        kinds: list[str] = []
        t0 = time.monotonic()
        for _ in range(50):
            try:
                client.complete(REQ)
            except ChatError as exc:
                kinds.append(exc.kind)
        elapsed = time.monotonic() - t0
    assert kinds == ["timeout"] * 2 + ["breaker"] * 48
    bound = 5 * 1.0 + 3 * 1.0 + 5.0  # 5 timed-out attempts x 1 s + the backoffs between them + slack
    assert elapsed < bound


def test_bad_policy_variables_are_start_up_errors_naming_the_variable() -> None:
    for name, value in (
        ("RAG_JUDGE_TIMEOUT", "fast"),
        ("RAG_JUDGE_TIMEOUT", "0"),
        ("RAG_JUDGE_MAX_RETRIES", "-2"),
        ("RAG_JUDGE_BREAKER", "x"),
    ):
        with pytest.raises(ConfigError, match=f"{name}='{value}' is not valid: expected .*; fix or unset {name}"):
            CallPolicy.from_env("RAG_JUDGE", {name: value})
    p = CallPolicy.from_env(
        "RAG_JUDGE", {"RAG_JUDGE_TIMEOUT": "2.5", "RAG_JUDGE_MAX_RETRIES": "0", "RAG_JUDGE_BREAKER": "0"}
    )
    assert (p.timeout, p.max_retries, p.breaker_after, p.budget) == (2.5, 0, 0, 2.5 + 30.0)


@pytest.mark.parametrize("padding", [264, 280, 295])
def test_a_key_after_padding_in_an_error_body_is_redacted_before_the_message_is_cut(
    srv: ScriptedOpenAIServer, padding: int, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-padded-0123456789abcdefghijklmn"  # 33 characters, as in the report
    srv.enqueue(status(401, {"error": {"message": "p" * padding + f" key={key}"}}))
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, key, max_retries=0).complete(REQ)
    assert "HTTP 401" in str(info.value)
    assert_no_window([str(info.value), repr(info.value), *(r.getMessage() for r in caplog.records)], key)


@pytest.mark.parametrize("headers", [False, True])
def test_a_slow_drip_reply_ends_within_the_wall_clock_timeout(srv: ScriptedOpenAIServer, headers: bool) -> None:
    """1 byte every 0.2 s: every read gets data, so only a wall-clock bound ends it."""
    srv.enqueue(drip(interval=0.2, headers=headers, limit=60), drip(interval=0.2, headers=headers, limit=60))
    t0 = time.monotonic()
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=1, timeout=1.0).complete(REQ)
    elapsed = time.monotonic() - t0
    assert (info.value.kind, info.value.attempts, srv.calls("chat")) == ("timeout", 2, 2)
    assert elapsed < 1.0 * 2 + 1.5  # timeout x attempts + the backoff between them and slack; 12 s without a bound


def _kinds(client: object, n: int) -> list[str]:
    kinds = []
    for _ in range(n):
        with pytest.raises(ChatError) as info:
            client.complete(REQ)  # type: ignore[attr-defined]
        kinds.append(info.value.kind)
    return kinds


def test_a_reset_mid_body_and_persistently_malformed_replies_open_the_breaker(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(reset(), reset(), reply("never sent"))
    assert _kinds(judge_llm(srv.base_url, max_retries=0, breaker=2), 3) == ["connection", "connection", "breaker"]
    assert srv.calls("chat") == 2
    srv.reset()
    srv.enqueue(empty_choices(), empty_choices(), empty_choices(), empty_choices(), reply("never sent"))
    assert _kinds(judge_llm(srv.base_url, max_retries=1, breaker=2), 3) == ["malformed", "malformed", "breaker"]
    assert srv.calls("chat") == 4


def test_usage_and_requests_cover_every_attempt_that_reached_the_server(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(
        status(503),
        Reply("", prompt_tokens=10, completion_tokens=2),
        Reply("ok", prompt_tokens=10, completion_tokens=1),
    )
    resp = judge_llm(srv.base_url, max_retries=3).complete(REQ, accept=lambda c: None if c == "ok" else "not ok")
    assert (resp.content, resp.requests, srv.calls("chat")) == ("ok", 3, 3)
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (20, 3)
    srv.enqueue(Reply("", prompt_tokens=7, completion_tokens=1), raw(b'{"choices": [{"mess'))
    with pytest.raises(ChatError) as info:
        judge_llm(srv.base_url, max_retries=1).complete(REQ, accept=lambda c: None if c == "ok" else "not ok")
    assert (info.value.requests, info.value.usage.prompt_tokens, info.value.usage.completion_tokens) == (2, 7, 1)


def test_no_private_attribute_of_httpx_openai_or_any_other_object_is_touched() -> None:
    """The wall-clock deadline and the retries go through public interfaces only: in the
    modules that hold httpx and openai objects, no ``x._name`` except on ``self``/``cls``
    (a private attribute of httpx's pool broke with a release once; issue 33)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [*sorted((root / "rag_eval" / "llm").glob("*.py")), root / "rag_app" / "llm.py"]
    files += sorted((root / "rag_eval" / "adapters").glob("http*.py"))
    touched = [
        f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}"
        for path in files
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert (root / "rag_eval" / "llm" / "client.py") in files and touched == []


def test_a_call_from_inside_a_running_event_loop_runs_on_a_thread_of_the_client(srv: ScriptedOpenAIServer) -> None:
    """An async framework calling back synchronously (deepeval's ``a_generate`` would): the
    client's own loop cannot run inside the caller's, so the call goes to a thread of the
    client, with the guard's state (the attempts it counts) carried there."""
    srv.enqueue(status(503), reply("ok"))
    client = judge_llm(srv.base_url, max_retries=1)

    async def inside() -> tuple[str, int]:
        resp = client.complete(REQ)
        return resp.content, resp.requests

    assert asyncio.run(inside()) == ("ok", 2) and srv.calls("chat") == 2
    client.close()
