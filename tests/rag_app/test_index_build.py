"""Index build, reuse, fingerprint, crash safety and the build lock."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import rag_app.index.build as build_module
from rag_app.errors import CorpusError
from rag_app.index import Index, build_or_load_index, index_fingerprint, indexed_text, load_index
from rag_app.index.build import fingerprint_for
from rag_app.index.fingerprint import INDEX_FORMAT_VERSION
from rag_app.index.vector_store import make_persistent_client
from rag_app.text import DEFAULT_TOKENIZER
from rag_app.types import Chunk, Document

DIM = 16


class CountingEmbedder:
    """Deterministic: each character adds to a blake2b-chosen bucket. Counts what it embeds."""

    def __init__(self, model_id: str = "test-hash-16", delay: float = 0.0, fail_after: int | None = None) -> None:
        self._model_id = model_id
        self.delay = delay
        self.fail_after = fail_after  # raise on the call after this many calls (a crash mid-build)
        self.passage_calls = 0
        self.passages_embedded = 0

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return DIM

    def embed_passages(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fail_after is not None and self.passage_calls >= self.fail_after:
            raise RuntimeError("embedder crashed (simulated)")
        time.sleep(self.delay)
        self.passage_calls += 1
        self.passages_embedded += len(texts)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self._vector(text)

    @staticmethod
    def _vector(text: str) -> npt.NDArray[np.float32]:
        v = np.zeros(DIM, dtype=np.float64)
        for ch in text or " ":
            h = int.from_bytes(hashlib.blake2b(ch.encode("utf-8"), digest_size=4).digest(), "little")
            v[h % DIM] += 1.0 if (h >> 8) & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return (v / np.linalg.norm(v)).astype(np.float32)


def make_chunk(
    chunk_id: str,
    text: str,
    kind: str = "child",
    parent_id: str | None = None,
    section: str = "1.1 集合",
    doc_id: str = "bixiu1",
) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        doc_id=doc_id,
        text=text,
        kind=kind,  # type: ignore[arg-type]
        parent_id=parent_id,
        book="必修第一册",
        section=section,
        page_start=3 if kind == "child" else None,
        page_end=None,
        char_start=0,
        char_end=len(text),
        metadata={"note": None, "level": 2},
    )


PARENT_A = "集合中的元素具有确定性、互异性和无序性。$A \\cap B$ 表示交集。父块独有词汇：鹦鹉。"
PARENT_B = "等比数列的前n项和公式为 $S_{n}=\\frac{a_1(1-q^n)}{1-q}$，其中 $q \\neq 1$。"
CHUNKS = [
    make_chunk("p1", PARENT_A, kind="parent"),
    make_chunk("c1", "集合中的元素具有确定性、互异性和无序性。", parent_id="p1"),
    make_chunk("c2", "$A \\cap B$ 表示交集，满足 $x \\leqslant 2$。", parent_id="p1"),
    make_chunk("p2", PARENT_B, kind="parent", section="4.3 等比数列"),
    make_chunk("c3", "等比数列的前n项和公式为 $S_{n}=\\frac{a_1(1-q^n)}{1-q}$", parent_id="p2", section="4.3 等比数列"),
    make_chunk("c4", "其中 $q \\neq 1$，当 q=1 时 S_n = n a_1。", parent_id="p2", section="4.3 等比数列"),
    make_chunk("c5", "## 4.3 等比数列\n公比为 q 的数列。", parent_id="p2", section="4.3 等比数列"),
]
DOCS = [Document(doc_id="bixiu1", title="必修第一册", text=PARENT_A + PARENT_B)]
CONFIG = {"chunk_size": 320, "chunk_overlap": 60, "parent_max_chars": 2400}


def build(cache: Path, embedder: CountingEmbedder | None = None, **overrides: Any) -> Index:
    args: dict[str, Any] = {
        "docs": DOCS,
        "chunks": CHUNKS,
        "embedder": embedder or CountingEmbedder(),
        "cache_dir": cache,
        "corpus_hash": "corpus-v1",
        "chunk_config": CONFIG,
    }
    args.update(overrides)
    return build_or_load_index(**args)


# ----------------------------------------------------------------------------- fingerprint
def test_fingerprint_is_sha256_of_canonical_json() -> None:
    payload = {
        "index_format": INDEX_FORMAT_VERSION,
        "corpus_hash": "h",
        "chunk_config": {"a": 1, "b": [2, 3]},
        "embedding_model_id": "m",
        "tokenizer": DEFAULT_TOKENIZER.signature,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    assert index_fingerprint("h", {"b": [2, 3], "a": 1}, "m") == expected  # key order does not matter


def test_fingerprint_changes_with_every_input() -> None:
    base = index_fingerprint("h", {"a": 1}, "m")
    assert len(base) == 16 and int(base, 16) >= 0
    variants = {
        index_fingerprint("h2", {"a": 1}, "m"),
        index_fingerprint("h", {"a": 2}, "m"),
        index_fingerprint("h", {"a": 1}, "m2"),
        index_fingerprint("h", {"a": 1}, "m", tokenizer_signature="other"),
    }
    assert base not in variants and len(variants) == 4
    with pytest.raises(ValueError, match="chunk_config must hold only JSON values"):
        index_fingerprint("h", {"a": object()}, "m")
    with pytest.raises(ValueError, match="corpus_hash is empty"):
        index_fingerprint("", {}, "m")


# --------------------------------------------------------------------------- indexed_text
def test_indexed_text_prefixes_the_section_unless_the_text_starts_with_it() -> None:
    assert indexed_text(CHUNKS[1]) == "1.1 集合\n集合中的元素具有确定性、互异性和无序性。"
    assert indexed_text(CHUNKS[6]) == "## 4.3 等比数列\n公比为 q 的数列。"  # heading already there
    assert indexed_text(make_chunk("x", "正文", section="")) == "正文"


# ------------------------------------------------------------------------- build and reuse
def test_build_then_reuse_without_embedding(tmp_path: Path) -> None:
    first_embedder = CountingEmbedder()
    first = build(tmp_path, first_embedder)
    assert first.stats.built and first.stats.embeddings_computed == 5
    assert first_embedder.passages_embedded == 5  # the 5 children, not the 2 parents
    assert (first.stats.n_docs, first.stats.n_parents, first.stats.n_children) == (1, 2, 5)
    directory = tmp_path / "index" / first.fingerprint
    assert first.directory == directory and (directory / "manifest.json").is_file()

    second_embedder = CountingEmbedder()
    second = build(tmp_path, second_embedder)
    assert not second.stats.built and second.stats.embeddings_computed == 0
    assert second_embedder.passage_calls == 0  # reuse never calls the embedder for passages
    assert second.fingerprint == first.fingerprint
    assert (second.stats.n_docs, second.stats.n_parents, second.stats.n_children) == (1, 2, 5)
    assert second.chunks == first.chunks and [c.chunk_id for c in second.children] == ["c1", "c2", "c3", "c4", "c5"]
    q = second_embedder.embed_query("等比数列求和")
    assert second.vector_search(q, 5) == first.vector_search(q, 5)
    assert second.bm25_search("等比数列求和", 5) == first.bm25_search("等比数列求和", 5)


def test_changed_corpus_config_or_model_builds_a_new_index(tmp_path: Path) -> None:
    base = build(tmp_path)
    changed = [
        build(tmp_path, corpus_hash="corpus-v2"),
        build(tmp_path, chunk_config={**CONFIG, "chunk_size": 200}),
        build(tmp_path, CountingEmbedder(model_id="test-hash-16-b")),
    ]
    assert all(ix.stats.built and ix.stats.embeddings_computed == 5 for ix in changed)
    fingerprints = {base.fingerprint} | {ix.fingerprint for ix in changed}
    assert len(fingerprints) == 4
    assert sorted(p.name for p in (tmp_path / "index").iterdir() if p.is_dir()) == sorted(fingerprints)
    assert not build(tmp_path).stats.built  # the first one is still there and reused


def test_directory_layout_and_chunks_file(tmp_path: Path) -> None:
    index = build(tmp_path)
    names = sorted(p.name for p in index.directory.iterdir())
    assert names[:2] == ["bm25", "chroma-" + names[1].split("-", 1)[1]]
    assert names[2:] == ["chunks.jsonl", "manifest.json"]
    lines = (index.directory / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [c.to_dict() for c in CHUNKS]
    manifest = json.loads((index.directory / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["fingerprint"] == index.fingerprint and manifest["embedding_dim"] == DIM
    assert manifest["n_children"] == 5 and manifest["embedding_model_id"] == "test-hash-16"
    assert index.embedder_model_id == "test-hash-16"


def test_only_children_are_searchable_and_parents_give_context(tmp_path: Path) -> None:
    index = build(tmp_path)
    assert index.bm25_search("鹦鹉", 5) == []  # a word found only in a parent
    assert {cid for cid, _ in index.bm25_search("等比数列", 10)} == {"c3", "c4", "c5"}  # section heading counts
    vector_ids = {cid for cid, _ in index.vector_search(CountingEmbedder().embed_query("集合"), 10)}
    assert vector_ids == {"c1", "c2", "c3", "c4", "c5"}
    assert index.parent_of("c2") == index.chunks["p1"]
    assert index.parent_of("p1") is None
    with pytest.raises(KeyError, match="'nope'"):
        index.parent_of("nope")


def test_bm25_search_uses_the_index_tokenizer(tmp_path: Path) -> None:
    index = build(tmp_path)
    # \le in the query, \leqslant in chunk c2: the tokenizer folds both to "leq"
    assert index.bm25_search(r"$x \le 2$ 交集", 1)[0][0] == "c2"
    # a_1 is one token: it matches c3 and c4 which contain a_1, not c1
    assert {cid for cid, _ in index.bm25_search("a_{1}", 10)} == {"c3", "c4"}


def test_vector_search_checks_the_query_dimension(tmp_path: Path) -> None:
    index = build(tmp_path)
    with pytest.raises(ValueError, match="dimension 3 but index .* 16-dimensional"):
        index.vector_search(np.ones(3, dtype=np.float32), 5)


def test_vector_scores_are_cosine_of_the_indexed_text(tmp_path: Path) -> None:
    index = build(tmp_path)
    emb = CountingEmbedder()
    q = emb.embed_query("等比数列")
    hits = index.vector_search(q, 5)
    by_id = {c.chunk_id: c for c in index.children}
    for cid, score in hits:
        expected = float(emb.embed_passages([indexed_text(by_id[cid])])[0].astype(np.float64) @ q.astype(np.float64))
        assert score == pytest.approx(expected, abs=1e-5)


# ----------------------------------------------------------------------------- robustness
def test_moving_a_page_marker_changes_the_fingerprint() -> None:
    moved = [dataclasses.replace(CHUNKS[0], page_start=(CHUNKS[0].page_start or 0) + 1)] + list(CHUNKS[1:])
    assert fingerprint_for(moved, "corpus-v1", CONFIG, "m") != fingerprint_for(CHUNKS, "corpus-v1", CONFIG, "m")


def test_crash_mid_build_is_never_taken_as_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_module, "EMBED_BATCH", 2)  # 5 children -> 3 embedder calls
    with pytest.raises(RuntimeError, match="simulated"):
        build(tmp_path, CountingEmbedder(fail_after=1))
    fp = fingerprint_for(CHUNKS, "corpus-v1", CONFIG, "test-hash-16")
    directory = tmp_path / "index" / fp
    assert (directory / "chunks.jsonl").is_file() and not (directory / "manifest.json").exists()
    retry = build(tmp_path)
    assert retry.stats.built and retry.stats.embeddings_computed == 5
    assert retry.vectors.count() == 5  # no leftovers from the crashed attempt


def test_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    first = build(tmp_path)
    for p in first.directory.glob("chroma-*"):
        shutil.rmtree(p)
    (first.directory / "bm25" / "bm25_meta.json").unlink()
    again = build(tmp_path)
    assert again.stats.built and again.fingerprint == first.fingerprint
    assert again.bm25_search("等比数列", 1)


def test_load_index_opens_a_complete_directory_and_rejects_an_unfinished_one(tmp_path: Path) -> None:
    index = build(tmp_path)
    loaded = load_index(index.directory)
    assert loaded.fingerprint == index.fingerprint and not loaded.stats.built
    (index.directory / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="not a complete index"):
        load_index(index.directory)


def test_external_client_keeps_vectors_in_its_collection(tmp_path: Path) -> None:
    # A PersistentClient elsewhere stands in for chromadb.HttpClient (a Chroma server).
    client = make_persistent_client(tmp_path / "server")
    first = build(tmp_path / "cache", client=client)
    assert not list(first.directory.glob("chroma-*"))
    assert first.vectors.name.startswith(f"rag-{first.fingerprint}-")  # unique per build on a shared client
    assert client.get_collection(first.vectors.name).count() == 5
    embedder = CountingEmbedder()
    second = build(tmp_path / "cache", embedder, client=client)
    assert not second.stats.built and embedder.passage_calls == 0
    q = embedder.embed_query("集合")
    assert second.vector_search(q, 3) == first.vector_search(q, 3)


@pytest.mark.parametrize(
    ("chunks", "message"),
    [
        ([make_chunk("a", "x"), make_chunk("a", "y")], "chunk id 'a' occurs twice"),
        ([make_chunk("a", "x", parent_id="ghost")], "names parent 'ghost'"),
        ([make_chunk("p", "x", kind="parent")], "none of kind 'child'"),
        ([make_chunk("a", "x", doc_id="other")], "doc 'other', which is not among the 1 documents"),
    ],
)
def test_bad_chunks_are_rejected_with_the_cause(tmp_path: Path, chunks: list[Chunk], message: str) -> None:
    with pytest.raises(CorpusError, match=message):
        build(tmp_path, chunks=chunks)


# ---------------------------------------------------------------------- concurrent builds
def _build_in_subprocess(cache: str, queue: Any) -> None:
    embedder = CountingEmbedder(delay=0.5)  # slow enough that the other process must wait
    index = build(Path(cache), embedder)
    queue.put(
        (index.stats.built, index.stats.embeddings_computed, embedder.passage_calls, index.bm25_search("集合", 2))
    )


def test_two_threads_building_the_same_index_build_it_once(tmp_path: Path) -> None:
    # flock excludes separate open() calls even within one process, so threads show it fast.
    embedders = [CountingEmbedder(delay=0.3), CountingEmbedder(delay=0.3)]
    results: list[Index] = []
    threads = [threading.Thread(target=lambda e=e: results.append(build(tmp_path, e))) for e in embedders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted((ix.stats.built, ix.stats.embeddings_computed) for ix in results) == [(False, 0), (True, 5)]
    assert sorted(e.passage_calls for e in embedders) == [0, 1]


@pytest.mark.slow  # ~6 s: two spawned interpreters import numpy, jieba and chromadb
def test_two_processes_building_the_same_index_build_it_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")  # no fork: chroma's Rust threads may be running here
    queue = ctx.Queue()
    procs = [ctx.Process(target=_build_in_subprocess, args=(str(tmp_path), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    results.sort()
    # one process built (5 embeddings in 1 call), the other waited on the lock and loaded
    assert [r[:3] for r in results] == [(False, 0, 0), (True, 5, 1)]
    assert results[0][3] == results[1][3] and results[0][3]
    assert (tmp_path / "index" / f"{fingerprint_for(CHUNKS, 'corpus-v1', CONFIG, 'test-hash-16')}.lock").exists()


# ------------------------------------------------------------------ counters and progress
def test_a_warm_rebuild_reads_every_embedding_from_the_cache(tmp_path: Path) -> None:
    """Issue 14: the counter says what happened, not len(children)."""
    from rag_app.embeddings.cache import CachedEmbedder

    cold_inner = CountingEmbedder()
    cold = build(tmp_path, CachedEmbedder(cold_inner, tmp_path))  # type: ignore[arg-type]
    assert (cold.stats.built, cold.stats.embeddings_computed, cold.stats.embeddings_cached) == (True, 5, 0)
    shutil.rmtree(cold.directory)  # the index is gone, the embedding cache stays

    warm_inner = CountingEmbedder()
    warm = build(tmp_path, CachedEmbedder(warm_inner, tmp_path))  # type: ignore[arg-type]
    assert (warm.stats.built, warm.stats.embeddings_computed, warm.stats.embeddings_cached) == (True, 0, 5)
    assert warm_inner.passages_embedded == 0
    manifest = json.loads((warm.directory / "manifest.json").read_text(encoding="utf-8"))
    assert (manifest["embeddings_computed"], manifest["embeddings_cached"]) == (0, 5)

    reused = build(tmp_path, CachedEmbedder(CountingEmbedder(), tmp_path))  # type: ignore[arg-type]
    assert (reused.stats.built, reused.stats.embeddings_computed, reused.stats.embeddings_cached) == (False, 0, 0)


def test_a_half_warm_cache_counts_both(tmp_path: Path) -> None:
    from rag_app.embeddings.cache import CachedEmbedder

    cached = CachedEmbedder(CountingEmbedder(), tmp_path)
    cached.embed_passages([indexed_text(c) for c in CHUNKS if c.chunk_id in ("c1", "c3")])
    index = build(tmp_path, cached)  # type: ignore[arg-type]
    assert (index.stats.embeddings_computed, index.stats.embeddings_cached) == (3, 2)  # c2, c4, c5 were new


def test_an_embedder_without_a_cache_computes_every_passage(tmp_path: Path) -> None:
    index = build(tmp_path, CountingEmbedder())
    assert (index.stats.embeddings_computed, index.stats.embeddings_cached) == (5, 0)


def test_progress_callable_sees_every_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build_module, "EMBED_BATCH", 2)
    seen: list[tuple[int, int]] = []
    build(tmp_path, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 5), (2, 5), (4, 5), (5, 5)]
    seen.clear()
    build(tmp_path, progress=lambda done, total: seen.append((done, total)))
    assert seen == []  # a reused index has nothing to report


def test_an_embedder_that_cuts_texts_changes_the_fingerprint_only_when_it_cuts_a_child(tmp_path: Path) -> None:
    base = build(tmp_path)
    roomy, tight = CountingEmbedder(), CountingEmbedder()
    roomy.max_chars, tight.max_chars = 2000, 10  # type: ignore[attr-defined]

    assert build(tmp_path, roomy).fingerprint == base.fingerprint  # no child is longer: same vectors, same index
    cut = build(tmp_path, tight)
    assert cut.fingerprint != base.fingerprint and cut.stats.built
