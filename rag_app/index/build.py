"""Build the hybrid index once per (corpus, chunking, embedding model), then reuse it.

Layout of ``<cache_dir>/index/<fingerprint>/``::

    chunks.jsonl      every chunk (parents and children), ``Chunk.to_dict()`` per line
    bm25/             BM25Index arrays (npz) and vocabulary (json)
    chroma-<id>/      the local Chroma database (absent when a Chroma client is passed in)
    chroma.json       with a client only: its collection and server, written BEFORE the vectors
    manifest.json     written LAST: an index directory without it is an unfinished build

With a Chroma client passed in (a server: ``chromadb.HttpClient``) the directory is
``<fingerprint>@<8 hex of the server address>``, so the embedded index and one per
server live side by side in one cache and switching ``CHROMA_HOST`` on and off does not
rebuild. The server collection is ``rag-<fingerprint>-<build id>``: unique per build,
so two caches (two machines, a test run and a dev checkout) sharing one server never
reset each other's collection; a rebuild deletes the collection of the build it
replaces (named in ``chroma.json``, even when that build crashed). The local manifest
is checked against the server on every load: a missing collection or a different
count means the index is rebuilt, never trusted. The token is never written anywhere:
the manifest names the server by ``http(s)://host:port`` only.

Only child chunks are embedded and BM25-indexed; parents are stored so that a hit can
be widened to its parent for context. A child is indexed as ``indexed_text(chunk)``
(section heading + text), the same string for both indexes.

Builds run under an exclusive ``fcntl.flock`` on ``<cache_dir>/index/<fingerprint>.lock``:
when two processes (pytest-xdist workers) want the same missing index, one builds and
the other waits, then loads the finished index without embedding anything.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from rag_app.errors import CorpusError, RagAppError
from rag_app.index.bm25 import BM25Index
from rag_app.index.chroma_server import client_location, lost_server_error
from rag_app.index.fingerprint import INDEX_FORMAT_VERSION, index_fingerprint
from rag_app.index.progress import Progress, ProgressCallback, progress_reporter
from rag_app.index.vector_store import ChromaVectorStore
from rag_app.interfaces import Embedder
from rag_app.text import DEFAULT_TOKENIZER, Tokenizer
from rag_app.types import Chunk, Document

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

MANIFEST_FILE = "manifest.json"
CHROMA_FILE = "chroma.json"
CHUNKS_FILE = "chunks.jsonl"
BM25_DIR = "bm25"
EMBED_BATCH = 32  # passages handed to the embedder (and Chroma) at a time; one progress step


def indexed_text(chunk: Chunk) -> str:
    """The string embedded and BM25-indexed for a child: its section heading, then its text.

    A child cut from the middle of a section does not say what the section is about;
    prefixing the heading gives both indexes that context. The heading is not repeated
    when the text already starts with it (possibly after Markdown ``#`` marks).
    """
    section = chunk.section.strip()
    if not section or chunk.text.lstrip("# \t\r\n").startswith(section):
        return chunk.text
    return f"{section}\n{chunk.text}"


@dataclass(frozen=True)
class IndexStats:
    """How the index came to be in this call. ``built`` is false when an existing index was reused.

    ``embeddings_computed``: passages the embedding model computed for this build;
    ``embeddings_cached``: passages read from the embedding cache instead. Both count
    distinct texts (children with identical text share one vector) and both are 0 when
    the index was reused (no passage was embedded). An embedder without a cache
    computes every passage it is given. The manifest keeps the build's counts.
    """

    n_docs: int
    n_parents: int
    n_children: int
    built: bool
    seconds: float
    embeddings_computed: int
    embeddings_cached: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Index:
    """A loaded hybrid index: chunks, BM25 over children, Chroma vectors of children."""

    def __init__(
        self,
        *,
        fingerprint: str,
        directory: Path,
        chunks: dict[str, Chunk],
        bm25: BM25Index,
        vectors: ChromaVectorStore,
        embedder_model_id: str,
        embedding_dim: int,
        tokenizer: Tokenizer,
        stats: IndexStats,
    ) -> None:
        self.fingerprint = fingerprint
        self.directory = directory
        self.chunks = chunks
        self.children: list[Chunk] = [c for c in chunks.values() if c.kind == "child"]
        self.bm25 = bm25
        self.vectors = vectors
        self.embedder_model_id = embedder_model_id
        self.embedding_dim = embedding_dim
        self.tokenizer = tokenizer
        self.stats = stats

    def parent_of(self, chunk_id: str) -> Chunk | None:
        """The parent chunk of ``chunk_id``, or None for a parent or a child without one."""
        chunk = self.chunks.get(chunk_id)
        if chunk is None:
            raise KeyError(f"chunk id {chunk_id!r} is not in index {self.fingerprint} ({self.directory})")
        return self.chunks.get(chunk.parent_id) if chunk.parent_id else None

    def vector_search(self, query_vector: npt.ArrayLike, k: int) -> list[tuple[str, float]]:
        """Children nearest to ``query_vector`` as (chunk_id, cosine), best first, ties by id."""
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.embedding_dim:
            raise ValueError(
                f"query vector has dimension {q.shape[0]} but index {self.fingerprint} was built with "
                f"{self.embedding_dim}-dimensional vectors of {self.embedder_model_id!r}; embed the query "
                "with the same embedder"
            )
        return self.vectors.query(q, k)

    def bm25_search(self, query_text: str, k: int) -> list[tuple[str, float]]:
        """Children by BM25 score for ``query_text`` (same tokenizer as the index), best first."""
        return self.bm25.search(self.tokenizer.tokenize(query_text), k)


def build_or_load_index(
    docs: Sequence[Document],
    chunks: Sequence[Chunk],
    embedder: Embedder,
    cache_dir: Path | str,
    corpus_hash: str,
    chunk_config: Mapping[str, Any],
    *,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    client: ClientAPI | None = None,
    progress: Progress = None,
) -> Index:
    """Reuse the index for this corpus, chunking and model if a complete one exists, else build it.

    ``client``: a Chroma client (e.g. ``chromadb.HttpClient``, see
    ``ChromaServer.connect``) to keep the vectors in; default is a local
    ``PersistentClient`` inside the index directory. A server that stops answering
    raises ``ServiceError`` naming its address, instead of a rebuild or a traceback.

    ``progress``: how a build reports embedding progress (``rag_app.index.progress``):
    None = a bar on stderr when it is a terminal, True = always, False = never, or a
    ``(done, total)`` callable. A reused index reports nothing.
    """
    fp = fingerprint_for(chunks, corpus_hash, cut_config(chunk_config, chunks, embedder), embedder.model_id, tokenizer)
    root = Path(cache_dir) / "index"
    directory = root / index_dir_name(fp, client)
    t0 = time.perf_counter()
    try:
        loaded = _try_load(directory, fp, tokenizer, client, t0)
        if loaded is not None:
            return loaded
        root.mkdir(parents=True, exist_ok=True)
        with _exclusive_lock(root / f"{directory.name}.lock"):
            # Another process may have finished the build while we waited for the lock.
            loaded = _try_load(directory, fp, tokenizer, client, t0)
            if loaded is not None:
                return loaded
            return _build(
                docs, chunks, embedder, directory, fp, corpus_hash, chunk_config, tokenizer, client, t0, progress
            )
    except RagAppError:
        raise
    except Exception as exc:
        error = lost_server_error(client, exc) if client is not None else None
        if error is None:
            raise
        raise error from None


def index_dir_name(fp: str, client: ClientAPI | None) -> str:
    """``<fp>`` for the embedded store, ``<fp>@<8 hex of the store address>`` for a client's."""
    if client is None:
        return fp
    return f"{fp}@{hashlib.sha256(client_location(client).encode('utf-8')).hexdigest()[:8]}"


def fingerprint_for(
    chunks: Sequence[Chunk],
    corpus_hash: str,
    chunk_config: Mapping[str, Any],
    embedding_model_id: str,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
) -> str:
    """The fingerprint ``build_or_load_index`` stores an index under.

    The chunk layout goes in too: page markers are not part of the corpus hash but
    they are part of chunk ids and metadata, so moving one must not reuse the index.
    """
    layout = {**dict(chunk_config), "chunks_digest": chunks_digest(chunks)}
    return index_fingerprint(corpus_hash, layout, embedding_model_id, tokenizer_signature=tokenizer.signature)


def cut_config(chunk_config: Mapping[str, Any], chunks: Sequence[Chunk], embedder: Embedder) -> Mapping[str, Any]:
    """``chunk_config`` plus ``embed_max_chars`` when the embedder cuts some child's text.

    An embedder that cuts long texts (``CachedEmbedder.max_chars``) gives other vectors
    for those texts only: an index none of whose children is that long keeps its
    fingerprint, one with a longer child gets a new one (and is rebuilt, never mixed).
    """
    limit = getattr(embedder, "max_chars", None)
    if not isinstance(limit, int) or not any(c.kind == "child" and len(indexed_text(c)) > limit for c in chunks):
        return chunk_config
    return {**dict(chunk_config), "embed_max_chars": limit}


def chunks_digest(chunks: Sequence[Chunk]) -> str:
    """sha256 over every chunk's id, offsets, pages and parent: what chunking decided."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(
            f"{c.chunk_id}\x1f{c.char_start}\x1f{c.char_end}\x1f{c.page_start}\x1f{c.page_end}\x1f{c.parent_id}\x1e".encode()
        )
    return h.hexdigest()


def load_index(
    directory: Path | str, *, client: ClientAPI | None = None, tokenizer: Tokenizer = DEFAULT_TOKENIZER
) -> Index:
    """Open a complete index directory (one with ``manifest.json``)."""
    directory = Path(directory)
    t0 = time.perf_counter()
    manifest = _read_manifest(directory)
    return _load(directory, manifest, tokenizer, client, t0)


# --------------------------------------------------------------------------- internals
@contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    # The lock file is never deleted: deleting it would let a third process lock a new
    # inode while the second still holds the old one.
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: {directory} is not a complete index (an interrupted build?)")
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("index_format") != INDEX_FORMAT_VERSION:
        raise ValueError(
            f"{path}: index_format {manifest.get('index_format')!r}, this code reads {INDEX_FORMAT_VERSION}; "
            f"delete {directory} so that it is rebuilt"
        )
    return manifest


def _try_load(directory: Path, fp: str, tokenizer: Tokenizer, client: ClientAPI | None, t0: float) -> Index | None:
    """The index at ``directory`` if it is complete and consistent, else None (rebuild it)."""
    if not (directory / MANIFEST_FILE).is_file():
        return None
    try:
        manifest = _read_manifest(directory)
        if manifest.get("fingerprint") != fp or manifest.get("tokenizer") != tokenizer.signature:
            return None
        return _load(directory, manifest, tokenizer, client, t0)
    except Exception as exc:  # noqa: BLE001 - any damage means "not reusable": rebuild under the lock
        # ...but a server that is down is not damage: rebuilding would only fail too.
        error = lost_server_error(client, exc) if client is not None else None
        if error is not None:
            raise error from None
        return None


def _load(
    directory: Path, manifest: Mapping[str, Any], tokenizer: Tokenizer, client: ClientAPI | None, t0: float
) -> Index:
    chunks: dict[str, Chunk] = {}
    with (directory / CHUNKS_FILE).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                c = Chunk.from_dict(json.loads(line))
                chunks[c.chunk_id] = c
    bm25 = BM25Index.load(directory / BM25_DIR)
    store = _open_store(directory, manifest, client, reset=False)
    n_children = int(manifest["n_children"])
    if len(bm25) != n_children or store.count() != n_children:
        raise ValueError(
            f"index {directory}: manifest says {n_children} children, BM25 has {len(bm25)}, "
            f"Chroma collection {store.name!r} has {store.count()}; delete {directory} to rebuild"
        )
    stats = IndexStats(
        n_docs=int(manifest["n_docs"]),
        n_parents=int(manifest["n_parents"]),
        n_children=n_children,
        built=False,
        seconds=time.perf_counter() - t0,
        embeddings_computed=0,
        embeddings_cached=0,
    )
    return Index(
        fingerprint=str(manifest["fingerprint"]),
        directory=directory,
        chunks=chunks,
        bm25=bm25,
        vectors=store,
        embedder_model_id=str(manifest["embedding_model_id"]),
        embedding_dim=int(manifest["embedding_dim"]),
        tokenizer=tokenizer,
        stats=stats,
    )


def _open_store(
    directory: Path, manifest: Mapping[str, Any], client: ClientAPI | None, *, reset: bool
) -> ChromaVectorStore:
    """The build's store (``reset``: emptied) or a finished index's (must exist, never created)."""
    chroma = manifest["chroma"]
    if client is not None:
        return ChromaVectorStore(None, chroma["collection"], client=client, reset=reset, create=reset)
    if not chroma.get("dir"):
        raise ValueError(
            f"index {directory} keeps its vectors on a Chroma server ({chroma.get('server') or 'a client'}, "
            f"collection {chroma['collection']!r}); pass the same client to open it"
        )
    return ChromaVectorStore(directory / chroma["dir"], chroma["collection"], reset=reset, create=reset)


def _drop_previous_collection(directory: Path, client: ClientAPI | None, location: str) -> None:
    """Delete the server collection of the build this one replaces, so a server does not fill up.

    Best effort: a collection that is already gone, or one on another server, is left alone.
    """
    if client is None:
        return  # the embedded store is deleted with the directory
    try:
        previous = json.loads((directory / CHROMA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(previous, dict) and previous.get("server") == location and previous.get("collection"):
        ChromaVectorStore.drop(client, str(previous["collection"]))


def _validate(docs: Sequence[Document], chunks: Sequence[Chunk]) -> None:
    ids: set[str] = set()
    for c in chunks:
        if c.chunk_id in ids:
            raise CorpusError(
                f"chunk id {c.chunk_id!r} occurs twice (doc {c.doc_id!r}); the chunker must make ids unique"
            )
        ids.add(c.chunk_id)
        if c.kind not in ("child", "parent"):
            raise CorpusError(f"chunk {c.chunk_id!r} has kind {c.kind!r}; use 'child' or 'parent'")
    for c in chunks:
        if c.parent_id is not None and c.parent_id not in ids:
            raise CorpusError(f"chunk {c.chunk_id!r} names parent {c.parent_id!r}, which is not among the chunks")
    if docs:
        doc_ids = {d.doc_id for d in docs}
        for c in chunks:
            if c.doc_id not in doc_ids:
                raise CorpusError(
                    f"chunk {c.chunk_id!r} belongs to doc {c.doc_id!r}, which is not among the {len(docs)} documents"
                )
    if not any(c.kind == "child" for c in chunks):
        raise CorpusError(
            f"nothing to index: {len(chunks)} chunks from {len(docs)} documents, none of kind 'child'; "
            "check the corpus path and the chunker settings"
        )


def _embed(embedder: Embedder, texts: Sequence[str], first_id: str) -> tuple[npt.NDArray[np.float32], int, int]:
    """Vectors of ``texts`` and (computed, read from cache): asked of a caching embedder,
    else every text counts as computed."""
    counted = getattr(embedder, "embed_passages_counted", None)
    if callable(counted):
        raw, counts = counted(list(texts))
        computed, cached = int(counts.computed), int(counts.cached)
    else:
        raw, computed, cached = embedder.embed_passages(list(texts)), len(texts), 0
    vecs = np.asarray(raw, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise ValueError(
            f"embedder {embedder.model_id!r} returned shape {vecs.shape} for {len(texts)} passages "
            f"(starting at chunk {first_id!r}); embed_passages must return (n_texts, dim)"
        )
    return vecs, computed, cached


def _chunk_metadata(c: Chunk) -> dict[str, Any]:
    return {
        "doc_id": c.doc_id,
        "parent_id": c.parent_id,
        "book": c.book,
        "section": c.section,
        "page_start": c.page_start,
        "page_end": c.page_end,
    }


def _embed_into(
    store: ChromaVectorStore,
    embedder: Embedder,
    children: Sequence[Chunk],
    texts: Sequence[str],
    report: ProgressCallback,
) -> tuple[int, int, int]:
    """Embed ``texts`` in batches into ``store``; (dimension, computed, read from cache)."""
    dim = computed = cached = 0
    for lo in range(0, len(children), EMBED_BATCH):
        batch = children[lo : lo + EMBED_BATCH]
        vecs, n_computed, n_cached = _embed(embedder, texts[lo : lo + EMBED_BATCH], batch[0].chunk_id)
        if dim and vecs.shape[1] != dim:
            raise ValueError(f"embedder {embedder.model_id!r} changed dimension mid-build ({dim} -> {vecs.shape[1]})")
        dim = int(vecs.shape[1])
        store.add(
            [c.chunk_id for c in batch],
            vecs,
            metadatas=[_chunk_metadata(c) for c in batch],
            documents=[c.text for c in batch],
        )
        computed, cached = computed + n_computed, cached + n_cached
        report(lo + len(batch), len(children))
    return dim, computed, cached


def _build(
    docs: Sequence[Document],
    chunks: Sequence[Chunk],
    embedder: Embedder,
    directory: Path,
    fp: str,
    corpus_hash: str,
    chunk_config: Mapping[str, Any],
    tokenizer: Tokenizer,
    client: ClientAPI | None,
    t0: float,
    progress: Progress,
) -> Index:
    _validate(docs, chunks)
    # Whatever is here is an unfinished or damaged build (we hold the lock and found no
    # loadable index): start from nothing. A fresh Chroma directory name per build keeps
    # any Chroma client cached for the old path in this process from being reused.
    build_id = uuid.uuid4().hex[:8]
    location = client_location(client) if client is not None else ""
    _drop_previous_collection(directory, client, location)
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    chroma: dict[str, Any] = (
        {"collection": f"rag-{fp}-{build_id}", "dir": None, "server": location}
        if client is not None
        else {"collection": f"rag-{fp}", "dir": f"chroma-{build_id}", "server": None}
    )
    manifest: dict[str, Any] = {
        "index_format": INDEX_FORMAT_VERSION,
        "fingerprint": fp,
        "corpus_hash": corpus_hash,
        "chunk_config": dict(chunk_config),
        "embedding_model_id": embedder.model_id,
        "tokenizer": tokenizer.signature,
        "chroma": chroma,
    }
    if client is not None:
        # Before any vector is written: a crashed build's collection can still be found and dropped.
        (directory / CHROMA_FILE).write_text(json.dumps(chroma, sort_keys=True), encoding="utf-8")

    with (directory / CHUNKS_FILE).open("w", encoding="utf-8") as fh:
        for c in chunks:
            fh.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")

    children = [c for c in chunks if c.kind == "child"]
    texts = [indexed_text(c) for c in children]
    bm25 = BM25Index.build([c.chunk_id for c in children], [tokenizer.tokenize(t) for t in texts])
    bm25.save(directory / BM25_DIR)

    store = _open_store(directory, manifest, client, reset=True)
    with progress_reporter(progress, f"index {fp}: embedding", len(children)) as report:
        dim, computed, cached = _embed_into(store, embedder, children, texts, report)

    stats = IndexStats(
        n_docs=len(docs),
        n_parents=sum(1 for c in chunks if c.kind == "parent"),
        n_children=len(children),
        built=True,
        seconds=time.perf_counter() - t0,
        embeddings_computed=computed,
        embeddings_cached=cached,
    )
    manifest.update(
        embedding_dim=dim,
        n_docs=stats.n_docs,
        n_parents=stats.n_parents,
        n_children=stats.n_children,
        embeddings_computed=stats.embeddings_computed,
        embeddings_cached=stats.embeddings_cached,
        build_seconds=round(stats.seconds, 3),
        built_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    # Last, and atomically: from here on the directory counts as a complete index.
    tmp = directory / f".{MANIFEST_FILE}.tmp"
    tmp.write_text(json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, directory / MANIFEST_FILE)

    return Index(
        fingerprint=fp,
        directory=directory,
        chunks={c.chunk_id: c for c in chunks},
        bm25=bm25,
        vectors=store,
        embedder_model_id=embedder.model_id,
        embedding_dim=dim,
        tokenizer=tokenizer,
        stats=stats,
    )
