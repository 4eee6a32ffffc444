"""Run metadata and the results file (reports/eval-results.json)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.core.errors import RagEvalError
from rag_eval.gates.aggregate import MetricValue, aggregate_all, outcome_counts
from rag_eval.gates.result import GateResult
from rag_eval.results.file import written_problem
from rag_eval.results.model import RunResults, Verdict
from rag_eval.util.person_files import InvalidOutputError, write_atomic


def git_commit(cwd: Path) -> dict[str, Any]:
    """Commit and dirty flag, or nulls outside a git checkout."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
        )
        return {"commit": sha, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def system_summary(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """What the workers reported about the system under test; several values mean a mixed run."""
    seen: dict[str, set[str]] = {}
    for c in cases:
        for k, v in (c.details.get("system") or {}).items():
            if v is not None:
                seen.setdefault(k, set()).add(str(v))
    return {k: sorted(v)[0] if len(v) == 1 else sorted(v) for k, v in seen.items()}


def usage_totals(cases: Sequence[CaseResult]) -> dict[str, dict[str, float]]:
    """Token use and cost per tier, summed from each case's ``details.usage``."""
    out: dict[str, dict[str, float]] = {}
    for c in cases:
        usage = c.details.get("usage") or {}
        row = out.setdefault(c.tier, {})
        for k, v in usage.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row[k] = row.get(k, 0) + v
    return {tier: row for tier, row in out.items() if row}


def tier_warnings(cases: Sequence[CaseResult]) -> list[str]:
    """Every registered tier's warnings about the run's cases (``Tier.warnings``), in registry order."""
    return [w for tier in tiers.all_tiers() for w in tier.warnings(cases)]


def run_blocks(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """Every tier's entries under the results' ``run`` (``Tier.run_block``: the judge's blame)."""
    out: dict[str, Any] = {}
    for tier in tiers.all_tiers():
        out.update(tier.run_block(cases))
    return out


def results_blocks(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """Every tier's top-level entries of the results file (``Tier.results_block``); a mapping
    under a key two tiers share (``dialogue_rates``: the dialogue rates, passk's table) merged."""
    out: dict[str, Any] = {}
    for tier in tiers.all_tiers():
        for key, value in tier.results_block(cases).items():
            shared = out.get(key)
            out[key] = {**shared, **value} if isinstance(shared, Mapping) and isinstance(value, Mapping) else value
    return out


def run_warnings(cases: Sequence[CaseResult]) -> list[str]:
    """Every warning the cases give, each tier's (the self-judging judge; the retrieval tier's
    gold the run could not find)."""
    return tier_warnings(cases)


def build_run_results(
    run: Mapping[str, Any],
    cases: Sequence[CaseResult],
    gates: Sequence[GateResult],
    verdict: Verdict,
    items: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    metrics: Mapping[str, MetricValue] | None = None,
    system: Mapping[str, str] | None = None,
    baseline: Mapping[str, Any] | None = None,
    baseline_refused: str | None = None,
    warnings: Sequence[str] = (),
) -> RunResults:
    """The results of a run, built once: run metadata, aggregates, gates, per-case
    results and, under ``items``, the golden items the cases came from (question,
    evidence, key facts).

    ``gates`` are every gate evaluated (regression gates last) and ``verdict`` the
    run's; ``baseline`` / ``baseline_refused`` the comparison's diff or why none was
    made (``finalize.conclude`` computes all three). ``metrics`` are the cases'
    aggregates when the caller has them already; ``system`` adds to what the cases
    reported about the system (the controller's index build); ``warnings`` what the run
    itself did not check (e.g. [regression] gates without a baseline), after the cases' own."""
    ordered = sorted(cases, key=lambda c: (c.tier, c.id))
    measured = aggregate_all(ordered) if metrics is None else metrics
    info = {
        **run,
        "system": {**system_summary(ordered), **(system or {})},
        "outcomes": outcome_counts(ordered),
        "usage": usage_totals(ordered),
        "warnings": [*run_warnings(ordered), *warnings],
        **run_blocks(ordered),
    }
    if baseline_refused is not None:
        info["baseline_refused"] = baseline_refused
    return RunResults(
        run=info,
        verdict=verdict,
        metrics=dict(sorted(measured.items())),
        gates=tuple(gates),
        cases=tuple(ordered),
        items={k: dict(v) for k, v in sorted((items or {}).items())},
        blocks=results_blocks(ordered),
        baseline=baseline,
    )


def build_results(
    run: Mapping[str, Any],
    cases: Sequence[CaseResult],
    gates: Sequence[GateResult],
    passed: bool,
    items: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The results dict of a complete run without a baseline (``build_run_results``)."""
    return build_run_results(run, cases, gates, "pass" if passed else "fail", items).to_dict()


class ResultsWriteError(RagEvalError, OSError):
    """The results file could not be written (disk full, no permission); nothing half-written is left."""


# When this process loaded the writer (the pytest plugin loads it at start-up): a results
# file changed after it was written by another run, unless this process wrote it itself.
PROCESS_START = time.time()
_OURS: dict[str, int] = {}  # path -> st_mtime_ns of the file this process last wrote there


def write_results(path: Path, results: Mapping[str, Any], since: float | None = None) -> list[str]:
    """Write atomically so that a reader never sees a half-written file.

    Returns the warnings of the write: another run wrote ``path`` after ``since`` (this
    process's start by default), so two runs share one ``--rag-results`` and the last
    writer wins. A failed write (ENOSPC, EACCES) leaves no temporary file behind and
    raises ``ResultsWriteError`` naming the file, the reason and the fix."""
    # No indent: indented output takes json's pure-Python encoder (2x slower at 5,000 cases).
    finite = True
    try:
        data = json.dumps(results, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError:  # NaN or an infinity: not JSON; written_problem names where
        data, finite = json.dumps(results, ensure_ascii=False).encode("utf-8"), False
    try:
        warnings = _written_meanwhile(path, PROCESS_START if since is None else since)
        write_atomic(path, data, lambda _: written_problem(results, path, finite), keep_rejected=True)
        _OURS[str(path)] = path.stat().st_mtime_ns
    except InvalidOutputError as exc:
        raise ResultsWriteError(str(exc)) from None
    except OSError as exc:
        raise ResultsWriteError(
            f"{path}: results not written: {exc.strerror or exc}; free space or fix the permissions there, "
            "or write them elsewhere (--rag-results PATH; merge: --out PATH)"
        ) from exc
    return warnings


def _written_meanwhile(path: Path, since: float) -> list[str]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return []
    if stat.st_mtime < since or _OURS.get(str(path)) == stat.st_mtime_ns:
        return []
    when = dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC).isoformat(timespec="seconds")
    return [
        f"{path} was written by another run at {when}, while this one ran; it is replaced by this run's results "
        "(give each run its own --rag-results PATH)"
    ]


def file_sha256_or_none(path: Path) -> str | None:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
