"""Tests for the scripted OpenAI-compatible server, driven by real clients over HTTP.

The server underpins every provider-facing test, so its wire behaviour is checked with
the same clients production code uses (the ``openai`` SDK and httpx).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.support.openai_server import (
    DEFAULT_CHAT_CONTENT,
    ScriptedOpenAIServer,
    deterministic_embedding,
    embeddings_reply,
    empty_choices,
    hang,
    insufficient_quota,
    rate_limited,
    raw,
    reply,
    rerank_reply,
    status,
)


@pytest.fixture
def srv() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


def client(srv: ScriptedOpenAIServer, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0, timeout=timeout)


def chat(c: openai.OpenAI, text: str = "hi") -> openai.types.chat.ChatCompletion:
    return c.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": text}])


def test_base_url_and_clean_stop() -> None:
    with ScriptedOpenAIServer() as s:
        assert s.base_url.startswith("http://127.0.0.1:") and s.base_url.endswith("/v1")
        port = s.port
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)


def test_chat_reply_round_trip_with_usage(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(reply("Paris.", prompt_tokens=12, completion_tokens=3))
    resp = chat(client(srv), "Capital of France?")
    assert resp.object == "chat.completion" and resp.id.startswith("chatcmpl-")
    assert resp.model == "gpt-test"
    assert resp.choices[0].message.role == "assistant"
    assert resp.choices[0].message.content == "Paris."
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens, resp.usage.total_tokens) == (12, 3, 15)


def test_finish_reason_and_estimated_usage(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(reply("one two three", finish_reason="length"))
    resp = chat(client(srv), "a b c d")
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage is not None and resp.usage.prompt_tokens == 4 and resp.usage.completion_tokens == 3


def test_embeddings_deterministic_for_str_and_list(srv: ScriptedOpenAIServer) -> None:
    c = client(srv)
    one = c.embeddings.create(model="emb", input="hello").data[0].embedding  # SDK asks for base64
    again = c.embeddings.create(model="emb", input="hello", encoding_format="float").data[0].embedding
    many = c.embeddings.create(model="emb", input=["hello", "world"])
    assert one == again == deterministic_embedding("hello")
    assert len(one) == 8 and math.isclose(sum(x * x for x in one), 1.0, rel_tol=1e-5)
    assert [d.index for d in many.data] == [0, 1]
    assert many.data[0].embedding == one
    assert many.data[1].embedding == deterministic_embedding("world") != one
    assert many.model == "emb" and many.usage.prompt_tokens == 2


def test_embeddings_dimensions_and_scripted_vectors() -> None:
    with ScriptedOpenAIServer(embedding_dim=4) as s:
        c = client(s)
        assert len(c.embeddings.create(model="e", input="x").data[0].embedding) == 4
        assert len(c.embeddings.create(model="e", input="x", dimensions=16).data[0].embedding) == 16
        s.enqueue(embeddings_reply([[1.0, 0.0], [0.0, 1.0]]))
        data = c.embeddings.create(model="e", input=["a", "b"]).data
        assert [d.embedding for d in data] == [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank"])
def test_rerank_shape_default_scores(srv: ScriptedOpenAIServer, path: str) -> None:
    docs = ["xyz", "capital of france", "france"]
    r = httpx.post(srv.root_url + path, json={"model": "rr", "query": "france", "documents": docs, "top_n": 2})
    assert r.status_code == 200
    results = r.json()["results"]
    assert len(results) == 2
    assert set(results[0]) == {"index", "relevance_score"}
    scores = [x["relevance_score"] for x in results]
    assert scores == sorted(scores, reverse=True)
    assert results[0]["index"] in (1, 2) and results[0]["relevance_score"] == 1.0
    assert srv.calls("rerank") == 1


def test_rerank_scripted_scores_sorted(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(rerank_reply([0.1, 0.9, 0.5]))
    body = {"model": "rr", "query": "q", "documents": [{"text": "a"}, "b", "c"], "return_documents": True}
    results = httpx.post(srv.base_url + "/rerank", json=body).json()["results"]
    assert [(x["index"], x["relevance_score"]) for x in results] == [(1, 0.9), (2, 0.5), (0, 0.1)]
    assert results[2]["document"] == {"text": "a"}


def test_429_retry_after_visible_to_client(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(rate_limited(retry_after=2), status(429))
    c = client(srv)
    with pytest.raises(openai.RateLimitError) as info:
        chat(c)
    assert info.value.response.headers["retry-after"] == "2"
    assert info.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.RateLimitError) as info:
        chat(c)
    assert "retry-after" not in info.value.response.headers


def test_insufficient_quota(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(insufficient_quota())
    with pytest.raises(openai.RateLimitError) as info:
        chat(client(srv))
    assert info.value.code == "insufficient_quota"
    assert info.value.response.json()["error"]["type"] == "insufficient_quota"


@pytest.mark.parametrize(
    ("code", "exc"),
    [(500, openai.InternalServerError), (503, openai.InternalServerError), (401, openai.AuthenticationError)],
)
def test_error_statuses_map_to_sdk_exceptions(srv: ScriptedOpenAIServer, code: int, exc: type) -> None:
    srv.enqueue(status(code))
    with pytest.raises(exc) as info:
        chat(client(srv))
    assert info.value.status_code == code
    assert set(info.value.response.json()["error"]) >= {"message", "type", "code"}


def test_status_custom_body_and_headers(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(status(503, {"detail": "down"}, {"X-Why": "maintenance"}))
    r = httpx.post(srv.base_url + "/chat/completions", json={"model": "m", "messages": []})
    assert (r.status_code, r.json(), r.headers["x-why"]) == (503, {"detail": "down"}, "maintenance")


def test_hang_trips_client_timeout_fast(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(hang(10))
    start = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        chat(client(srv, timeout=0.3))
    assert time.monotonic() - start < 2.0


def test_stop_is_prompt_while_a_request_hangs() -> None:
    s = ScriptedOpenAIServer().start()
    s.enqueue(hang(30))
    errors: list[BaseException] = []

    def call() -> None:
        try:
            chat(client(s, timeout=5))
        except openai.APIError as exc:  # the connection is dropped when the server stops
            errors.append(exc)

    t = threading.Thread(target=call)
    t.start()
    while s.calls("chat") == 0:
        time.sleep(0.01)
    start = time.monotonic()
    s.stop()
    t.join(timeout=5)
    assert time.monotonic() - start < 2.0 and not t.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)


def test_hang_then_answers(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(hang(0.05, then=reply("late")))
    assert chat(client(srv)).choices[0].message.content == "late"


def test_malformed_json_received_as_is(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(raw(b'{"choices": [ {'))
    r = httpx.post(srv.base_url + "/chat/completions", json={"model": "m", "messages": []})
    assert r.status_code == 200 and r.content == b'{"choices": [ {'
    assert r.headers["content-type"] == "application/json"
    srv.enqueue(raw(b'{"choices": [ {'))
    with pytest.raises(json.JSONDecodeError):  # what this SDK raises for a broken JSON body
        chat(client(srv))


def test_empty_choices(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(empty_choices())
    resp = chat(client(srv))
    assert resp.choices == []


def test_records_authorization_header(srv: ScriptedOpenAIServer) -> None:
    chat(client(srv), "hello")
    (req,) = srv.requests
    assert (req.method, req.path, req.kind) == ("POST", "/v1/chat/completions", "chat")
    assert req.header("Authorization") == "Bearer sk-test" == req.headers["authorization"]
    assert req.json["messages"] == [{"role": "user", "content": "hello"}]
    assert req.received_at <= time.time()


def test_fifo_order_then_default_then_custom_default(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(reply("first"), reply("second"))
    c = client(srv)
    got = [chat(c).choices[0].message.content for _ in range(3)]
    assert got == ["first", "second", DEFAULT_CHAT_CONTENT]
    srv.set_default("chat", lambda req: reply("echo:" + req["messages"][-1]["content"]))
    assert chat(c, "ping").choices[0].message.content == "echo:ping"
    assert srv.calls("chat") == 4
    srv.reset()
    assert srv.requests == [] and srv.calls("chat") == 0


def test_queues_are_per_endpoint_kind(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(status(500), kind="embeddings")
    c = client(srv)
    assert chat(c).choices[0].message.content == DEFAULT_CHAT_CONTENT
    with pytest.raises(openai.InternalServerError):
        c.embeddings.create(model="e", input="x")


def test_wrong_step_kind_is_a_loud_script_error(srv: ScriptedOpenAIServer) -> None:
    srv.enqueue(rerank_reply([1.0]), kind="chat")
    with pytest.raises(openai.InternalServerError, match="script error"):
        chat(client(srv))
    assert len(srv.script_errors) == 1


def test_models_and_unknown_path(srv: ScriptedOpenAIServer) -> None:
    ids = [m.id for m in client(srv).models.list()]
    assert "gpt-4o-mini" in ids
    r = httpx.post(srv.base_url + "/nope", json={})
    assert r.status_code == 404 and "error" in r.json()
    assert srv.calls("unknown") == 1


def test_concurrent_requests_with_latency() -> None:
    with ScriptedOpenAIServer(latency=0.05) as s:
        c = client(s)
        s.enqueue(*[reply(f"r{i}") for i in range(20)])
        out: list[str] = []
        lock = threading.Lock()

        def worker() -> None:
            content = chat(c).choices[0].message.content or ""
            with lock:
                out.append(content)

        threads = [threading.Thread(target=worker) for _ in range(20)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(out) == sorted(f"r{i}" for i in range(20))
        assert s.calls("chat") == 20 and s.pending("chat") == 0
        assert time.monotonic() - start < 20 * 0.05  # handled in parallel, not serially
