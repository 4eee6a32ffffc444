"""Exact vector search with numpy's BLAS on one thread vs its default threads.

``ChromaVectorStore.query`` in exact mode is one matrix-vector product, which OpenBLAS
splits across threads above ~9k elements. On a 2-core CI machine whose other core is
busy (``pytest -n 2``: the other worker), the second BLAS thread waits for a core and
the calling thread spins meanwhile. Since the fix, the product runs inside
``single_threaded_blas()``; this script measures both ways on the same index, question
by question interleaved, with and without a CPU hog on the other core (a busy-looping
subprocess standing in for the other xdist worker), and counts the queries whose top-k
differs between the two (a multi-threaded product may split a row's dot product into
partial sums, so scores can differ in the last float32 bit; one thread gives the same
scores on any machine, whatever its core count).

Index: the 10k-chunk dataset of ``bench/scale.py`` (real documents + synthetic padding),
built with the ``fake`` embedder into a temporary ``cache_dir`` (or any ``--rag-dataset``
folder with a ``corpus.jsonl``). 64-dim fake vectors, as in the scale run.

    python bench/blas_threads.py [--rag-dataset DIR] [--queries 300]

Writes ``bench/results/blas_threads.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, md_table, ratio, read_jsonl, run_header, summary_ms, write_results  # noqa: E402

import rag_app.index.vector_store as vs  # noqa: E402
from rag_app.pipeline import RagPipeline  # noqa: E402
from rag_app.settings import Settings  # noqa: E402

NAME = "blas_threads"
DEFAULT_DATASET = Path("/tmp/rag_scale_datasets/0d648cd705e9/size-10000")
HOG = "import time\nend = time.time() + 3600\nwhile time.time() < end:\n    pass\n"


@contextlib.contextmanager
def hog(on: bool) -> Iterator[None]:
    """A busy-looping process on the other core (or nothing)."""
    proc = subprocess.Popen([sys.executable, "-c", HOG]) if on else None
    try:
        time.sleep(0.5 if on else 0.0)
        yield
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


def measure(pipe: RagPipeline, vectors: list[Any], k: int) -> dict[str, Any]:
    single: Callable[[], Any] = vs.single_threaded_blas
    ways: dict[str, Callable[[], Any]] = {
        "one thread (now)": single,
        "default threads (before)": contextlib.nullcontext,
    }
    times: dict[str, list[float]] = {w: [] for w in ways}
    rankings: dict[str, list[list[tuple[str, float]]]] = {w: [] for w in ways}
    pipe.index.vector_search(vectors[0], k)  # first query reads the vectors back from Chroma
    for i, q in enumerate(vectors):
        order = list(ways) if i % 2 == 0 else list(reversed(ways))
        for way in order:
            vs.single_threaded_blas = ways[way]  # type: ignore[assignment]
            t0 = time.perf_counter()
            ranked = pipe.index.vector_search(q, k)
            times[way].append(time.perf_counter() - t0)
            rankings[way].append(ranked)
    vs.single_threaded_blas = single  # type: ignore[assignment]
    a, b = rankings.values()
    differ = sum(1 for x, y in zip(a, b) if x != y)
    return {"ms": {w: summary_ms(t) for w, t in times.items()}, "queries_ranked_differently": differ}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rag-dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    if not (args.dataset / "corpus.jsonl").is_file():
        raise SystemExit(f"{args.dataset}: no corpus.jsonl; run bench/scale.py first or pass --rag-dataset")
    header = run_header(NAME, argv or sys.argv[1:])
    work = Path(tempfile.mkdtemp(prefix="bench-blas-"))
    try:
        settings = Settings.load(
            overrides={
                "corpus_path": str(args.dataset / "corpus.jsonl"),
                "cache_dir": str(work),
                "embedder": "fake",
                "reranker": "none",
            }
        )
        t0 = time.perf_counter()
        pipe = RagPipeline(settings)
        build_s = time.perf_counter() - t0
        questions = [str(r["question"]) for r in read_jsonl(args.dataset / "qa.jsonl")[: args.queries]]
        vectors = [pipe.embedder.embed_query(q) for q in questions]
        k = settings.vector_top_k
        rows, payload = [], {}
        for busy in (False, True):
            with hog(busy):
                result = measure(pipe, vectors, k)
                load = load_average()[0]
            label = "other core busy" if busy else "other core idle"
            payload[label] = {**result, "load_1min": load}
            one, many = result["ms"]["one thread (now)"], result["ms"]["default threads (before)"]
            rows.append(
                [
                    label,
                    f"{many['p50_ms']:.3f} / {many['p95_ms']:.3f}",
                    f"{one['p50_ms']:.3f} / {one['p95_ms']:.3f}",
                    f"{ratio(one['p50_ms'], many['p50_ms']):.2f} / {ratio(one['p95_ms'], many['p95_ms']):.2f}",
                    f"{result['queries_ranked_differently']} of {len(vectors)}",
                    f"{load:.1f}",
                ]
            )
        n_children = pipe.info.n_children
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = md_table(
        [
            "condition",
            "default threads p50 / p95 ms",
            "one thread p50 / p95 ms",
            "one / default",
            "queries ranked differently",
            "load (1 min)",
        ],
        rows,
    )
    print(f"{n_children} chunks, {len(vectors)} queries, k={k}, index built in {build_s:.1f} s\n")
    print(table)
    write_results(
        NAME, {**header, "n_chunks": n_children, "queries": len(vectors), "k": k, "results": payload, "table": table}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
