"""``python -m rag_eval calibrate``: the configured judge against people, on RAGChecker's set.

The judge is the one ``pytest -m judge`` uses (``RAG_JUDGE_BASE_URL``, ``RAG_JUDGE_MODEL``,
``RAG_JUDGE_API_KEY`` and the other ``RAG_JUDGE_*`` settings), with the judge tier's cache
(``.rag_cache/judge``), so a rerun of the same sample makes no call. The budget stops new
calls; what was judged is kept and the rest is counted as not run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval.core.errors import RagEvalError
from rag_eval.util.escape import terminal

if TYPE_CHECKING:  # the judge stack is imported only when calibrate runs
    from rag_eval.calibrate.judging import Judged

DEFAULT_OUT = "reports/calibration.json"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="the configured judge against people on RAGChecker's human meta-evaluation (280 instances)",
    )
    p.add_argument("--n", type=int, default=None, help="judge a seeded sample of N instances (default: all 280)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"the calibration file (default {DEFAULT_OUT})")
    p.add_argument("--cache", default=None, metavar="DIR", help="the judge cache (default .rag_cache/judge)")
    p.add_argument("--fresh", action="store_true", help="ignore cached verdicts (and store the new ones)")
    p.add_argument(
        "--concurrency", type=int, default=None, help="judge calls in flight (default RAG_JUDGE_CONCURRENCY, else 4)"
    )
    p.add_argument("--budget-usd", type=float, default=None, help="stop issuing calls at this spend (needs --prices)")
    p.add_argument("--budget-tokens", type=int, default=None, help="stop issuing calls at this many tokens")
    p.add_argument(
        "--prices", default=None, metavar="TOML", help='[prices."model"] prompt = .., completion = .. (USD / 1M tokens)'
    )


def run(args: argparse.Namespace) -> int:
    """Exit 0 with the calibration written, 2 for bad input or an unset judge (the message says which)."""
    from rag_eval.calibrate.record import lines, write_record
    from rag_eval.calibrate.run import calibrate
    from rag_eval.judge.config import JudgeConfig, load_prices

    out = Path(args.out)
    try:
        if args.n is not None and args.n < 2:
            raise RagEvalError(f"--n {args.n}: a correlation needs at least 2 instances")
        from rag_eval.calibrate.meta_eval import DATA
        from rag_eval.util.person_files import refuse_overlap

        shipped = [(f"the shipped {p.name}", p) for p in DATA.iterdir()]
        refuse_overlap([("--out", out)], [*shipped, ("--prices", args.prices)])
        cfg = JudgeConfig.from_env(
            os.environ,
            cache_dir=Path(args.cache) if args.cache else Path(".rag_cache") / "judge",
            fresh=args.fresh,
            prices=load_prices(args.prices) if args.prices else None,
            budget_usd=args.budget_usd,
            budget_tokens=args.budget_tokens,
            concurrency=args.concurrency,
        )
        reason = cfg.missing_reason()
        if reason:
            raise RagEvalError(f"{reason} (calibrate runs the judge the judge tier would use)")
        record = calibrate(cfg, n=args.n, seed=args.seed, concurrency=cfg.policy.concurrency, progress=progress_line)
    except (RagEvalError, ValueError) as exc:
        print(f"error: {terminal(str(exc))}", file=sys.stderr)
        return 2
    write_record(out, record)
    for line in lines(record):
        print(terminal(line))
    print(f"calibration: {out}")
    return 0


def progress_line(instance: str, side: str, judged: Judged) -> None:
    """One stderr line per judged response (a long run on a slow model shows it is moving)."""
    outcome = "not run (budget)" if judged.not_run else f"error: {judged.error}" if judged.error else "judged"
    print(
        terminal(f"calibrate: instance {instance} {side}: {outcome}", keep_newlines=False), file=sys.stderr, flush=True
    )
