"""``python -m rag_eval``: validate a golden set, print its coverage, show its corpus hash."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from rag_app.errors import RagAppError
from rag_eval.dataset import find_paths, golden_items
from rag_eval.golden.load import GoldenSetError
from rag_eval.golden.validate import coverage_table, validate_all


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_eval", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_val = sub.add_parser("validate", help="validate a golden set against its corpus and index")
    p_val.add_argument("--dataset", default="golden_sets/demo_maths")
    p_val.add_argument("--golden-set", default=None)
    p_val.add_argument("--coverage", action="store_true", help="also print the scenario × tier coverage table")
    p_cov = sub.add_parser("coverage", help="print the scenario × tier coverage table")
    p_cov.add_argument("--dataset", default="golden_sets/demo_maths")
    p_cov.add_argument("--golden-set", default=None)
    p_hash = sub.add_parser("corpus-hash", help="print the content hash golden items record as corpus.sha256")
    p_hash.add_argument("--dataset", default="golden_sets/demo_maths")
    args = parser.parse_args(argv)
    try:
        if args.command == "coverage":
            print(coverage_table(golden_items(find_paths(args.dataset, args.golden_set))))
            return 0
        if args.command == "corpus-hash":
            from rag_app.corpus import corpus_hash, load_corpus

            print(corpus_hash(load_corpus(find_paths(args.dataset).corpus)))
            return 0
        return _validate(args.dataset, args.golden_set, args.coverage)
    except (GoldenSetError, RagAppError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _validate(dataset: str, golden: str | None, coverage: bool) -> int:
    from rag_app.text import tokenize
    from rag_eval.session import EvalConfig, EvalSession

    paths = find_paths(dataset, golden)
    session = EvalSession(EvalConfig(paths))
    items = list(session.dataset.items)  # schema, unique ids, corpus hash
    results = validate_all(items, session.lookup, tokenize)
    n_problems = 0
    for check, problems in results.items():
        status = "ok" if not problems else f"{len(problems)} problem(s)"
        print(f"{check}: {status}")
        for p in problems:
            print(f"  {p}")
        n_problems += len(problems)
    if coverage:
        print()
        print(coverage_table(items))
    print(f"{len(items)} items in {paths.golden}: {'valid' if not n_problems else f'{n_problems} problem(s)'}")
    return 1 if n_problems else 0
