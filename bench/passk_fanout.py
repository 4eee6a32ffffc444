"""Cost of the passk fan-out: n trials must cost no more than n × one trial.

    python bench/passk_fanout.py [--latency 0.05] [--n 5] [--items 30]

Runs `pytest eval_tests -m passk` on the first ITEMS demo items whose gold exists,
with `condition = "judge"` against the scripted OpenAI-compatible server (fixed
latency per call, started here on 127.0.0.1), once with n = 1 and once with n = N,
serial and with -n 4. The reference is the n = 1 run of the same mode in the same
process: the ratio wall(n = N) / wall(n = 1) should stay at or below N.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import md_table, run_header, write_results  # noqa: E402
from tests.support.judge_replies import native_judge_reply  # noqa: E402
from tests.support.openai_server import ScriptedOpenAIServer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--items", type=int, default=30)
    args = parser.parse_args()
    header = run_header("passk_fanout", sys.argv[1:])
    tmp = Path(tempfile.mkdtemp(prefix="passk-bench-"))
    golden = [
        json.loads(line)
        for line in (REPO / "golden_sets/demo_maths/golden.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    chosen = [g for g in golden if g.get("evidence")][: args.items]
    (tmp / "golden.jsonl").write_text(
        "".join(json.dumps(g, ensure_ascii=False) + "\n" for g in chosen), encoding="utf-8"
    )
    rows = []
    results: dict[str, float] = {}
    with ScriptedOpenAIServer(latency=args.latency) as srv:
        srv.set_default("chat", native_judge_reply)
        env = {
            **os.environ,
            "RAG_JUDGE_BASE_URL": srv.base_url,
            "RAG_JUDGE_MODEL": "bench-judge",
            "RAG_JUDGE_API_KEY": "sk-bench",
        }
        for workers in (0, 4):
            for n in (1, args.n):
                thresholds = tmp / f"t{n}.toml"
                thresholds.write_text(f'[passk.case]\nn = {n}\nk = 1\ncondition = "judge"\n', encoding="utf-8")
                cmd = [
                    sys.executable,
                    "-m",
                    "pytest",
                    "eval_tests",
                    "-m",
                    "passk",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--rag-golden-set",
                    str(tmp / "golden.jsonl"),
                    "--rag-thresholds",
                    str(thresholds),
                    "--rag-set",
                    "embedder=fake",
                    "--rag-set",
                    "reranker=none",
                    "--rag-set",
                    f"cache_dir={tmp / 'cache'}",
                    "--rag-judge-cache",
                    str(tmp / f"judge-{workers}-{n}"),
                    "--rag-results",
                    str(tmp / f"r-{workers}-{n}.json"),
                ] + (["-n", str(workers)] if workers else [])
                if n == 1 and workers == 0:  # warm the index once, outside the timing
                    subprocess.run(cmd + ["--collect-only"], cwd=REPO, env=env, capture_output=True, check=False)
                before = srv.calls("chat")
                t0 = time.perf_counter()
                proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
                wall = time.perf_counter() - t0
                calls = srv.calls("chat") - before
                if proc.returncode not in (0, 1):
                    print(proc.stdout[-2000:], proc.stderr[-2000:])
                    raise SystemExit(f"pytest failed with {proc.returncode}")
                results[f"{workers}-{n}"] = wall
                rows.append([f"-n {workers}" if workers else "serial", n, calls, f"{wall:.2f}"])
    for workers in (0, 4):
        ratio = results[f"{workers}-{args.n}"] / results[f"{workers}-1"]
        rows.append(
            [f"-n {workers}" if workers else "serial", f"ratio n={args.n} / n=1", "", f"{ratio:.2f} (limit {args.n})"]
        )
    print(md_table(["mode", "trials per case", "judge calls", "wall s"], rows))
    write_results(
        "passk_fanout",
        {**header, "latency_s": args.latency, "items": len(chosen), "n": args.n, "wall": results, "rows": rows},
    )


if __name__ == "__main__":
    main()
