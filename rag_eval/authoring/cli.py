"""The authoring commands of ``python -m rag_eval``: ``draft``, ``review``, ``accept`` and
``evidence`` (docs/golden-sets.md). ``rag_eval.cli`` only wires them in: ``add_parsers``
adds their subcommands, ``run`` runs one (None: not an authoring command)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rag_eval.authoring.quote import NEAR_DUP_THRESHOLD
from rag_eval.authoring.recipes import RECIPES
from rag_eval.core.errors import RagEvalError
from rag_eval.golden.load import GoldenSetError
from rag_eval.util.escape import terminal

COMMANDS: tuple[str, ...] = ("draft", "review", "accept", "evidence")
DEFAULT_PER_SCENARIO = 5


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("draft", help="draft candidate golden items from a corpus with a model (RAG_DRAFT_* endpoint)")
    p.add_argument("--corpus", default=None, metavar="PATH", help="a folder of Markdown notes or a corpus.jsonl")
    p.add_argument("--dataset", "--rag-dataset", default=None, help="a dataset folder: its corpus (and golden set)")
    p.add_argument("--golden-set", "--rag-golden-set", default=None, help="existing items: rewritten, never duplicated")
    p.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME[:N]",
        help=f"a recipe and how many drafts (repeatable; default every recipe, {DEFAULT_PER_SCENARIO} each): "
        + ", ".join(RECIPES),
    )
    p.add_argument("--fill-gaps", action="store_true", help="draft for the thin cells of --golden-set's coverage")
    p.add_argument("--dimension", action="append", default=[], metavar="TAG", help="with --fill-gaps: a tag dimension")
    p.add_argument("--min", type=int, default=3, metavar="N", help="with --fill-gaps: items a cell needs (default 3)")
    p.add_argument("--out", default="drafts.jsonl", help="the drafts file (a new path: never overwritten)")
    p.add_argument("--seed", type=int, default=0, help="the passage sample's seed")
    p.add_argument("--lang", choices=("auto", "zh", "en"), default="auto", help="prompt language (auto: the passage's)")
    p.add_argument("--near-dup", type=float, default=NEAR_DUP_THRESHOLD, help="near-duplicate similarity threshold")
    p.add_argument("--min-chars", type=int, default=None, help="content characters a passage needs (default 40)")
    p.add_argument("--cache-dir", default=".rag_cache/draft", help="the response cache (default .rag_cache/draft)")
    p.add_argument("--fresh", action="store_true", help="ignore cached answers")
    p.add_argument("--budget-usd", type=float, default=None, help="stop drafting once this much is spent")
    p.add_argument("--budget-tokens", type=int, default=None, help="stop drafting once this many tokens are spent")
    p.add_argument(
        "--prices", default=None, metavar="TOML", help='[prices."model"] prompt/completion USD per 1M tokens'
    )
    p.add_argument("--max-tokens", type=int, default=800, help="completion budget of one draft")
    p.add_argument(
        "--pipeline",
        "--rag-pipeline",
        default=None,
        help="negative drafts: also ask this system's retrieval (rag_app, http, dify or package.module:factory)",
    )
    p.add_argument("--pipeline-config", "--rag-pipeline-config", default=None, metavar="TOML", help="its configuration")

    p = sub.add_parser("review", help="write the review page of a drafts file (self-contained HTML)")
    p.add_argument("drafts", help="a drafts file (python -m rag_eval draft)")
    p.add_argument("--out", default=None, help="the page (default: the drafts file with .html)")

    p = sub.add_parser("accept", help="merge reviewed decisions (the review page's export) into a golden set")
    p.add_argument("decisions", help="decisions exported from a review page (JSONL)")
    p.add_argument("--into", required=True, metavar="GOLDEN", help="the golden set: created, or merged into")
    p.add_argument("--corpus", default=None, metavar="PATH", help="check every quote against this corpus")
    p.add_argument("--dataset", "--rag-dataset", default=None, help="a dataset folder whose corpus to check against")
    p.add_argument("--near-dup", type=float, default=NEAR_DUP_THRESHOLD, help="near-duplicate similarity threshold")
    p.add_argument("--id-prefix", default="gold", help="new items' ids: PREFIX-SCENARIO-NNN (default gold)")

    p = sub.add_parser("evidence", help="a run's non-gold evidence as candidates to review (page and candidates file)")
    p.add_argument("results", nargs="+", help="results files (reports/eval-results.json)")
    p.add_argument("--golden-set", "--rag-golden-set", default=None, help="the golden set (default: the run's)")
    p.add_argument("--dataset", "--rag-dataset", default=None, help="the dataset (default: the run's)")
    p.add_argument("--out", default="reports/evidence", metavar="DIR", help="where the candidates and page go")


def run(args: argparse.Namespace) -> int | None:
    if args.command not in COMMANDS:
        return None
    try:
        if args.command == "draft":
            from rag_eval.authoring.commands import draft_command

            return draft_command(args)
        if args.command == "review":
            from rag_eval.authoring.commands import review_command

            return review_command(args)
        if args.command == "accept":
            from rag_eval.authoring.commands import accept_command

            return accept_command(args)
        from rag_eval.authoring.commands import evidence_command

        return evidence_command(args)
    except (GoldenSetError, RagEvalError, ValueError) as exc:
        print(f"error: {terminal(str(exc))}", file=sys.stderr)
        return 2


def parse_scenarios(values: Sequence[str]) -> dict[str, int]:
    """``--scenario NAME[:N]`` values as recipe -> count (a ``ValueError`` naming the bad one)."""
    counts: dict[str, int] = {}
    for value in values or [f"{r}:{DEFAULT_PER_SCENARIO}" for r in RECIPES]:
        name, _, n = value.partition(":")
        if name not in RECIPES:
            raise ValueError(f"--scenario {value!r}: unknown recipe {name!r}; valid: {', '.join(RECIPES)}")
        try:
            count = int(n) if n else DEFAULT_PER_SCENARIO
        except ValueError:
            count = -1
        if count < 1:
            raise ValueError(f"--scenario {value!r}: the count after ':' is a whole number >= 1, e.g. {name}:5")
        counts[name] = counts.get(name, 0) + count
    return counts


def out_path(value: str | None, default: Path) -> Path:
    return Path(value) if value else default
