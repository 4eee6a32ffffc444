"""Retrieval quality of the default offline pipeline, next to BM25-only and vector-only.

    python bench/retrieval_quality.py [--rag-dataset golden_sets/gaokao_math] [--set NAME=VALUE ...]

One run of the pipeline gives every stage's ranked list, so BM25-only (the bm25 stage),
vector-only (the vector stage, after the similarity threshold), the fused list, the
reranked list and the final context (the default pipeline's output) are measured on
the same questions in the same run. Document level: chunks are mapped to their
document, each document keeping its best rank; a question with several gold documents
(alternative solutions) counts as found when any of them is. Reported per split,
because settings were chosen on `tune` only and `holdout` is the check on unseen items.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import md_table, run_header, write_results  # noqa: E402
from rag_app.pipeline import RagPipeline  # noqa: E402
from rag_app.settings import Settings  # noqa: E402
from rag_eval.dataset import find_paths  # noqa: E402
from rag_eval.golden.load import load_golden_set  # noqa: E402
from rag_eval.metrics.grouped import grouped_compute  # noqa: E402
from rag_eval.metrics.retrieval import to_doc_ranking  # noqa: E402

STAGES = {
    "bm25": "BM25 only",
    "vector": "vector only",
    "fused": "RRF fused",
    "reranked": "reranked",
    "context": "default pipeline (context)",
}
METRICS = ("recall@5", "mrr@10", "recall@10", "hit@1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rag-dataset", default="golden_sets/gaokao_math")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    header = run_header("retrieval_quality", sys.argv[1:])
    overrides: dict[str, Any] = dict(s.split("=", 1) for s in args.set)
    paths = find_paths(args.dataset)
    settings = Settings.load(overrides={**overrides, "corpus_path": str(paths.corpus)})
    pipe = RagPipeline(settings)
    items = [i for i in load_golden_set(paths.golden) if not i.is_negative]
    doc_of = {cid: c.doc_id for cid, c in pipe.index.chunks.items()}
    sums: dict[tuple[str, str, str], float] = {}
    counts: dict[str, int] = {}
    t0 = time.perf_counter()
    for item in items:
        trace = pipe.retrieve(item.question).trace
        groups = [frozenset(r.doc_id for r in g.any_of if r.doc_id) for g in item.evidence]
        for split in (item.split, "all"):
            counts[split] = counts.get(split, 0) + 1
            for stage in STAGES:
                docs = to_doc_ranking(trace.stage(stage).ids, doc_of)  # type: ignore[union-attr]
                for m in METRICS:
                    key = (split, stage, m)
                    sums[key] = sums.get(key, 0.0) + grouped_compute(m, docs, groups)
    seconds = time.perf_counter() - t0
    table: dict[str, dict[str, dict[str, float]]] = {}
    for (split, stage, m), total in sums.items():
        table.setdefault(split, {}).setdefault(stage, {})[m] = round(total / counts[split], 4)
    print(
        f"{args.dataset}: {len(items)} questions, {pipe.info.embedder}, reranker {pipe.info.reranker}, "
        f"{pipe.info.n_children} chunks, {seconds:.1f} s"
    )
    for split in ("all", "tune", "holdout"):
        if split not in table:
            continue
        print(f"\n{split} (n={counts[split]}), document level")
        rows = [[STAGES[s]] + [f"{table[split][s][m]:.3f}" for m in METRICS] for s in STAGES]
        print(md_table(["retrieval", *METRICS], rows))
    write_results(
        "retrieval_quality" + ("" if args.dataset.endswith("gaokao_math") else "_" + Path(args.dataset).name),
        {
            **header,
            "dataset": args.dataset,
            "settings": settings.to_dict(),
            "system": vars(pipe.info),
            "n": counts,
            "seconds": seconds,
            "doc_level": table,
        },
    )


if __name__ == "__main__":
    main()
