"""rag_app's HTTP API on 127.0.0.1: response shapes, 404 without material, 422 on bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag_app.http_server import make_server
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings

DOCS = [
    {
        "doc_id": "deriv",
        "title": "Derivatives",
        "text": "The derivative of x squared is two x. It measures the rate of change.",
    },
    {"doc_id": "log", "title": "Logarithms", "text": "The logarithm of a product equals the sum of the logarithms."},
    {"doc_id": "vec", "title": "Vectors", "text": "The dot product of two vectors uses the cosine of their angle."},
    {"doc_id": "prob", "title": "Probability", "text": "Independent events multiply their probabilities."},
]  # four documents: with two, BM25's idf of a word in one of them is zero


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("api")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    # A threshold no fake vector reaches: questions without shared words find nothing. The
    # sufficiency check is off: it never answers without a vector hit (test_sufficiency.py).
    settings = Settings(
        corpus_path=str(corpus),
        cache_dir=str(root / "cache"),
        embedder="fake",
        reranker="none",
        similarity_threshold=0.999,
        sufficiency=False,
    )
    yield from serving(RagPipeline(settings))


def serving(pipeline: RagPipeline) -> Iterator[str]:
    """Serve ``pipeline`` on a free 127.0.0.1 port for as long as the generator is open."""
    with make_server(pipeline, "127.0.0.1", 0) as server:
        yield server.url


def post(url: str, path: str, body: Any) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url + path, content=content, headers={"Content-Type": "application/json"}, timeout=30)


def test_health_names_the_index_and_models(api: str) -> None:
    r = httpx.get(f"{api}/api/health", timeout=10)

    assert r.status_code == 200
    assert r.json()["status"] == "ok"
    assert {"index_fingerprint", "embedder", "reranker", "generator"} <= set(r.json()["info"])


def test_retrieve_returns_ranked_chunks_and_every_stage(api: str) -> None:
    r = post(api, "/api/retrieve", {"question": "derivative of x squared", "top_k": 1})

    assert r.status_code == 200
    body = r.json()
    assert [i["chunk_id"] for i in body["items"]] == [body["stages"]["context"][0]["chunk_id"]]
    item = body["items"][0]
    assert item["doc_id"] == "deriv" and "derivative" in item["text"]
    assert set(item) == {
        "chunk_id",
        "doc_id",
        "text",
        "score",
        "kind",
        "parent_id",
        "book",
        "section",
        "page_start",
        "page_end",
    }
    assert list(body["stages"]) == ["vector", "bm25", "fused", "reranked", "context"]
    assert body["stages"]["bm25"][0] == {
        "chunk_id": body["stages"]["bm25"][0]["chunk_id"],
        "score": pytest.approx(body["stages"]["bm25"][0]["score"]),
        "rank": 1,
    }
    assert (body["degraded"], body["degradation_reason"]) == (False, None)


def test_chat_returns_answer_sources_and_context(api: str) -> None:
    r = post(api, "/api/chat", {"question": "What is the derivative of x squared?", "top_k": 2})

    assert r.status_code == 200
    body = r.json()
    assert body["answer"] and body["refused"] is False
    assert body["sources"][0]["doc_id"] == "deriv"
    assert set(body["sources"][0]) == {"n", "chunk_id", "doc_id", "book", "section", "page_start", "page_end"}
    assert body["context_used"] and body["generator"] == "extractive-baseline"


@pytest.mark.parametrize("path", ["/api/retrieve", "/api/chat"])
def test_no_relevant_material_is_a_404_with_the_same_shape(api: str, path: str) -> None:
    r = post(api, path, {"question": "zzqx wvvy"})

    assert r.status_code == 404
    body = r.json()
    assert body["error"] == "no_relevant_material" and "no relevant material" in body["detail"]
    assert body.get("items", body.get("context_used")) == []
    assert "stages" in body


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({}, "'question' is required"),
        ({"question": "   "}, "'question' is required"),
        ({"question": 3}, "'question' is required"),
        ({"question": "q", "top_k": 0}, "'top_k' must be an integer from 1"),
        ({"question": "q", "top_k": "5"}, "'top_k' must be an integer from 1"),
        ({"question": "q", "top_k": True}, "'top_k' must be an integer from 1"),
        ({"question": "q", "top-k": 5}, "unknown field(s) ['top-k']"),
        (b"not json", "the body is not JSON"),
        ([1, 2], "the body must be a JSON object"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(api: str, body: Any, detail: str) -> None:
    r = post(api, "/api/retrieve", body)

    assert r.status_code == 422
    assert r.json()["error"] == "invalid_request"
    assert detail in r.json()["detail"]


def test_chat_history_must_be_messages(api: str) -> None:
    r = post(api, "/api/chat", {"question": "q", "history": ["hi"]})
    assert (r.status_code, r.json()["error"]) == (422, "invalid_request")


def test_unknown_routes_and_methods_say_what_exists(api: str) -> None:
    assert httpx.get(f"{api}/api/nope", timeout=10).status_code == 404
    assert "POST /api/retrieve" in httpx.get(f"{api}/api/nope", timeout=10).json()["detail"]
    r = httpx.get(f"{api}/api/retrieve", timeout=10)
    assert (r.status_code, r.headers["allow"]) == (405, "POST")


def test_a_trailing_slash_and_a_query_string_reach_the_same_route(api: str) -> None:
    assert httpx.get(f"{api}/api/health/?x=1", timeout=10).status_code == 200
    r = post(api, "/api/retrieve/", {"question": "derivative of x squared", "top_k": 1})
    assert r.status_code == 200 and r.json()["items"][0]["doc_id"] == "deriv"
