"""The pipeline end to end on a small corpus with the deterministic fake embedder:
every stage traced, reranker failure degrades instead of failing, no context means a
refusal, sources come from chunk metadata, and two builds rank identically."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from rag_app.embeddings.fake import FakeEmbedder
from rag_app.errors import RerankError
from rag_app.generation import REFUSAL_TEXT
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from rag_app.types import Chunk

BOOK = """---
book: 必修第一册
doc_id: bixiu1
---

# 必修第一册

<!-- page: 12 -->
## 3.2 二次函数的顶点式

二次函数的顶点式是 $y=a(x-h)^2+k$，顶点坐标为 $(h,k)$，对称轴是直线 $x=h$。

当 $a>0$ 时抛物线开口向上，函数在 $x=h$ 处取得最小值 $k$。

<!-- page: 13 -->
## 3.3 等比数列

等比数列的前 $n$ 项和：当 $q\\ne 1$ 时 $S_n=\\frac{a_1(1-q^n)}{1-q}$；当 $q=1$ 时 $S_n=na_1$。

## 3.4 诱导公式

诱导公式的口诀是“奇变偶不变，符号看象限”。
"""


class FailingReranker:
    name = "broken"

    def rerank(self, query: str, chunks: Sequence[Chunk], first_stage: Sequence[float] | None = None) -> list[float]:
        raise RerankError("rerank server said 503")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "bixiu1.md").write_text(BOOK, encoding="utf-8")
    return folder


def pipeline(corpus: Path, cache: Path, **overrides: object) -> RagPipeline:
    settings = Settings(corpus_path=str(corpus), cache_dir=str(cache), embedder="fake", reranker="local").replace(
        **overrides
    )
    return RagPipeline(settings, embedder=FakeEmbedder(), embedder_family="fake")


def test_every_stage_is_traced_and_sources_come_from_chunk_metadata(corpus: Path, tmp_path: Path) -> None:
    result = pipeline(corpus, tmp_path / "cache").chat("二次函数的顶点式是什么？")
    assert [s.name for s in result.trace.stages] == ["vector", "bm25", "fused", "reranked", "context", "generation"]
    assert result.context_used and not result.refused and not result.degraded
    assert result.generator == "extractive-baseline"
    # sources: numbered like the context, deduplicated, metadata from the chunk, not the prose
    assert [s.n for s in result.sources] == list(range(1, len(result.sources) + 1))
    assert [s.chunk_id for s in result.sources] == [c.chunk_id for c in result.context_used]
    first = result.sources[0]
    chunk = result.context_used[0]
    assert (first.book, first.section, first.page_start) == (chunk.book, chunk.section, chunk.page_start)
    assert "3.2二次函数的顶点式" in result.trace.stage("bm25").hits[0].chunk_id  # type: ignore[union-attr]


def test_a_failing_reranker_keeps_the_fused_order_and_marks_the_answer_degraded(corpus: Path, tmp_path: Path) -> None:
    settings = Settings(corpus_path=str(corpus), cache_dir=str(tmp_path / "c"), embedder="fake", rerank_top_n=3)
    pipe = RagPipeline(settings, embedder=FakeEmbedder(), embedder_family="fake", reranker=FailingReranker())
    result = pipe.chat("等比数列前n项和公式")
    assert result.degraded and result.degradation_reason == "rerank_failed"
    fused = result.trace.stage("fused").ids[:3]  # type: ignore[union-attr]
    assert result.trace.stage("reranked").ids == fused  # type: ignore[union-attr]
    assert result.answer and not result.refused  # the answer still comes


def test_nothing_retrieved_means_a_refusal_not_an_invented_answer(corpus: Path, tmp_path: Path) -> None:
    # threshold above any cosine: no vector hit; a question sharing no token with the corpus: no BM25 hit
    result = pipeline(corpus, tmp_path / "cache", similarity_threshold=1.5).chat("zzzz qqqq")
    assert result.refused and result.answer == REFUSAL_TEXT
    assert result.sources == () and result.context_used == ()
    assert "generation" not in [s.name for s in result.trace.stages]


def test_truncation_keeps_at_least_one_chunk(corpus: Path, tmp_path: Path) -> None:
    result = pipeline(corpus, tmp_path / "cache", context_chars=1).retrieve("诱导公式的口诀")
    assert len(result.context) == 1


def test_parent_context_mode_returns_sections(corpus: Path, tmp_path: Path) -> None:
    result = pipeline(corpus, tmp_path / "cache", context_mode="parent").retrieve("诱导公式的口诀")
    assert result.context and all(c.kind == "parent" for c in result.context)


def test_two_index_builds_give_identical_rankings(corpus: Path, tmp_path: Path) -> None:
    questions = ["二次函数的顶点式", "等比数列求和 q=1", "奇变偶不变", "抛物线开口向上的最小值"]
    a = pipeline(corpus, tmp_path / "one")
    b = pipeline(corpus, tmp_path / "two")
    assert a.index.stats.built and b.index.stats.built
    for q in questions:
        for stage in ("vector", "bm25", "fused", "reranked", "context"):
            assert a.retrieve(q).trace.stage(stage).ids == b.retrieve(q).trace.stage(stage).ids  # type: ignore[union-attr]


def test_an_unchanged_corpus_reuses_the_index_and_computes_no_embeddings(corpus: Path, tmp_path: Path) -> None:
    pipeline(corpus, tmp_path / "cache")
    again = pipeline(corpus, tmp_path / "cache")
    assert not again.index.stats.built and again.index.stats.embeddings_computed == 0


def test_chat_carries_the_sufficiency_record_of_an_answer(corpus: Path, tmp_path: Path) -> None:
    result = pipeline(corpus, tmp_path / "cache").chat("二次函数的顶点式是什么？")
    assert not result.refused and result.sufficiency is not None
    assert result.sufficiency.sufficient and result.sufficiency.reason == "sufficient"
    assert result.sufficiency.key_terms == ("二次", "函数", "顶点", "式")
    assert result.sufficiency.coverage == 1.0  # every key term is in the best chunks


def test_insufficient_evidence_is_refused_without_generation_or_sources(corpus: Path, tmp_path: Path) -> None:
    # an unreachable minimum score: the same question, judged insufficient
    result = pipeline(corpus, tmp_path / "cache", sufficiency_min_score_zh=1e6).chat("二次函数的顶点式是什么？")
    assert result.refused and result.answer == REFUSAL_TEXT
    assert result.sources == () and result.context_used == ()
    assert result.sufficiency is not None and result.sufficiency.reason == "low_score"
    # retrieval is traced as always (the retrieval tier reads it); nothing was generated
    assert [s.name for s in result.trace.stages] == ["vector", "bm25", "fused", "reranked", "context"]


def test_the_off_switch_skips_the_check(corpus: Path, tmp_path: Path) -> None:
    result = pipeline(corpus, tmp_path / "cache", sufficiency="off", sufficiency_min_score_zh=1e6).chat(
        "二次函数的顶点式是什么？"
    )
    assert not result.refused and result.sufficiency is None and result.sources
