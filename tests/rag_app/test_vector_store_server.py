"""A real Chroma server (``chroma run``) against the embedded store: identical rankings
(ids and scores) in exact and HNSW mode, the same pipeline results, a lost or restarted
server handled by rebuild or reuse, a dead server named in a clear error, and the token
kept out of everything written or shown."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from rag_app.errors import ServiceError
from rag_app.index import ChromaVectorStore, Index, build_or_load_index
from rag_app.index.chroma_server import ChromaServer
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from tests.rag_app.test_index_build import CHUNKS, CONFIG, DOCS, CountingEmbedder
from tests.support.chroma_process import CHROMA, ChromaStartError, free_port, holds_port, pause
from tests.support.chroma_process import ChromaProcess as _ChromaProcess

REPO = Path(__file__).resolve().parents[2]
DEMO_CORPUS = REPO / "golden_sets" / "demo_maths" / "corpus"
DEMO_GOLDEN = REPO / "golden_sets" / "demo_maths" / "golden.jsonl"
TOKEN = "tok-Secret-4711"


class ChromaProcess(_ChromaProcess):
    """The shared server process, with pytest outcomes: skip without the binary, fail on a dead start."""

    def start(self) -> ChromaProcess:
        if not self.available():
            pytest.skip(f"no chroma binary at {CHROMA} (it comes with the chromadb package)")
        try:
            super().start()
        except ChromaStartError as exc:
            pytest.fail(str(exc))
        return self

    def client(self) -> Any:
        return ChromaServer("127.0.0.1", self.port).connect()


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaProcess]:
    process = ChromaProcess(tmp_path_factory.mktemp("chroma") / "data").start()
    try:
        yield process
    finally:
        process.stop()


def clustered(n: int, dim: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors around 12 centres, plus exact duplicates, so ties must be broken by id."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, dim))
    x = centres[rng.integers(0, 12, n)] + 0.6 * rng.normal(size=(n, dim))
    x[1::25] = x[0::25][: len(x[1::25])]  # every 25th pair identical
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_ids(vectors: npt.NDArray[np.float32], ids: list[str], q: npt.NDArray[np.float32], k: int) -> list[str]:
    sims = vectors.astype(np.float64) @ (q.astype(np.float64) / np.linalg.norm(q))
    return [ids[j] for j in sorted(range(len(ids)), key=lambda j: (-round(float(sims[j]), 6), ids[j]))[:k]]


# --------------------------------------------------------------------------- store level
@pytest.mark.parametrize(("exact_max", "mode"), [(20_000, "exact"), (50, "hnsw")])
def test_server_and_embedded_stores_rank_identically(
    chroma: ChromaProcess, tmp_path: Path, exact_max: int, mode: str
) -> None:
    vectors = clustered(400, 32, seed=7)
    ids = [f"c{i:04d}" for i in range(len(vectors))]
    name = f"rag-test-{uuid.uuid4().hex[:8]}"
    embedded = ChromaVectorStore(tmp_path / "db", name, exact_max=exact_max)
    server = ChromaVectorStore(None, name, client=chroma.client(), exact_max=exact_max)
    for store in (embedded, server):
        store.add(ids, vectors, metadatas=[{"n": i} for i in range(len(ids))])
        assert store.count() == 400 and store.mode == mode
    queries = clustered(120, 32, seed=8)
    for q in queries:
        for k in (1, 7, 20):
            got = server.query(q, k)
            assert got == embedded.query(q, k)  # same ids, same scores, bit for bit
            assert [i for i, _ in got] == exact_ids(vectors, ids, q, k)
    assert server.get(["c0003"])["c0003"][1] == {"n": 3}
    assert server.describe() == f"chroma {chroma.url} collection {name}"
    assert embedded.describe() == f"chroma embedded:{tmp_path / 'db'} collection {name}"


# --------------------------------------------------------------------------- pipeline level
def demo_questions() -> list[str]:
    with DEMO_GOLDEN.open(encoding="utf-8") as fh:
        return [json.loads(line)["question"] for line in fh if line.strip()]


def test_pipeline_via_server_equals_embedded_on_demo_questions(
    chroma: ChromaProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHROMA_AUTH_TOKEN", TOKEN)  # sent, ignored by this server, never written
    base = Settings(corpus_path=str(DEMO_CORPUS), cache_dir=str(tmp_path / "cache"), embedder="fake", reranker="local")
    embedded = RagPipeline(base)
    served = RagPipeline(base.replace(chroma_host="127.0.0.1", chroma_port=chroma.port))
    assert served.index.directory != embedded.index.directory  # side by side in one cache
    assert served.index.stats.built and served.info.index_fingerprint == embedded.info.index_fingerprint
    assert served.info.vector_store.startswith(f"chroma {chroma.url} collection rag-{served.info.index_fingerprint}-")
    assert embedded.info.vector_store.startswith("chroma embedded:")

    questions = demo_questions()
    assert len(questions) > 50
    for question in questions:
        a, b = embedded.chat(question), served.chat(question)
        # every stage: same ids, scores and ranks (timings aside)
        assert [(s.name, s.hits) for s in b.trace.stages] == [(s.name, s.hits) for s in a.trace.stages], question
        assert (b.answer, b.sources, b.refused) == (a.answer, a.sources, a.refused), question

    # The token went out in a header but is nowhere we write or show.
    written = "".join(
        p.read_text(errors="replace")
        for p in served.index.directory.rglob("*")
        if p.is_file() and p.suffix in (".json", ".jsonl")
    )
    shown = json.dumps(dataclasses.asdict(served.info)) + json.dumps(served.settings.to_dict())
    assert TOKEN not in written and TOKEN not in shown
    manifest = json.loads((served.index.directory / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["chroma"] == {"collection": served.index.vectors.name, "dir": None, "server": chroma.url}


# --------------------------------------------------------------------------- index lifecycle
def build(cache: Path, client: Any, embedder: CountingEmbedder | None = None) -> Index:
    return build_or_load_index(
        docs=DOCS,
        chunks=CHUNKS,
        embedder=embedder or CountingEmbedder(),
        cache_dir=cache,
        corpus_hash="corpus-v1",
        chunk_config=CONFIG,
        client=client,
    )


def test_lost_or_shrunken_collection_is_rebuilt_not_trusted(chroma: ChromaProcess, tmp_path: Path) -> None:
    client = chroma.client()
    first = build(tmp_path, client)
    q = CountingEmbedder().embed_query("集合")
    expected = first.vector_search(q, 5)

    embedder = CountingEmbedder()
    reused = build(tmp_path, client, embedder)
    assert not reused.stats.built and embedder.passage_calls == 0

    client.delete_collection(first.vectors.name)  # the server lost it
    second = build(tmp_path, client)
    assert second.stats.built and second.vectors.name != first.vectors.name
    assert second.vector_search(q, 5) == expected

    client.get_collection(second.vectors.name).delete(ids=["c1"])  # counts differ now
    third = build(tmp_path, client)
    assert third.stats.built and third.vector_search(q, 5) == expected
    names = {c.name for c in client.list_collections()}
    assert third.vectors.name in names and second.vectors.name not in names  # the replaced one is dropped


@pytest.mark.slow  # starts its own server twice: ~5 s on an idle machine
def test_dead_server_is_named_and_a_restart_reuses_the_persisted_index(tmp_path: Path) -> None:
    # (a server that comes back without the collection: see the lost-collection test)
    process = ChromaProcess(tmp_path / "data").start()
    try:
        first = build(tmp_path / "cache", process.client())
        q = CountingEmbedder().embed_query("等比数列")
        hnsw = ChromaVectorStore(None, first.vectors.name, client=first.vectors.client, create=False, exact_max=0)
        assert hnsw.mode == "hnsw" and hnsw.query(q, 3)
        process.stop()

        # a query that needs the server, and an index load, both name the dead server
        with pytest.raises(ServiceError, match=rf"cannot reach the Chroma server at {process.url} .*chroma run"):
            hnsw.query(q, 3)
        with pytest.raises(ServiceError, match=rf"cannot reach the Chroma server at {process.url}"):
            build(tmp_path / "cache", first.vectors.client)
        assert (first.directory / "manifest.json").is_file()  # a dead server does not wipe the local index

        process.start()  # same data path, same port
        embedder = CountingEmbedder()
        again = build(tmp_path / "cache", process.client(), embedder)
        assert not again.stats.built and embedder.passage_calls == 0
        assert again.vector_search(q, 3) == first.vector_search(q, 3)
    finally:
        process.stop()


@pytest.mark.slow  # starts its own server: ~3 s on an idle machine
def test_a_server_that_stops_answering_fails_a_query_after_the_timeout(tmp_path: Path) -> None:
    """SIGSTOP: the port still accepts connections (the kernel does), nothing answers."""
    process = ChromaProcess(tmp_path / "data").start()
    assert process.proc is not None
    try:
        client = ChromaServer("127.0.0.1", process.port, timeout=1.0).connect()
        first = build(tmp_path / "cache", client)
        hnsw = ChromaVectorStore(None, first.vectors.name, client=client, create=False, exact_max=0)
        q = CountingEmbedder().embed_query("等比数列")
        assert hnsw.query(q, 3)
        assert holds_port(process.proc.pid, process.port) is not False  # the server we will stop answers
        pause(process.proc.pid)
        try:
            started = time.monotonic()
            with pytest.raises(
                ServiceError, match=rf"the Chroma server at {process.url} did not answer within 1 s \(chroma_timeout\)"
            ):
                answered = hnsw.query(q, 3)
                held = holds_port(process.proc.pid, process.port)
                pytest.fail(f"a stopped server answered {answered[:1]}; pid {process.proc.pid} holds the port: {held}")
            assert time.monotonic() - started < 10  # one timeout, not forever
        finally:
            os.kill(process.proc.pid, signal.SIGCONT)
    finally:
        process.stop()


def test_pipeline_with_no_server_there_stops_with_the_fix(tmp_path: Path) -> None:
    port = free_port()
    settings = Settings(
        corpus_path=str(DEMO_CORPUS),
        cache_dir=str(tmp_path),
        embedder="fake",
        chroma_host="127.0.0.1",
        chroma_port=port,
    )
    with pytest.raises(ServiceError, match=rf"127.0.0.1:{port}.*chroma run --path .* --port {port}.*unset CHROMA_HOST"):
        RagPipeline(settings)
