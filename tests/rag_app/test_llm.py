"""ChatClient against the scripted OpenAI-compatible server: retries, timeouts, failures.

Retries are the openai SDK's own, so waits are real (the SDK's backoff starts at 0.5 s):
tests assert call counts and lower bounds on elapsed time, never exact sleeps.
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
from rag_app.llm import ChatClient, ChatError, ChatResponse
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
    args: dict[str, Any] = dict(timeout=5.0, max_retries=3)
    args.update(kw)
    return ChatClient(_config(base_url), **args)


QUESTION = [{"role": "user", "content": "什么是顶点式？"}]


def _ask(client: ChatClient, **kw: Any) -> ChatResponse:
    return client.complete("gpt-4o-mini", QUESTION, **kw)


def test_success_returns_content_usage_and_sends_the_request(server: ScriptedOpenAIServer) -> None:
    server.enqueue(reply("顶点式是 $y=a(x-h)^2+k$ [1]", prompt_tokens=12, completion_tokens=7))
    resp = _ask(_client(server.base_url), temperature=0.1, max_tokens=50, extra_body={"seed": 7})
    assert resp.content == "顶点式是 $y=a(x-h)^2+k$ [1]"
    assert resp.usage == Usage(prompt_tokens=12, completion_tokens=7)
    assert (resp.model, resp.finish_reason) == ("gpt-4o-mini", "stop")
    (rec,) = server.requests_of("chat")
    assert rec.json["messages"] == [{"role": "user", "content": "什么是顶点式？"}]
    assert (rec.json["temperature"], rec.json["max_tokens"], rec.json["seed"]) == (0.1, 50, 7)
    assert rec.header("authorization") == f"Bearer {KEY}"


def test_429_with_retry_after_seconds_is_honoured(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rate_limited(retry_after=1), reply("ok"))
    t0 = time.monotonic()
    resp = _ask(_client(server.base_url))
    assert resp.content == "ok" and server.calls("chat") == 2
    assert time.monotonic() - t0 >= 0.9  # the header's 1 s, not the 0.5 s backoff


def test_429_with_an_http_date_retry_after_is_honoured(server: ScriptedOpenAIServer) -> None:
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: waits 1-2 s
    server.enqueue(rate_limited(retry_after=when), reply("ok"))
    t0 = time.monotonic()
    assert _ask(_client(server.base_url)).content == "ok"
    assert server.calls("chat") == 2
    assert time.monotonic() - t0 >= 0.9


def test_429_without_retry_after_is_retried_with_backoff(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rate_limited(), rate_limited(), reply("ok"))
    resp = _ask(_client(server.base_url))
    assert resp.content == "ok" and server.calls("chat") == 3


def test_insufficient_quota_is_not_retried(server: ScriptedOpenAIServer) -> None:
    server.enqueue(insufficient_quota(), reply("never reached"))
    with pytest.raises(ChatError) as info:
        _ask(_client(server.base_url))
    err = info.value
    assert (err.kind, err.status_code) == ("quota", 429)
    assert "insufficient_quota" in str(err) and "retrying cannot help" in str(err)
    assert server.calls("chat") == 1


def test_500_twice_then_success(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(500), status(500), reply("ok"))
    resp = _ask(_client(server.base_url))
    assert resp.content == "ok"
    assert server.calls("chat") == 3


def test_retries_exhausted_reports_the_retries_and_the_setting(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(502), status(502), status(502), reply("too late"))
    with pytest.raises(ChatError) as info:
        _ask(_client(server.base_url, max_retries=2))
    err = info.value
    # max_retries=2 -> 1 + 2 = 3 requests
    assert (err.kind, err.status_code) == ("server", 502)
    assert "after 2 retries" in str(err) and server.calls("chat") == 3
    assert "RAG_GENERATOR_MAX_RETRIES" in str(err)


def test_client_error_is_not_retried(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(400), reply("never"))
    with pytest.raises(ChatError) as info:
        _ask(_client(server.base_url))
    assert info.value.kind == "client"
    assert server.calls("chat") == 1


def test_hang_past_timeout_is_retried_then_fails_naming_the_setting(server: ScriptedOpenAIServer) -> None:
    server.enqueue(hang(5), hang(5))
    client = _client(server.base_url, timeout=0.3, max_retries=1)
    t0 = time.monotonic()
    with pytest.raises(ServiceError) as info:
        _ask(client)
    elapsed = time.monotonic() - t0
    assert isinstance(info.value, ChatError)
    assert info.value.kind == "timeout"
    assert server.calls("chat") == 2
    assert elapsed < 3.0  # two 0.3 s attempts, not the server's 5 s hang
    assert "0.3s timeout" in str(info.value) and "RAG_GENERATOR_TIMEOUT" in str(info.value)


def test_a_200_that_is_not_a_chat_completion_is_a_malformed_error_not_an_answer(
    server: ScriptedOpenAIServer,
) -> None:
    server.enqueue(raw(b"{not json"), raw(b"[1, 2]"), empty_choices(), reply("fine"))
    client = _client(server.base_url)
    details = []
    for _ in range(3):
        with pytest.raises(ChatError) as info:
            _ask(client)
        assert (info.value.kind, info.value.status_code) == ("malformed", 200)
        assert "malformed response" in str(info.value)
        details.append(str(info.value))
    assert "not JSON: '{not json'" in details[0] and "JSON list" in details[1] and "no choices" in details[2]
    assert server.calls("chat") == 3  # a 200 is not retried: the SDK's rule
    assert _ask(client).content == "fine"


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_names_the_address_and_the_variable() -> None:
    port = _unused_port()
    client = _client(f"http://127.0.0.1:{port}/v1", max_retries=1)  # the SDK retries it once
    with pytest.raises(ChatError) as info:
        _ask(client)
    err = info.value
    assert (err.kind, err.address) == ("refused", f"127.0.0.1:{port}")
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
        for _ in range(6):  # 401; 500+500 (one call); quota; raw; empty; hang+hang (one call)
            with pytest.raises(ChatError) as info:
                _ask(client)
            messages += [str(info.value), repr(info.value)]
        server.enqueue(reply(f"the key is {KEY}, url-encoded {quote(KEY, safe='')}"))
        answer = _ask(client).content
    assert len(messages) == 2 + 6 * 2
    assert "[redacted]" in messages[2]  # the echoed key was replaced, the message kept
    assert answer == "the key is [redacted], url-encoded [redacted]"
    for text in messages + [r.getMessage() for r in caplog.records]:
        assert KEY not in text
    refused = _client(f"http://127.0.0.1:{_unused_port()}/v1")
    with pytest.raises(ChatError) as info:
        _ask(refused)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("padding", [100, 264, 280])
def test_a_padded_echo_of_the_key_is_redacted_before_any_cut(
    server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture, padding: int
) -> None:
    """Issue 26 #1: a 401 body with padding before ``key=<KEY>``, and a non-JSON 200 body the
    same way; cutting first printed most of the key."""
    server.enqueue(status(401, {"error": {"message": "p" * padding + f"key={KEY}"}}))
    server.enqueue(raw(("q" * (padding % 120) + f"key={KEY} " + "z" * 200).encode()))
    client = _client(server.base_url, max_retries=1)
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG, logger="rag_app"):
        for _ in range(2):
            with pytest.raises(ChatError) as info:
                _ask(client)
            texts.append(str(info.value))
    assert "HTTP 401" in texts[0] and "body is not JSON" in texts[1]
    for text in texts + [r.getMessage() for r in caplog.records]:
        assert leaks(text, KEY) == [], text


def test_an_answer_echoing_the_key_in_any_form_is_redacted(server: ScriptedOpenAIServer) -> None:
    forms = key_forms(KEY)
    server.enqueue(reply(" ".join(forms.values())))

    answer = _ask(_client(server.base_url)).content

    assert leaks(answer, KEY) == [] and answer.count("[redacted]") == len(forms)
