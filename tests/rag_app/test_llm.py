"""ChatClient against the scripted OpenAI-compatible server: retries, timeouts, failures.

Retries are the openai SDK's own, so waits are real (the SDK's backoff starts at 0.5 s):
tests assert call counts, attempts and lower bounds on elapsed time, never exact sleeps.
"""

from __future__ import annotations

import email.utils
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from rag_app.env import EndpointConfig
from rag_app.errors import ConfigError, ServiceError
from rag_app.llm import ChatClient, ChatError, ChatRequest
from rag_app.types import Usage
from tests.rag_app.leaks import key_forms, leaks
from tests.support.openai_server import (
    ScriptedOpenAIServer,
    empty_choices,
    hang,
    insufficient_quota,
    rate_limited,
    raw,
    reply,
    status,
)

KEY = "sk-test-DISTINCTIVE-7f3a9c-secret"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def _config(base_url: str) -> EndpointConfig:
    env = {"RAG_GENERATOR_BASE_URL": base_url, "RAG_GENERATOR_API_KEY": KEY, "RAG_GENERATOR_MODEL": "gpt-4o-mini"}
    return EndpointConfig.from_env("RAG_GENERATOR", env)


def _client(base_url: str, **kw: Any) -> ChatClient:
    args: dict[str, Any] = dict(timeout=5.0, max_retries=3, total_budget_s=60.0)
    args.update(kw)
    return ChatClient(_config(base_url), **args)


def _req(**kw: Any) -> ChatRequest:
    return ChatRequest(model="gpt-4o-mini", messages=[{"role": "user", "content": "什么是顶点式？"}], **kw)


def test_success_returns_content_usage_and_sends_the_request(server: ScriptedOpenAIServer) -> None:
    server.enqueue(reply("顶点式是 $y=a(x-h)^2+k$ [1]", prompt_tokens=12, completion_tokens=7))
    resp = _client(server.base_url).complete(_req(temperature=0.1, max_tokens=50, extra={"seed": 7}))
    assert resp.content == "顶点式是 $y=a(x-h)^2+k$ [1]"
    assert resp.usage == Usage(prompt_tokens=12, completion_tokens=7)
    assert (resp.model, resp.finish_reason, resp.attempts) == ("gpt-4o-mini", "stop", 1)
    assert resp.seconds >= 0
    (rec,) = server.requests_of("chat")
    assert rec.json["messages"] == [{"role": "user", "content": "什么是顶点式？"}]
    assert (rec.json["temperature"], rec.json["max_tokens"], rec.json["seed"]) == (0.1, 50, 7)
    assert rec.header("authorization") == f"Bearer {KEY}"


def test_429_with_retry_after_seconds_is_honoured(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rate_limited(retry_after=1), reply("ok"))
    t0 = time.monotonic()
    resp = _client(server.base_url).complete(_req())
    assert resp.content == "ok" and resp.attempts == 2 and server.calls("chat") == 2
    assert time.monotonic() - t0 >= 0.9  # the header's 1 s, not the 0.5 s backoff


def test_429_with_an_http_date_retry_after_is_honoured(server: ScriptedOpenAIServer) -> None:
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: waits 1-2 s
    server.enqueue(rate_limited(retry_after=when), reply("ok"))
    t0 = time.monotonic()
    resp = _client(server.base_url).complete(_req())
    assert resp.attempts == 2 and server.calls("chat") == 2
    assert time.monotonic() - t0 >= 0.9


def test_429_without_retry_after_is_retried_with_backoff(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rate_limited(), rate_limited(), reply("ok"))
    resp = _client(server.base_url).complete(_req())
    assert resp.attempts == 3 and server.calls("chat") == 3


def test_insufficient_quota_is_not_retried(server: ScriptedOpenAIServer) -> None:
    server.enqueue(insufficient_quota(), reply("never reached"))
    with pytest.raises(ChatError) as info:
        _client(server.base_url).complete(_req())
    err = info.value
    assert (err.kind, err.attempts, err.status_code, err.retryable) == ("quota", 1, 429, False)
    assert "insufficient_quota" in str(err) and "1 attempt" in str(err)
    assert server.calls("chat") == 1


def test_500_twice_then_success(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(500), status(500), reply("ok"))
    resp = _client(server.base_url).complete(_req())
    assert resp.content == "ok" and resp.attempts == 3
    assert server.calls("chat") == 3


def test_retries_exhausted_reports_attempts_and_the_setting(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(502), status(502), status(502), reply("too late"))
    with pytest.raises(ChatError) as info:
        _client(server.base_url, max_retries=2).complete(_req())
    err = info.value
    # max_retries=2 -> 1 + 2 = 3 requests
    assert (err.kind, err.attempts, err.status_code, err.retryable) == ("server", 3, 502, True)
    assert "3 attempts" in str(err) and server.calls("chat") == 3
    assert "RAG_GENERATOR_MAX_RETRIES" in str(err)


def test_client_error_is_not_retried(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(400), reply("never"))
    with pytest.raises(ChatError) as info:
        _client(server.base_url).complete(_req())
    assert (info.value.kind, info.value.attempts) == ("client", 1)
    assert server.calls("chat") == 1


def test_hang_past_timeout_is_retried_then_fails_naming_the_setting(server: ScriptedOpenAIServer) -> None:
    server.enqueue(hang(5), hang(5))
    client = _client(server.base_url, timeout=0.3, max_retries=1)
    t0 = time.monotonic()
    with pytest.raises(ServiceError) as info:
        client.complete(_req())
    elapsed = time.monotonic() - t0
    assert isinstance(info.value, ChatError)
    assert (info.value.kind, info.value.attempts) == ("timeout", 2)
    assert server.calls("chat") == 2
    assert elapsed < 3.0  # two 0.3 s attempts, not the server's 5 s hang
    assert "0.3s timeout" in str(info.value) and "RAG_GENERATOR_TIMEOUT" in str(info.value)


def test_retry_after_beyond_the_budget_fails_without_waiting(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rate_limited(retry_after=20), reply("ok"))
    t0 = time.monotonic()
    with pytest.raises(ChatError) as info:
        _client(server.base_url, total_budget_s=5.0).complete(_req())
    assert (info.value.kind, info.value.attempts) == ("rate_limit", 1)
    assert "budget" in str(info.value) and time.monotonic() - t0 < 2.0


def test_used_up_budget_stops_before_the_next_attempt(server: ScriptedOpenAIServer) -> None:
    server.enqueue(hang(3), hang(3), reply("ok"))
    with pytest.raises(ChatError) as info:  # 0.5 s timeout + >= 0.375 s backoff > 0.8 s budget
        _client(server.base_url, timeout=0.5, max_retries=3, total_budget_s=0.8).complete(_req())
    assert info.value.kind == "time_budget" and info.value.attempts == 1
    assert server.calls("chat") == 1 and "RAG_GENERATOR_TIMEOUT" in str(info.value)


def test_malformed_json_is_asked_again_then_a_malformed_error(server: ScriptedOpenAIServer) -> None:
    server.enqueue(raw(b"{not json"), reply("fine"))
    assert _client(server.base_url).complete(_req()).content == "fine"
    assert server.calls("chat") == 2
    server.enqueue(raw(b"{not json"), raw(b"{still not"))
    with pytest.raises(ChatError) as info:
        _client(server.base_url, max_retries=1).complete(_req())
    assert info.value.kind == "malformed" and info.value.attempts == 2
    assert "malformed response" in str(info.value) and "not JSON" in str(info.value)
    assert server.calls("chat") == 4


def test_empty_choices_is_asked_again(server: ScriptedOpenAIServer) -> None:
    server.enqueue(empty_choices(), reply("answer [1]"))
    resp = _client(server.base_url).complete(_req())
    assert resp.content == "answer [1]" and resp.attempts == 2
    server.enqueue(empty_choices())
    with pytest.raises(ChatError) as info:
        _client(server.base_url, max_retries=0).complete(_req())
    assert info.value.kind == "malformed" and "no choices" in str(info.value)
    assert server.calls("chat") == 3


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_fails_fast_naming_the_address() -> None:
    port = _unused_port()
    client = _client(f"http://127.0.0.1:{port}/v1")
    t0 = time.monotonic()
    with pytest.raises(ChatError) as info:
        client.complete(_req())
    assert time.monotonic() - t0 < 2.0
    err = info.value
    assert (err.kind, err.attempts, err.address) == ("refused", 1, f"127.0.0.1:{port}")
    assert f"127.0.0.1:{port}" in str(err) and "RAG_GENERATOR_BASE_URL" in str(err)


def test_missing_key_is_a_config_error_naming_the_variables() -> None:
    config = EndpointConfig.from_env("RAG_GENERATOR", {"RAG_GENERATOR_BASE_URL": "http://127.0.0.1:9/v1"})
    with pytest.raises(ConfigError, match="RAG_GENERATOR_API_KEY"):
        ChatClient(config)


def test_the_key_never_appears_in_errors_reprs_logs_or_answers(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    server.enqueue(
        status(401, echo),
        status(500, {"error": {"message": f"upstream saw {KEY}"}}),
        status(500, {"error": {"message": KEY}}),
        insufficient_quota(),
        raw(f"not json {KEY}".encode()),
        empty_choices(),
        hang(5),
        hang(5),
    )
    client = _client(server.base_url, timeout=0.3, max_retries=1)
    messages: list[str] = [repr(client), str(client)]
    with caplog.at_level(logging.DEBUG, logger="rag_app"):
        for _ in range(5):  # 401; 500+500 (one call); quota; raw+empty (one call); hang+timeout
            with pytest.raises(ChatError) as info:
                client.complete(_req())
            messages += [str(info.value), repr(info.value)]
        server.enqueue(reply(f"the key is {KEY}, url-encoded {quote(KEY, safe='')}"))
        answer = client.complete(_req()).content
    assert len(messages) == 2 + 5 * 2
    assert "[redacted]" in messages[2]  # the echoed key was replaced, the message kept
    assert answer == "the key is [redacted], url-encoded [redacted]"
    for text in messages + [r.getMessage() for r in caplog.records]:
        assert KEY not in text
    refused = _client(f"http://127.0.0.1:{_unused_port()}/v1")
    with pytest.raises(ChatError) as info:
        refused.complete(_req())
    assert KEY not in str(info.value)


def test_chat_request_is_frozen_and_keyed_by_content() -> None:
    messages = [{"role": "user", "content": "a"}]
    req = ChatRequest(model="m", messages=messages, temperature=0.0)
    key = req.cache_key()
    messages[0]["content"] = "changed"  # the request copied its messages
    assert req.messages[0]["content"] == "a" and req.cache_key() == key
    assert ChatRequest(model="m", messages=[{"role": "user", "content": "a"}]).cache_key() == key
    assert ChatRequest(model="m", messages=[{"role": "user", "content": "a"}], temperature=0.5).cache_key() != key
    assert req.body() == {"model": "m", "messages": [{"role": "user", "content": "a"}], "temperature": 0.0}
    with pytest.raises(ValueError, match="messages"):
        ChatRequest(model="m", messages=[])
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        ChatRequest(model="m", messages=[{"role": "user"}])


@pytest.mark.parametrize("padding", [100, 264, 280])
def test_a_padded_echo_of_the_key_is_redacted_before_any_cut(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture, padding: int
) -> None:
    """Issue 26 #1: a 401 body with padding before ``key=<KEY>``, and a non-JSON 200 body the
    same way; cutting first printed most of the key."""
    server.enqueue(status(401, {"error": {"message": "p" * padding + f"key={KEY}"}}))
    server.enqueue(*[raw(("q" * (padding % 120) + f"key={KEY} " + "z" * 200).encode()) for _ in range(2)])
    client = _client(server.base_url, max_retries=1)
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG, logger="rag_app"):
        for _ in range(2):
            with pytest.raises(ChatError) as info:
                client.complete(_req())
            texts.append(str(info.value))
    assert "HTTP 401" in texts[0] and "body is not JSON" in texts[1]
    for text in texts + [r.getMessage() for r in caplog.records]:
        assert leaks(text, KEY) == [], text


def test_an_answer_echoing_the_key_in_any_form_is_redacted(server: ScriptedOpenAIServer) -> None:
    forms = key_forms(KEY)
    server.enqueue(reply(" ".join(forms.values())))

    answer = _client(server.base_url).complete(_req()).content

    assert leaks(answer, KEY) == [] and answer.count("[redacted]") == len(forms)
