"""OpenAIEmbedder against the scripted server (real HTTP on 127.0.0.1), and EndpointConfig."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_app.embeddings.cache import CachedEmbedder
from rag_app.embeddings.modality import Modality
from rag_app.embeddings.openai_embedder import OpenAIEmbedder
from rag_app.env import EndpointConfig
from rag_app.errors import ConfigError, ServiceError
from rag_app.settings import Settings
from tests.support.openai_server import (
    ScriptedOpenAIServer,
    deterministic_embedding,
    embeddings_reply,
    hang,
    insufficient_quota,
    rate_limited,
    status,
)

KEY = "sk-test-SECRET-4242"
MODEL = "text-embedding-3-small"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def make(srv: ScriptedOpenAIServer, timeout: float = 5.0, **kwargs: Any) -> OpenAIEmbedder:
    cfg = EndpointConfig.from_env(
        "RAG_EMBEDDING",
        {"RAG_EMBEDDING_BASE_URL": srv.base_url, "RAG_EMBEDDING_MODEL": MODEL, "RAG_EMBEDDING_API_KEY": KEY},
    )
    return OpenAIEmbedder(cfg, timeout=timeout, **kwargs)


def gaps(srv: ScriptedOpenAIServer) -> list[float]:
    """Seconds between consecutive embeddings requests, as the server received them."""
    times = [r.received_at for r in srv.requests_of("embeddings")]
    return [b - a for a, b in zip(times, times[1:])]


def free_port() -> int:
    """A port nothing listens on: bound once to get a free number, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- EndpointConfig ---------------------------------------------------------------------
def test_prefixed_variables_win_and_openai_ones_are_the_fallback() -> None:
    env = {
        "OPENAI_BASE_URL": "http://fallback:1/v1",
        "OPENAI_API_KEY": "k-fallback",
        "RAG_JUDGE_BASE_URL": "https://judge.example/v1/",
        "RAG_JUDGE_MODEL": "m",
    }
    cfg = EndpointConfig.from_env("RAG_JUDGE", env)
    assert (cfg.base_url, cfg.model, cfg.api_key) == ("https://judge.example/v1", "m", "k-fallback")
    assert (cfg.base_url_var, cfg.model_var, cfg.api_key_var) == (
        "RAG_JUDGE_BASE_URL",
        "RAG_JUDGE_MODEL",
        "OPENAI_API_KEY",
    )
    assert cfg.address == "judge.example:443"  # https default port


def test_blank_variables_count_as_unset_and_model_default_applies() -> None:
    env = {"RAG_X_BASE_URL": "  ", "OPENAI_BASE_URL": "http://h:8080/v1", "RAG_X_MODEL": ""}
    cfg = EndpointConfig.from_env("RAG_X", env, model_default="dflt")
    assert (cfg.base_url, cfg.model, cfg.model_var) == ("http://h:8080/v1", "dflt", "default")
    assert EndpointConfig.from_env("RAG_X", {"RAG_X_MODEL": "m"}, model_default="dflt").model == "m"


def test_require_names_every_missing_variable() -> None:
    with pytest.raises(ConfigError) as info:
        EndpointConfig.from_env("RAG_GENERATOR", {}).require()
    assert (
        "set RAG_GENERATOR_BASE_URL (or OPENAI_BASE_URL); RAG_GENERATOR_MODEL; "
        "RAG_GENERATOR_API_KEY (or OPENAI_API_KEY)"
    ) in str(info.value)
    only_url = EndpointConfig.from_env("RAG_RERANKER", {"RAG_RERANKER_BASE_URL": "http://h:1"})
    assert only_url.require("base_url") is only_url
    with pytest.raises(ConfigError, match=r"set RAG_RERANKER_API_KEY \(or OPENAI_API_KEY\)\."):
        only_url.require("base_url", "api_key")


def test_a_base_url_that_is_not_http_names_its_variable() -> None:
    cfg = EndpointConfig.from_env(
        "RAG_X", {"OPENAI_BASE_URL": "localhost:8000", "RAG_X_MODEL": "m", "OPENAI_API_KEY": "k"}
    )
    with pytest.raises(ConfigError, match=r"OPENAI_BASE_URL='localhost:8000' is not an http\(s\) URL"):
        cfg.require()


def test_repr_and_address_never_show_the_key() -> None:
    cfg = EndpointConfig("http://user:pw-in-url@10.0.0.5/v1", "m", KEY, "RAG_X", api_key_var="RAG_X_API_KEY")
    shown = repr(cfg) + str(cfg) + cfg.redacted() + cfg.address
    assert KEY not in shown and "pw-in-url" not in shown
    assert "api_key=<set via RAG_X_API_KEY>" in shown
    assert cfg.address == "10.0.0.5:80"
    assert EndpointConfig("http://[::1]:8000/v1", "m", "").address == "[::1]:8000"


# --- OpenAIEmbedder over HTTP -----------------------------------------------------------
def test_sends_the_key_as_bearer_and_returns_unit_vectors(server: ScriptedOpenAIServer) -> None:
    server.enqueue(embeddings_reply([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]]))
    emb = make(server)
    out = emb.embed_passages(["第一段", "second passage"])
    assert out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_allclose(out, [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], rtol=1e-6)  # (3,4)/5 and (0,0,2)/2
    req = server.requests_of("embeddings")[0]
    assert req.header("authorization") == f"Bearer {KEY}"
    assert req.json["model"] == MODEL and req.json["input"] == ["第一段", "second passage"]
    assert emb.dim == 3 and server.calls("embeddings") == 1  # dim learned from the answer, no probe


def test_default_server_vectors_round_trip(server: ScriptedOpenAIServer) -> None:
    emb = make(server)
    q = emb.embed_query("什么是导数")
    np.testing.assert_allclose(q, deterministic_embedding("什么是导数", 8), rtol=1e-6)
    assert emb.model_id == f"openai:{MODEL}@127.0.0.1:{server.port}"
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-6


def test_empty_text_is_sent_as_a_space(server: ScriptedOpenAIServer) -> None:
    make(server).embed_passages(["", "x"])
    assert server.requests_of("embeddings")[0].json["input"] == [" ", "x"]


# --- retries: the SDK's own ----------------------------------------------------------------
def test_500_then_success_is_retried(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(500), kind="embeddings")
    out = make(server).embed_passages(["a"])
    assert out.shape == (1, 8)
    assert [r.header("x-stainless-retry-count") for r in server.requests_of("embeddings")] == ["0", "1"]


def test_429_honours_retry_after_in_seconds(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rate_limited(retry_after=0.6), kind="embeddings")
    make(server).embed_passages(["a"])
    assert server.calls("embeddings") == 2 and gaps(server)[0] >= 0.6


def test_retry_after_as_an_http_date_is_honoured(server: ScriptedOpenAIServer) -> None:
    """Issue 12: the hand-written loop ignored HTTP-date Retry-After (and retried at once)."""
    emb = make(server)
    emb.embed_passages(["warm-up"])  # the SDK is loaded and connected: the date below is fresh
    when = email.utils.formatdate(time.time() + 3.0, usegmt=True)  # whole seconds: waits 2-3 s
    server.enqueue(status(503, headers={"Retry-After": when}), kind="embeddings")
    emb.embed_passages(["a"])
    assert server.calls("embeddings") == 3 and gaps(server)[1] >= 1.5  # the SDK's own backoff is <= 0.5 s


def test_persistent_5xx_gives_up_after_two_retries(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(502), status(502), status(502), kind="embeddings")
    with pytest.raises(
        ServiceError, match=r"failed after 3 attempts: HTTP 502.*gave up after the retry limit, max_retries=2"
    ):
        make(server).embed_passages(["a"])
    assert server.calls("embeddings") == 3


def test_auth_errors_are_not_retried_and_never_echo_the_key(server: ScriptedOpenAIServer) -> None:
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {KEY}",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    server.enqueue(status(401, echo), kind="embeddings")
    with pytest.raises(ServiceError) as info:
        make(server).embed_query("a")
    assert server.calls("embeddings") == 1
    message = str(info.value)
    assert KEY not in message and "[redacted]" in message and "failed after 1 attempt:" in message
    assert "check RAG_EMBEDDING_API_KEY" in message


def test_an_exhausted_quota_says_waiting_will_not_help(server: ScriptedOpenAIServer) -> None:
    server.enqueue(insufficient_quota(), kind="embeddings")
    with pytest.raises(ServiceError, match="insufficient_quota.*waiting will not help"):
        make(server, max_retries=0).embed_query("a")
    assert server.calls("embeddings") == 1


def test_unreachable_server_fails_within_the_backoff_naming_the_address() -> None:
    port = free_port()
    cfg = EndpointConfig(f"http://127.0.0.1:{port}/v1", MODEL, KEY, "RAG_EMBEDDING", "RAG_EMBEDDING_BASE_URL")
    emb = OpenAIEmbedder(cfg, timeout=30.0)
    start = time.monotonic()
    with pytest.raises(ServiceError) as info:
        emb.embed_passages(["a"])
    elapsed = time.monotonic() - start
    assert elapsed < 6.0  # the SDK's two backoffs (0.5 s, 1 s, less jitter), never the 30 s timeout
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "after 3 attempts" in message and "connection refused" in message
    assert "RAG_EMBEDDING_BASE_URL" in message and KEY not in message


def test_a_timeout_is_retried(server: ScriptedOpenAIServer) -> None:
    """Issue 12: timeouts were never retried."""
    server.enqueue(hang(2.0), kind="embeddings")
    out = make(server, timeout=0.5).embed_query("a")
    assert out.shape == (8,) and server.calls("embeddings") == 2


def test_a_server_that_keeps_hanging_fails_after_every_attempt_timed_out(server: ScriptedOpenAIServer) -> None:
    server.enqueue(hang(3.0), hang(3.0), kind="embeddings")
    start = time.monotonic()
    with pytest.raises(
        ServiceError, match=r"failed after 2 attempts: no response within 0.5s.*RAG_APP_REQUEST_TIMEOUT"
    ):
        make(server, timeout=0.5, max_retries=1).embed_query("a")
    assert time.monotonic() - start < 5.0 and server.calls("embeddings") == 2


def test_wrong_vector_count_is_a_malformed_answer(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(200, {"object": "list", "data": [], "model": MODEL}), kind="embeddings")
    with pytest.raises(ServiceError, match="malformed response: 0 embeddings for 1 inputs"):
        make(server).embed_query("a")


def test_from_settings_reads_the_environment_and_prefers_the_setting(server: ScriptedOpenAIServer) -> None:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY, "RAG_EMBEDDING_MODEL": "env-model"}
    assert OpenAIEmbedder.from_settings(Settings(), env).config.model == "env-model"
    emb = OpenAIEmbedder.from_settings(Settings(embedding_model="set-model", request_timeout=7.0), env)
    assert (emb.config.model, emb.timeout) == ("set-model", 7.0)
    with pytest.raises(ConfigError) as info:
        OpenAIEmbedder.from_settings(Settings(), {"OPENAI_API_KEY": KEY})
    message = str(info.value)
    assert "RAG_EMBEDDING_BASE_URL (or OPENAI_BASE_URL)" in message
    assert "RAG_EMBEDDING_MODEL or the embedding_model setting" in message
    assert "API_KEY" not in message.split("set ", 1)[1].split(".")[0]  # the key is present: not asked for


def test_warm_cache_sends_no_request(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    texts = ["函数", "数列", "集合"]
    cold = CachedEmbedder(make(server), tmp_path).embed_passages(texts)
    calls = server.calls("embeddings")
    warm_emb = CachedEmbedder(make(server), tmp_path)
    warm = warm_emb.embed_passages(texts)
    assert warm.tobytes() == cold.tobytes() and warm_emb.dim == 8
    assert warm_emb.stats.computed == 0 and server.calls("embeddings") == calls
    stored = b"".join(p.read_bytes() for p in (tmp_path / "embeddings").iterdir())
    assert KEY.encode() not in stored


# --- query/passage modality ----------------------------------------------------------------
def test_without_a_modality_nothing_is_added(server: ScriptedOpenAIServer) -> None:
    emb = make(server)
    emb.embed_query("什么是导数")
    emb.embed_passages(["导数的定义"])
    first, second = (r.json for r in server.requests_of("embeddings"))
    assert first["input"] == ["什么是导数"] and second["input"] == ["导数的定义"]
    assert "input_type" not in first and "input_type" not in second
    assert emb.model_id == f"openai:{MODEL}@127.0.0.1:{server.port}"  # ids (and caches) of before stay valid


def test_an_input_type_field_tells_queries_from_passages(server: ScriptedOpenAIServer) -> None:
    modality = Modality(field="task_type", query_type="RETRIEVAL_QUERY", passage_type="RETRIEVAL_DOCUMENT")
    emb = make(server, modality=modality)
    emb.embed_passages(["导数的定义", "极限"])
    emb.embed_query("什么是导数")
    passage, query = (r.json for r in server.requests_of("embeddings"))
    assert passage["task_type"] == "RETRIEVAL_DOCUMENT" and passage["input"] == ["导数的定义", "极限"]
    assert query["task_type"] == "RETRIEVAL_QUERY" and query["input"] == ["什么是导数"]
    assert emb.model_id.endswith(";task_type=RETRIEVAL_QUERY/RETRIEVAL_DOCUMENT")


def test_e5_prefixes_are_prepended(server: ScriptedOpenAIServer) -> None:
    emb = make(server, modality=Modality(query_prefix="query: ", passage_prefix="passage: "))
    emb.embed_passages(["导数的定义", ""])
    emb.embed_query("什么是导数")
    passage, query = (r.json for r in server.requests_of("embeddings"))
    assert passage["input"] == ["passage: 导数的定义", "passage: "] and query["input"] == ["query: 什么是导数"]
    assert "input_type" not in passage
    assert emb.model_id.endswith(";prefixes='query: '/'passage: '")


def test_the_modality_comes_from_the_settings_and_keeps_trailing_spaces(server: ScriptedOpenAIServer) -> None:
    env = {
        "RAG_APP_EMBEDDER": "openai",
        "RAG_APP_EMBEDDING_QUERY_PREFIX": "query: ",
        "RAG_APP_EMBEDDING_PASSAGE_PREFIX": "passage: ",
        "RAG_APP_EMBEDDING_INPUT_TYPE_FIELD": "input_type",
    }
    settings = Settings.load(pyproject=Path("/nonexistent/pyproject.toml"), env=env)
    emb = OpenAIEmbedder.from_settings(
        settings,
        {"RAG_EMBEDDING_BASE_URL": server.base_url, "RAG_EMBEDDING_MODEL": MODEL, "RAG_EMBEDDING_API_KEY": KEY},
    )
    assert emb.modality == Modality("query: ", "passage: ", "input_type", "query", "passage")
    emb.embed_query("q")
    req = server.requests_of("embeddings")[0].json
    assert (req["input"], req["input_type"]) == (["query: q"], "query")


def test_a_server_that_refuses_the_field_is_told_apart(server: ScriptedOpenAIServer) -> None:
    server.enqueue(
        status(400, {"error": {"message": "Unrecognized request argument supplied: input_type"}}), kind="embeddings"
    )
    with pytest.raises(ServiceError, match="refuses the 'input_type' field: unset embedding_input_type_field"):
        make(server, modality=Modality(field="input_type")).embed_query("q")
