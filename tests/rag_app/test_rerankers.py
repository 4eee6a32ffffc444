"""Rerankers: pass-through, HTTP (against the scripted server), local; apply_rerank; factory."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from rag_app.errors import ConfigError, RerankError
from rag_app.interfaces import Reranker, Vectors
from rag_app.retrieval import HttpReranker, LocalReranker, NoReranker, apply_rerank, make_reranker
from rag_app.settings import Settings
from rag_app.types import Chunk, Hit
from tests.support.openai_server import (
    ScriptedOpenAIServer,
    char_overlap_score,
    hang,
    raw,
    rerank_reply,
    status,
)

KEY = "sk-test-SECRET-0123456789"


def _chunk(chunk_id: str, text: str) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        doc_id="doc",
        text=text,
        kind="child",
        parent_id=None,
        book="人教A版必修第二册",
        section="4.2",
        page_start=10,
        page_end=10,
        char_start=0,
        char_end=len(text),
    )


def _chunks(*texts: str) -> list[Chunk]:
    return [_chunk(f"c{i}", t) for i, t in enumerate(texts)]


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


# --- NoReranker and apply_rerank --------------------------------------------------------------
def test_no_reranker_scores_keep_the_given_order() -> None:
    r = NoReranker()
    assert isinstance(r, Reranker)
    assert r.name == "none" and r.passthrough is True
    assert r.rerank("q", _chunks("a", "b", "c")) == [3.0, 2.0, 1.0]
    assert r.rerank("q", []) == []


def test_apply_rerank_sorts_by_score_and_breaks_ties_by_fused_rank() -> None:
    fused = [Hit("a", 0.05, 1), Hit("b", 0.04, 2), Hit("c", 0.03, 3), Hit("d", 0.02, 4)]
    out = apply_rerank(fused, [0.2, 0.9, 0.2, -math.inf])
    # b is best; a and c tie at 0.2 -> fused rank 1 before 3; d (not returned) is last.
    assert out == [Hit("b", 0.9, 1), Hit("a", 0.2, 2), Hit("c", 0.2, 3), Hit("d", -math.inf, 4)]


def test_apply_rerank_rejects_wrong_length_and_nan() -> None:
    fused = [Hit("a", 0.1, 1), Hit("b", 0.1, 2)]
    with pytest.raises(RerankError, match="1 scores for 2 chunks"):
        apply_rerank(fused, [0.5])
    with pytest.raises(RerankError, match="NaN.*'b'"):
        apply_rerank(fused, [0.5, math.nan])


# --- HttpReranker ----------------------------------------------------------------------------
QUERY = "等差数列的通项公式"
DOCS = ("等差数列的通项公式是 a_n = a_1 + (n-1)d", "三角函数的周期", "数列求和")


def test_http_success_maps_results_back_to_input_order(server: ScriptedOpenAIServer) -> None:
    r = HttpReranker(server.base_url, "bge-reranker-v2-m3", KEY, timeout=5)
    scores = r.rerank(QUERY, _chunks(*DOCS))
    # The default responder scores each document by char overlap; the server answers
    # sorted by score, so getting input order back proves the index mapping.
    assert scores == pytest.approx([char_overlap_score(QUERY, d) for d in DOCS], abs=1e-6)
    (req,) = server.requests_of("rerank")
    assert req.path == "/v1/rerank"
    assert req.json == {"model": "bge-reranker-v2-m3", "query": QUERY, "documents": list(DOCS), "top_n": 3}
    assert req.header("Authorization") == f"Bearer {KEY}"
    assert isinstance(r, Reranker) and r.name == "http"


def test_http_scripted_scores_and_no_auth_header_without_key(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rerank_reply([0.1, 0.9, 0.5]))
    r = HttpReranker(server.base_url, timeout=5)
    assert r.rerank("q", _chunks(*DOCS)) == [0.1, 0.9, 0.5]
    (req,) = server.requests_of("rerank")
    assert req.header("Authorization") is None
    assert "model" not in req.json  # no model configured: let the server use its own


def test_http_documents_not_returned_get_minus_inf(server: ScriptedOpenAIServer) -> None:
    server.enqueue(rerank_reply([0.1, 0.9, 0.5]))
    r = HttpReranker(server.base_url, "m", timeout=5, top_n=2)
    assert r.rerank("q", _chunks(*DOCS)) == [-math.inf, 0.9, 0.5]
    assert server.requests_of("rerank")[0].json["top_n"] == 2


def test_http_tei_flavour_sends_texts_and_reads_bare_list(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(200, [{"index": 1, "score": 0.7}, {"index": 0, "score": 0.2}]), kind="rerank")
    r = HttpReranker(server.root_url, flavour="tei", timeout=5)
    assert r.rerank("q", _chunks("x", "y")) == [0.2, 0.7]
    (req,) = server.requests_of("rerank")
    assert req.path == "/rerank"
    assert req.json["texts"] == ["x", "y"] and "documents" not in req.json


def test_http_parses_either_shape_whatever_the_flavour(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(200, [{"index": 0, "score": 0.3}]), kind="rerank")
    assert HttpReranker(server.base_url, "m", timeout=5).rerank("q", _chunks("x")) == [0.3]
    server.enqueue(status(200, {"results": [{"index": 0, "relevance_score": 0.4}]}), kind="rerank")
    assert HttpReranker(server.root_url, flavour="tei", timeout=5).rerank("q", _chunks("x")) == [0.4]


def test_http_empty_chunks_make_no_request(server: ScriptedOpenAIServer) -> None:
    assert HttpReranker(server.base_url, timeout=5).rerank("q", []) == []
    assert server.calls("rerank") == 0


@pytest.mark.parametrize(
    ("step", "match"),
    [
        (status(500), "HTTP 500"),
        (status(503), "HTTP 503"),
        (status(404), r"HTTP 404.*RAG_RERANKER_BASE_URL"),
        (status(422, {"detail": "bad input"}), r"HTTP 422.*bad input"),
        (raw(b"not json"), "not JSON"),
        (raw(b"<html>oops</html>", content_type="text/html"), "not JSON"),
        (status(200, {"data": []}), "unexpected JSON shape"),
        (status(200, {"results": [{"index": 3, "relevance_score": 0.5}]}), r"index 3, outside 0\.\.1"),
        (status(200, {"results": [{"index": -1, "relevance_score": 0.5}]}), "index -1, outside"),
        (status(200, {"results": [{"relevance_score": 0.5}]}), "no integer 'index'"),
        (status(200, {"results": [{"index": "0", "relevance_score": 0.5}]}), "no integer 'index'"),
        (status(200, {"results": [{"index": True, "relevance_score": 0.5}]}), "no integer 'index'"),
        (
            status(200, {"results": [{"index": 0, "relevance_score": 0.5}, {"index": 0, "relevance_score": 0.4}]}),
            "index 0 appears twice",
        ),
        (status(200, {"results": [{"index": 0}]}), "no finite 'relevance_score'"),
        (status(200, {"results": [{"index": 0, "relevance_score": "high"}]}), "no finite"),
        (raw(b'{"results": [{"index": 0, "relevance_score": NaN}]}'), "no finite"),
        (status(200, {"results": ["0.5"]}), "not an object"),
    ],
)
def test_http_failures_raise_rerank_error(server: ScriptedOpenAIServer, step: object, match: str) -> None:
    server.enqueue(step, kind="rerank")  # type: ignore[arg-type]
    r = HttpReranker(server.base_url, "m", KEY, timeout=5)
    with pytest.raises(RerankError, match=match) as info:
        r.rerank("q", _chunks("a", "b"))
    assert KEY not in str(info.value)
    assert server.base_url in str(info.value)  # says which endpoint failed


def test_http_error_echoing_the_key_is_redacted(server: ScriptedOpenAIServer) -> None:
    server.enqueue(status(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}), kind="rerank")
    r = HttpReranker(server.base_url, "m", KEY, timeout=5)
    with pytest.raises(RerankError, match=r"HTTP 401.*RAG_RERANKER_API_KEY") as info:
        r.rerank("q", _chunks("a"))
    assert KEY not in str(info.value) and "***" in str(info.value)


def test_http_timeout_is_quick_and_clear(server: ScriptedOpenAIServer) -> None:
    server.enqueue(hang(5.0), kind="rerank")
    r = HttpReranker(server.base_url, "m", KEY, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(RerankError, match=r"did not answer within 0\.3 s"):
        r.rerank("q", _chunks("a"))
    assert time.monotonic() - t0 < 2.0


def test_http_connection_refused() -> None:
    with ScriptedOpenAIServer() as srv:
        url = srv.base_url
    # The server is stopped: nothing listens on that port any more.
    r = HttpReranker(url, "m", KEY, timeout=2)
    with pytest.raises(RerankError, match="cannot reach reranker") as info:
        r.rerank("q", _chunks("a"))
    assert KEY not in str(info.value)


def test_http_rejects_bad_configuration() -> None:
    with pytest.raises(ConfigError, match="RAG_RERANKER_FLAVOUR"):
        HttpReranker("http://127.0.0.1:1", flavour="jina-v9")
    with pytest.raises(ConfigError, match="RAG_RERANKER_BASE_URL"):
        HttpReranker("")


# --- LocalReranker -----------------------------------------------------------------------
class CharBagEmbedder:
    """Tiny deterministic embedder: counts of each character hashed into 64 buckets."""

    model_id = "test-charbag-64"
    dim = 64

    def __init__(self) -> None:
        self.passage_calls: list[list[str]] = []

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for ch in text:
            if not ch.isspace():
                v[ord(ch) % self.dim] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        assert all(t.strip() for t in texts), "the reranker must not embed empty texts"
        self.passage_calls.append(list(texts))
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self._vec(text)


class TableEmbedder:
    """Vectors given by hand, so cosines are arithmetic (note: D is deliberately not unit length)."""

    model_id = "test-table"
    dim = 2
    table = {"q": [1.0, 0.0], "A": [1.0, 0.0], "B": [0.0, 1.0], "C": [0.6, 0.8], "D": [3.0, 4.0]}

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return np.array([self.table[text]], dtype=np.float32)  # (1, dim) is accepted too


class BrokenEmbedder(CharBagEmbedder):
    def embed_query(self, text: str) -> Vectors:
        raise RuntimeError("model file missing")


def _jieba(text: str) -> list[str]:
    import jieba

    return jieba.lcut(text)


def _split(text: str) -> list[str]:
    return text.split()


def test_local_ranks_the_relevant_chinese_chunk_first() -> None:
    r = LocalReranker(CharBagEmbedder(), _jieba)
    query = "等差数列的通项公式是什么？"
    chunks = [
        _chunk("sin", "函数 y = sin x 的最小正周期是 2π，值域为 [-1, 1]。"),
        _chunk("ap", "一般地，等差数列{a_n}的通项公式为 a_n = a_1 + (n-1)d，其中 d 为公差。"),
    ]
    parts = r.explain(query, chunks)
    unrelated, relevant = parts
    assert relevant.total > unrelated.total
    # Each signal agrees on its own, so the win is not an artefact of one weight.
    assert relevant.semantic > unrelated.semantic
    assert relevant.coverage > unrelated.coverage
    assert relevant.exact > unrelated.exact
    assert relevant.coverage == 1.0  # 等差数列, 通项, 公式 are all in the chunk
    assert r.rerank(query, chunks) == [p.total for p in parts]
    assert r.rerank(query, chunks) == r.rerank(query, chunks)  # deterministic


def test_local_total_is_the_documented_weighted_sum() -> None:
    r = LocalReranker(CharBagEmbedder(), _jieba)
    (p,) = r.explain("等差数列的通项公式", [_chunk("x", "等差数列的公差")])
    assert p.total == pytest.approx(0.5 * p.semantic + 0.4 * p.coverage + 0.1 * p.exact)


def test_local_semantic_part_is_the_cosine() -> None:
    r = LocalReranker(TableEmbedder(), _split, w_semantic=1.0, w_coverage=0.0, w_exact=0.0)
    # cos(q, A) = 1, cos(q, B) = 0, cos(q, C) = 0.6, cos(q, D) = 3/5 = 0.6 (normalised here).
    assert r.rerank("q", _chunks("A", "B", "C", "D")) == pytest.approx([1.0, 0.0, 0.6, 0.6])


def test_local_coverage_uniform_and_idf_weighted() -> None:
    chunks = _chunks("the vertex of a parabola", "focus")
    uniform = LocalReranker(CharBagEmbedder(), _split, w_semantic=0, w_coverage=1, w_exact=0)
    # Content tokens of the query: parabola, vertex, focus. Chunk 0 has 2 of 3, chunk 1 has 1 of 3.
    assert uniform.rerank("parabola vertex focus", chunks) == pytest.approx([2 / 3, 1 / 3])
    idf = {"parabola": 3.0, "vertex": 1.0, "focus": 2.0}
    weighted = LocalReranker(CharBagEmbedder(), _split, idf=idf, w_semantic=0, w_coverage=1, w_exact=0)
    # (3 + 1) / (3 + 1 + 2) and 2 / 6.
    assert weighted.rerank("parabola vertex focus", chunks) == pytest.approx([4 / 6, 2 / 6])
    # Stop words ("what", "is", "the") are not content: coverage stays 2/3, 1/3.
    assert uniform.rerank("what is the parabola vertex focus", chunks) == pytest.approx([2 / 3, 1 / 3])


def test_local_exact_matches_formulas_and_multichar_terms() -> None:
    r = LocalReranker(CharBagEmbedder(), _split, w_semantic=0, w_coverage=0, w_exact=1)
    query = "求 f(x)=x^2+1 的 最小值"  # terms: "f(x)=x^2+1" and "最小值" ("求", "的" are stop words)
    chunks = _chunks(
        "当 x = 0 时 f(x) = x^2 + 1 取得最小值 1",  # both, formula spaced differently: 2/2
        "函数的最小值",  # only 最小值: 1/2
        "f(x) = x^2 - 1",  # neither: 0
    )
    assert r.rerank(query, chunks) == pytest.approx([1.0, 0.5, 0.0])
    # Full-width input is normalised: ｆ(ｘ)＝ｘ^２+１ is the same formula.
    assert r.rerank(query, _chunks("ｆ(ｘ)＝ｘ^２＋１")) == pytest.approx([0.5])
    # Latin words match whole tokens only: "sin" is not found inside "using".
    assert r.rerank("sin cos", _chunks("using cosine", "sin and cos")) == pytest.approx([0.0, 1.0])


def test_local_never_crashes_on_empty_input() -> None:
    emb = CharBagEmbedder()
    r = LocalReranker(emb, _jieba)
    assert r.rerank("等差数列", []) == []
    assert r.rerank("", _chunks("等差数列", "")) == [0.0, 0.0]
    # Punctuation only: no content tokens, no terms, so the lexical parts are exactly 0.
    assert LocalReranker(emb, _jieba, w_semantic=0).rerank("？！", _chunks("。", "")) == [0.0, 0.0]
    scores = r.rerank("等差数列", _chunks("", "等差数列"))
    assert scores[0] == 0.0 and scores[1] > 0.0
    assert emb.passage_calls[-1] == ["等差数列"]  # the empty chunk was never embedded


def test_local_failures_become_rerank_errors() -> None:
    with pytest.raises(RerankError, match="RuntimeError: model file missing"):
        LocalReranker(BrokenEmbedder(), _jieba).rerank("q", _chunks("a"))

    class WrongDim(CharBagEmbedder):
        def embed_query(self, text: str) -> Vectors:
            return np.ones(3, dtype=np.float32)

    with pytest.raises(RerankError, match="query dim 3 but passage dim 64"):
        LocalReranker(WrongDim(), _jieba).rerank("q", _chunks("a"))

    def bad_tokenize(text: str) -> list[str]:
        raise ValueError("dictionary not loaded")

    with pytest.raises(RerankError, match="dictionary not loaded"):
        LocalReranker(CharBagEmbedder(), bad_tokenize).rerank("q", _chunks("a"))


@pytest.mark.parametrize(
    "weights",
    [
        {"w_semantic": -0.1},
        {"w_exact": math.inf},
        {"w_prior": -1.0},
        {"w_semantic": 0, "w_coverage": 0, "w_exact": 0, "w_prior": 0},
    ],
)
def test_local_rejects_bad_weights(weights: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="LocalReranker"):
        LocalReranker(CharBagEmbedder(), _split, **weights)


# --- make_reranker ---------------------------------------------------------------------------
def test_make_reranker_by_name() -> None:
    emb = CharBagEmbedder()
    assert isinstance(make_reranker(Settings(reranker="none"), emb, _split), NoReranker)
    local = make_reranker(Settings(reranker="local"), emb, _split)
    assert isinstance(local, LocalReranker) and local.name == "local"


def test_make_reranker_unknown_name_lists_valid_ones() -> None:
    s = Settings()
    object.__setattr__(s, "reranker", "cross-encoder")  # Settings itself would refuse it
    with pytest.raises(ConfigError, match=r"unknown reranker 'cross-encoder'.*http, local, none"):
        make_reranker(s, CharBagEmbedder(), _split)


def test_make_reranker_http_from_environment(server: ScriptedOpenAIServer) -> None:
    env = {"RAG_RERANKER_BASE_URL": server.base_url, "RAG_RERANKER_MODEL": "env-model", "RAG_RERANKER_API_KEY": KEY}
    r = make_reranker(Settings(reranker="http", request_timeout=4.0), CharBagEmbedder(), _split, env=env)
    assert isinstance(r, HttpReranker) and r.timeout == 4.0 and r.flavour == "cohere"
    server.enqueue(rerank_reply([0.2, 0.8]))
    assert r.rerank("q", _chunks("a", "b")) == [0.2, 0.8]
    req = server.requests_of("rerank")[0]
    assert req.json["model"] == "env-model" and req.header("Authorization") == f"Bearer {KEY}"
    # settings.reranker_model wins over RAG_RERANKER_MODEL.
    r2 = make_reranker(Settings(reranker="http", reranker_model="bge"), CharBagEmbedder(), _split, env=env)
    assert isinstance(r2, HttpReranker) and r2.model == "bge"
    tei = make_reranker(
        Settings(reranker="http"),
        CharBagEmbedder(),
        _split,
        env={"RAG_RERANKER_BASE_URL": server.root_url, "RAG_RERANKER_FLAVOUR": "TEI"},
    )
    assert isinstance(tei, HttpReranker) and tei.flavour == "tei"


def test_make_reranker_http_missing_base_url_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="RAG_RERANKER_BASE_URL"):
        make_reranker(Settings(reranker="http"), CharBagEmbedder(), _split, env={})


def test_make_reranker_http_requires_a_model_for_cohere_flavour_only() -> None:
    env = {"RAG_RERANKER_BASE_URL": "http://127.0.0.1:9/v1"}
    with pytest.raises(ConfigError, match="RAG_RERANKER_MODEL"):
        make_reranker(Settings(reranker="http"), CharBagEmbedder(), _split, env=env)
    tei = make_reranker(
        Settings(reranker="http"), CharBagEmbedder(), _split, env={**env, "RAG_RERANKER_FLAVOUR": "tei"}
    )
    assert isinstance(tei, HttpReranker) and tei.model == ""
    with pytest.raises(ConfigError, match="RAG_RERANKER_FLAVOUR='jina'"):
        make_reranker(Settings(reranker="http"), CharBagEmbedder(), _split, env={**env, "RAG_RERANKER_FLAVOUR": "jina"})


def test_local_with_the_project_tokenizer() -> None:
    from rag_app.text import tokenize

    r = LocalReranker(CharBagEmbedder(), tokenize)
    query = "求 f(x)=x^2+1 的最小值"
    chunks = _chunks("函数 f(x) = x^2 + 1 在 x = 0 处取得最小值 1。", "等比数列的前 n 项和公式。")
    relevant, unrelated = r.explain(query, chunks)
    assert relevant.total > unrelated.total
    assert relevant.exact == 1.0  # both "f(x)=x^2+1" and "最小值" found verbatim


def test_local_prior_adds_the_fused_score_relative_to_the_best() -> None:
    reranker = LocalReranker(CharBagEmbedder(), _split, w_semantic=0, w_coverage=0, w_exact=0, w_prior=0.5)
    # fused scores 1/61 and 1/62 (ranks 1 and 2 of one list): prior = 1 and (1/62)/(1/61)
    scores = reranker.rerank("q", _chunks("a", "b"), [1 / 61, 1 / 62])
    assert scores == pytest.approx([0.5 * 1.0, 0.5 * (61 / 62)])
    assert reranker.rerank("q", _chunks("a", "b")) == [0.0, 0.0]  # no first stage given: no prior


def test_local_prior_length_mismatch_is_a_rerank_error() -> None:
    with pytest.raises(RerankError, match="2 first-stage scores for 1 chunks"):
        LocalReranker(CharBagEmbedder(), _split).rerank("q", _chunks("a"), [0.1, 0.2])
