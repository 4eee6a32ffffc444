"""BM25 retrieval quality of the project tokenizer vs plain jieba, on gaokao maths.

Task: each gaokao question -> its worked solution(s), over the whole-document corpus
(544 solutions). Prints recall@5 (share of gold documents in the top 5, averaged over
questions) and MRR@10 (reciprocal rank of the first gold document in the top 10).

    python bench/bm25_tokenizer_quality.py [--rag-dataset DIR] [--variants]

``--variants`` also scores the tokenizer options one at a time, which is how the
defaults in ``rag_app/text.py`` were chosen. Scores come from ``BM25Index``, which
equals ``rank_bm25.BM25Okapi`` (tests/rag_app/test_bm25.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jieba

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_app.index.bm25 import BM25Index  # noqa: E402
from rag_app.text import Tokenizer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATASETS  # noqa: E402

DEFAULT_DATASET = DATASETS / "gaokao_math_public"
TokenizeFn = Callable[[str], list[str]]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def evaluate(tokenize: TokenizeFn, corpus: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict[str, float]:
    ids = [d["doc_id"] for d in corpus]
    index = BM25Index.build(ids, [tokenize(d["text"]) for d in corpus])
    recall = mrr = 0.0
    scored = [q for q in questions if q["gold_doc_ids"]]
    for q in scored:
        gold = set(q["gold_doc_ids"])
        top = [doc_id for doc_id, _ in index.search(tokenize(q["question"]), 10)]
        recall += len(gold & set(top[:5])) / len(gold)
        mrr += next((1.0 / r for r, doc_id in enumerate(top, 1) if doc_id in gold), 0.0)
    n = len(scored)
    return {"recall@5": recall / n, "mrr@10": mrr / n, "questions": n}


def plain_jieba(text: str) -> list[str]:
    """The baseline: what one writes first."""
    return jieba.lcut(text.lower())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rag-dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--variants", action="store_true", help="also score each tokenizer option")
    args = parser.parse_args()
    jieba.setLogLevel(logging.WARNING)
    corpus = read_jsonl(args.dataset / "corpus.jsonl")
    questions = read_jsonl(args.dataset / "qa.jsonl")

    runs: list[tuple[str, TokenizeFn]] = [
        ("plain jieba.lcut(text.lower())", plain_jieba),
        ("rag_app.text.tokenize (default)", Tokenizer().tokenize),
    ]
    if args.variants:
        off = Tokenizer(subscripts="split", superscripts="split", stopwords=frozenset())
        runs += [
            ("scanner only (all options off)", off.tokenize),
            ("+ subscripts joined", replace(off, subscripts="joined").tokenize),
            ("+ superscripts joined", replace(off, subscripts="joined", superscripts="joined").tokenize),
            ("default, latex=False", Tokenizer(latex=False).tokenize),
            ("default, names 'both'", Tokenizer(subscripts="both", superscripts="both").tokenize),
            ("default, cjk_bigrams=True", Tokenizer(cjk_bigrams=True).tokenize),
            ("default, jieba_search=True", Tokenizer(jieba_search=True).tokenize),
        ]
    print(f"dataset: {args.dataset} ({len(corpus)} docs, {len(questions)} questions)")
    for name, fn in runs:
        t0 = time.perf_counter()
        r = evaluate(fn, corpus, questions)
        print(f"{name:34s} recall@5={r['recall@5']:.4f}  MRR@10={r['mrr@10']:.4f}  ({time.perf_counter() - t0:.1f}s)")


if __name__ == "__main__":
    main()
