"""A baseline results file (usually main's) and what changed against it.

A pull request's numbers mean little alone: "recall@5 = 0.78" passes or fails a fixed
floor, but "recall@5 fell by 0.03 and these four cases stopped passing" is what a
reviewer acts on. This module loads a stored results file as the baseline, refuses one
measured on another dataset (its numbers are not comparable), and diffs the two runs:
per-gate deltas and per-case transitions keyed by ``tier::id`` (``rag_eval.gates.transitions``,
which the regression gates read too).

Everything reads results dicts (``rag_eval.results.build.build_results``), never live objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval.gates.aggregate import metric_of
from rag_eval.gates.transitions import case_transitions, tiers_of
from rag_eval.results.file import ResultsFileError, ResultsVersionError, load_results, run_of

PARTIAL_VERDICTS: tuple[str, ...] = ("incomplete", "shard")
FIX = "regenerate the baseline on main (a complete run on the same dataset) or run without --rag-baseline"


class BaselineError(ValueError):
    """The baseline file is unusable, or was measured on something else than this run."""


class BaselineMismatch(BaselineError):
    """The baseline is readable but not comparable: another dataset or selection, or a
    results file of another format version (main's, on the first run of a release)."""


def load_baseline(path: Path) -> dict[str, Any]:
    """A complete results file, or a BaselineError naming the path and the fix."""
    path = Path(path)
    if not path.is_file():
        raise BaselineError(
            f"{path}: baseline results file not found; pass --rag-baseline the results JSON of a complete run "
            "on the base branch (what --rag-results wrote there, e.g. a CI artifact of main), "
            "or run without --rag-baseline"
        )
    try:
        doc = load_results(path)
    except ResultsVersionError as exc:
        raise BaselineMismatch(f"{exc} (as a baseline: {FIX})") from None
    except ResultsFileError as exc:
        raise BaselineError(f"{exc} (as a baseline: {FIX})") from None
    verdict = doc["verdict"]
    if verdict in PARTIAL_VERDICTS or doc["run"]["complete"] is False:
        how = (
            "merge the shards first (python -m rag_eval merge) and pass the merged file" if verdict == "shard" else FIX
        )
        raise BaselineError(
            f"{path}: verdict {verdict!r}: a partial run is no baseline (its cases are a part of the golden set, "
            f"its numbers not the run's); {how}"
        )
    return doc


def check_compatible(current_run: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    """Refuse a baseline whose numbers are not comparable with this run's.

    ``current_run`` is the run block of the current results (or, before the run, a
    dict with at least ``dataset_fingerprint``; ``dataset``, ``golden_sha256``, ``split``
    and ``tags`` make the messages and checks complete). Another dataset means other
    questions and other gold: deltas would compare different things. A different
    ``--rag-split``/``--rag-tag`` selection means a different population of cases; it is
    checked only when ``current_run`` carries those keys.
    """
    base_run = run_of(baseline)
    ours, theirs = current_run.get("dataset_fingerprint"), base_run.get("dataset_fingerprint")
    if not theirs:
        raise BaselineMismatch(
            "the baseline has no run.dataset_fingerprint, so it cannot be shown to measure the same dataset; " + FIX
        )
    if ours != theirs:
        raise BaselineMismatch(
            f"the baseline was measured on another dataset: fingerprint {theirs} "
            f"(dataset {base_run.get('dataset')}, golden sha256 {base_run.get('golden_sha256')}) "
            f"but this run has {ours} (dataset {current_run.get('dataset')}, golden sha256 "
            f"{current_run.get('golden_sha256')}); its numbers are not comparable: {FIX}"
        )
    for key, flag, norm in (("split", "--rag-split", _split), ("tags", "--rag-tag", _tags)):
        if key in current_run and norm(current_run.get(key)) != norm(base_run.get(key)):
            raise BaselineMismatch(
                f"the baseline ran {flag} {norm(base_run.get(key))!r} but this run {flag} "
                f"{norm(current_run.get(key))!r}: other cases, numbers not comparable; "
                f"run with the baseline's {flag}, or {FIX}"
            )


def _split(value: Any) -> str:
    return "all" if value is None else str(value)


def _tags(value: Any) -> list[str]:
    # The order of --rag-tag options does not change which cases run.
    return sorted(str(v) for v in value or [])


def compare(current: Mapping[str, Any], baseline: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The diff the reports show: gate deltas and case transitions (JSON primitives).

    Call ``check_compatible`` first: this function compares whatever it is given.
    """
    base_run = run_of(baseline)
    return {
        "path": str(path),
        "commit": base_run.get("commit"),
        "time": base_run.get("time"),
        "dataset_fingerprint": base_run.get("dataset_fingerprint"),
        "gates": gate_deltas(current, baseline),
        "transitions": case_transitions(current, baseline),
        "tiers": tier_differences(current, baseline),
        "recall": baseline_recall(baseline),
    }


def baseline_recall(baseline: Mapping[str, Any]) -> dict[str, float]:
    """The baseline's retrieval recall@k aggregates (``retrieval[.<stage>].recall@k``): the
    report draws its recall curves dashed beside the run's."""
    metrics = baseline["metrics"] if isinstance(baseline.get("metrics"), Mapping) else {}
    return {
        str(k): float(v)
        for k, v in metrics.items()
        if str(k).startswith("retrieval.") and "recall@" in str(k) and isinstance(v, (int, float))
    }


def gate_deltas(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per gate of the current run (its order), with the baseline's value of the same label.

    Regression gates are left out: they already compare against the baseline.
    """
    rows = []
    for g in current["gates"]:
        if g["tier"] == "regression":
            continue
        value = g["value"]
        base, base_n = baseline_value(baseline, g)
        rows.append(
            {
                "metric": g["metric"],
                "value": value,
                "baseline": base,
                "delta": None if value is None or base is None else value - base,
                "n": g["n"],
                "baseline_n": base_n,
            }
        )
    return rows


def baseline_value(baseline: Mapping[str, Any], gate: Mapping[str, Any]) -> tuple[float | None, int]:
    """The baseline's value and n for a gate row: its gate of the same label (the same
    computation, tag scope included), else the aggregate of an untagged gate."""
    for row in baseline["gates"]:
        if row["metric"] == gate["metric"]:
            return row["value"], row["n"]
    if not gate["tags"]:
        mv = metric_of(baseline, f"{gate['tier']}.{gate['key']}")
        return mv.value, mv.n
    return None, 0


def tier_differences(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Tiers only one of the runs ran, with their case counts (not compared case by case)."""
    now, was = tiers_of(current), tiers_of(baseline)

    def count(results: Mapping[str, Any], tiers: set[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in results["cases"]:
            if c["tier"] in tiers:
                out[c["tier"]] = out.get(c["tier"], 0) + 1
        return dict(sorted(out.items()))

    return {"only_baseline": count(baseline, was - now), "only_now": count(current, now - was)}


def tier_notes(diff: Mapping[str, Any]) -> list[str]:
    """One sentence per tier only one run ran (``diff`` is what ``compare`` returned), for
    the terminal, the Markdown summary and the HTML report alike."""
    tiers = diff.get("tiers") or {}
    out = []
    for key, label in (("only_baseline", "ran on the baseline, not now"), ("only_now", "ran now, not on the baseline")):
        rows = tiers.get(key) if isinstance(tiers, Mapping) else None
        for tier, n in rows.items() if isinstance(rows, Mapping) else ():
            out.append(f"tier {tier} {label} ({n} cases): not compared case by case")
    return out
