"""Merge the results files of a sharded run (``pytest --rag-shard I/N``) into one run.

A shard holds part of the cases, so its numbers are not the run's: the plugin writes
a shard's cases without gating them, and this module gates the union. Aggregates and
gates are recomputed from the per-case data with the same functions a single run uses
(``finalize.conclude``, ``evaluate_gates``), so N merged shards give exactly the numbers
of one unsharded run. Shards of different runs (dataset, config, commit, system under
test, thresholds) are refused rather than averaged into a number that describes
nothing, and so are missing, duplicated and incomplete shards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.gates.aggregate import aggregate_all, outcome_counts
from rag_eval.gates.gate import run_gates, verdict
from rag_eval.gates.result import GateResult
from rag_eval.gates.thresholds import Thresholds, ThresholdsError, load_thresholds
from rag_eval.results.build import now_iso, usage_totals
from rag_eval.results.file import ResultsFileError, case_results, check_results, load_results, run_of
from rag_eval.results.finalize import Baseline, Concluded, conclude
from rag_eval.util.shard import shard_of

# run.* fields every shard of one run shares. time, workers and the paths may differ
# between CI runners; these may not.
SAME_RUN_FIELDS: tuple[str, ...] = (
    "dataset_fingerprint",
    "golden_sha256",
    "thresholds_sha256",
    "overrides",
    "split",
    "tags",
    "commit",
    "dirty",
)
# Recomputed by build_run_results from the merged cases, never copied from a shard.
DERIVED_RUN_FIELDS: tuple[str, ...] = ("system", "outcomes", "usage", "warnings")
FIX = "merge the files of one `pytest --rag-shard I/N` run (same commit, dataset, options and thresholds)"


class MergeError(ValueError):
    """The shard files cannot be merged; the message names the files, the field and the fix."""


@dataclass(frozen=True)
class Merged:
    """A merged run before its results are built: the union of the shards' cases, the
    gates over it and what the results need (``conclude`` builds them, once)."""

    run: Mapping[str, Any]
    cases: tuple[CaseResult, ...]
    gates: tuple[GateResult, ...]
    items: Mapping[str, Mapping[str, Any]]
    thresholds: Thresholds | None  # what gated it (for regression gates against a baseline)

    @property
    def passed(self) -> bool:
        return verdict(self.gates)

    def conclude(self, baseline: Baseline | None = None) -> Concluded:
        """The merged run's results, compared with ``baseline`` when one is given."""
        return conclude(self.run, self.cases, self.gates, self.thresholds, baseline, self.items)


def read_shards(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Load shard files (``results_file.load_results``); a file that is not a results
    file of this version is a MergeError naming it."""
    out = []
    for path in paths:
        try:
            out.append(load_results(path))
        except ResultsFileError as exc:
            raise MergeError(f"{exc} (merge takes the files `pytest --rag-shard I/N` wrote)") from None
    return out


def merge_results(
    shards: Sequence[Mapping[str, Any]],
    paths: Sequence[str] | None = None,
    thresholds: str | Path | None = None,
) -> dict[str, Any]:
    """The results dict of the merged run (see ``merge``)."""
    return merge(shards, paths, thresholds).conclude().results.to_dict()


def merge(
    shards: Sequence[Mapping[str, Any]],
    paths: Sequence[str] | None = None,
    thresholds: str | Path | None = None,
) -> Merged:
    """Check that ``shards`` are the complete, disjoint shards of one run, then gate their union.

    ``paths`` name the shards in messages and in ``run.merged_from`` (default
    ``shard file 1``, ...). ``thresholds`` gates with another file than the one the
    shards recorded; the change is recorded under ``run.thresholds_of_shards``.
    """
    names = [str(p) for p in paths] if paths is not None else [f"shard file {i + 1}" for i in range(len(shards))]
    if len(names) != len(shards):
        raise ValueError(f"{len(shards)} shards but {len(names)} paths")
    if not shards:
        raise MergeError("no shard files given: pass every file of the run, e.g. reports/shard-*.json")
    runs = [_shard_run(s, n) for s, n in zip(shards, names)]
    count = _check_partition(runs, names)
    _check_same_run(runs, names)
    cases = _union_cases(shards, runs, names, count)
    for shard, name in zip(shards, names):
        check_aggregates(shard, name)
    gate_file, overridden = _thresholds(runs[0], names, thresholds)
    gates = run_gates(gate_file, cases)  # without a file: the built-in gates, as in the plugin
    run = _merged_run(runs, names, gate_file, overridden)
    items: dict[str, Mapping[str, Any]] = {}
    for s in shards:
        items.update(s["items"])
    return Merged(run, tuple(cases), tuple(gates), items, gate_file)


def _shard_run(results: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """run metadata of a complete shard file, or a MergeError saying what the file is instead."""
    try:
        check_results(results, name)  # again for files read_shards loaded (cheap): dicts passed in get it too
    except ResultsFileError as exc:
        raise MergeError(f"{exc} (merge takes the files `pytest --rag-shard I/N` wrote)") from None
    run = results["run"]
    shard = run["shard"]
    if not isinstance(shard, Mapping):
        raise MergeError(
            f"{name}: not a shard results file (verdict {results['verdict']!r}, no run.shard): merge takes the files "
            "written by `pytest --rag-shard I/N`; an unsharded run "
            "is gated already (did the glob pick up a merged file?)"
        )
    label = f"{shard['index']}/{shard['count']}"
    if run["complete"] is False or results["verdict"] == "incomplete":
        raise MergeError(
            f"{name}: shard {label} is incomplete (the run was stopped early: -x, "
            f"--maxfail or Ctrl-C); re-run `pytest --rag-shard {label}`"
        )
    if results["verdict"] != "shard":
        raise MergeError(
            f"{name}: verdict {results['verdict']!r}, a shard file says "
            "'shard'; pass the files `pytest --rag-shard I/N` wrote"
        )
    return run


def check_aggregates(results: Mapping[str, Any], name: str) -> None:
    """A MergeError when what ``results`` stores about its cases (``metrics``, ``metrics_n``,
    ``run.outcomes``, ``run.usage``) is not what its cases give: the file was edited.

    The merge never uses a shard's stored aggregates (it recomputes every one from the
    union of the cases); a disagreement means a case or an aggregate was changed by hand,
    and neither can then be trusted."""
    ordered = sorted(case_results(results), key=lambda c: (c.tier, c.id))
    fresh = aggregate_all(ordered)
    stored, stored_n = results.get("metrics") or {}, results.get("metrics_n") or {}
    for key in sorted(set(stored) | set(fresh)):
        mine, counted = fresh.get(key), stored_n.get(key) or {}
        if mine is None or key not in stored:
            where = "the file holds it but its cases do not give it" if mine is None else "its cases give it"
            raise MergeError(_edited(name, f"metrics.{key}: {where}"))
        if not _same(stored[key], mine.value) or (counted.get("n"), counted.get("errors")) != (mine.n, mine.errors):
            raise MergeError(
                _edited(
                    name,
                    f"metrics.{key} is {stored[key]!r} (n={counted.get('n')}, errors {counted.get('errors')}) but its "
                    f"cases give {mine.value!r} (n={mine.n}, errors {mine.errors})",
                )
            )
    run = run_of(results)
    derived: dict[str, Mapping[str, Mapping[str, float]]] = {
        "outcomes": outcome_counts(ordered),
        "usage": usage_totals(ordered),
    }
    for field, value in derived.items():
        kept = run.get(field) or {}
        same = set(kept) == set(value) and all(
            set(kept[t]) == set(row) and all(_same(kept[t][k], v) for k, v in row.items()) for t, row in value.items()
        )
        if not same:
            raise MergeError(_edited(name, f"run.{field} is {dict(kept)!r} but its cases give {value!r}"))


def _edited(name: str, what: str) -> str:
    return (
        f"{name}: {what}: the file was edited after the shard wrote it (the merge recomputes every aggregate from "
        "the cases, and a file whose aggregates disagree with its cases is not trusted); re-run that shard "
        "(`pytest --rag-shard I/N`)"
    )


def _same(stored: Any, value: float | None) -> bool:
    if stored is None or value is None:
        return stored is None and value is None
    return math.isclose(float(stored), value, rel_tol=1e-9, abs_tol=1e-12)


def _check_partition(runs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> int:
    """Every shard 1..N exactly once, all of the same N; returns N."""
    counts = {int(r["shard"]["count"]) for r in runs}
    if len(counts) > 1:
        listed = ", ".join(f"{n} is {_label(r)}" for r, n in zip(runs, names))
        raise MergeError(f"shards of different counts: {listed}; {FIX}")
    count = counts.pop()
    seen: dict[int, str] = {}
    for run, name in zip(runs, names):
        index = int(run["shard"]["index"])
        if index in seen:
            raise MergeError(f"duplicate shard {index}/{count}: {seen[index]} and {name}; pass each shard's file once")
        seen[index] = name
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        got = " and ".join(f"{i}/{count}" for i in sorted(seen))
        gaps = ", ".join(f"{i}/{count}" for i in missing)
        raise MergeError(
            f"missing shard {gaps}: expected {count} files, got {got}; "
            f"pass every shard's file (a shard that failed to upload must be re-run)"
        )
    return count


def _check_same_run(runs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    """Each field as in the first shard, or a MergeError naming the field, both files and both values."""
    first, first_name = runs[0], names[0]
    for run, name in zip(runs[1:], names[1:]):
        for key in SAME_RUN_FIELDS:
            if run.get(key) != first.get(key):
                raise MergeError(_differ(f"run.{key}", first_name, first.get(key), name, run.get(key)))
        a, b = first.get("system") or {}, run.get("system") or {}
        declared = [*(first.get("system_state") or ()), *(run.get("system_state") or ())]
        for key in same_system_keys(a, b, declared):
            if a[key] != b[key]:
                raise MergeError(_differ(f"run.system.{key}", first_name, a[key], name, b[key]))


def same_system_keys(a: Mapping[str, Any], b: Mapping[str, Any], declared: Iterable[str] = ()) -> list[str]:
    """The run.system keys two shards must agree on: every key both report (a shard whose
    cases never touched a component cannot disagree on it), except the per-process state
    the adapter kinds declare (where an index lives, what building it did): the built-in
    kinds' and ``declared``, the shards' own ``run.system_state`` (a kind registered in a
    conftest, which this command never loads, is known by what its run wrote)."""
    from rag_eval.adapters import kinds

    state = kinds.state_keys() | set(declared)
    return [k for k in a if k in b and a[k] is not None and b[k] is not None and k not in state]


def _differ(field: str, name_a: str, a: Any, name_b: str, b: Any) -> str:
    return f"shards of different runs: {field} is {a!r} in {name_a} but {b!r} in {name_b}; {FIX}"


def _union_cases(
    shards: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]], names: Sequence[str], count: int
) -> list[CaseResult]:
    """All cases, each once, each in the shard its id hashes to."""
    owner: dict[str, str] = {}
    cases: list[CaseResult] = []
    for results, run, name in zip(shards, runs, names):
        index = int(run["shard"]["index"])
        for case in case_results(results):
            if case.key in owner:
                raise MergeError(
                    f"duplicate case {case.key}: in {owner[case.key]} and in {name}; a case belongs to one shard, "
                    "so these files are not shards of one partition"
                )
            owner[case.key] = name
            if shard_of(case.id, count) != index:
                raise MergeError(
                    f"{name}: case {case.key} belongs to shard {shard_of(case.id, count)}/{count}, not "
                    f"{index}/{count}; the file is not what `pytest --rag-shard {index}/{count}` writes"
                )
            cases.append(case)
    # The order a single run gates in, so float sums (and worst-case lists) come out identical.
    return sorted(cases, key=lambda c: (c.tier, c.id))


def _thresholds(
    run: Mapping[str, Any], names: Sequence[str], override: str | Path | None
) -> tuple[Thresholds | None, bool]:
    """The gates file: the override, else the file the shards recorded, unchanged since (same sha256)."""
    if override is not None:
        return _load(override, "--rag-thresholds"), True
    path, sha = run.get("thresholds"), run.get("thresholds_sha256")
    if not path:
        return None, False  # the shards ran without a thresholds file: no gates, as in a single run
    gates = _load(path, f"run.thresholds of {names[0]}")
    if gates.sha256 != sha:
        raise MergeError(
            f"{path} changed since the shards ran: its sha256 is {gates.sha256}, the shards recorded {sha} "
            "(run.thresholds_sha256); restore that file, or gate with the current one: --rag-thresholds PATH"
        )
    return gates, False


def _load(path: str | Path, origin: str) -> Thresholds:
    if not Path(path).is_file():
        raise MergeError(
            f"thresholds file {path} ({origin}) not found; run the merge "
            "from the shards' checkout or pass --rag-thresholds PATH"
        )
    try:
        return load_thresholds(path)
    except ThresholdsError as exc:
        raise MergeError(str(exc)) from None


def _merged_run(
    runs: Sequence[Mapping[str, Any]], names: Sequence[str], gates: Thresholds | None, overridden: bool
) -> dict[str, Any]:
    first = runs[0]
    derived = {*DERIVED_RUN_FIELDS, *(k for t in tiers.all_tiers() for k in t.run_keys)}  # the tiers' run blocks
    run = {k: v for k, v in first.items() if k not in derived}
    run.update(
        time=now_iso(),
        shard=None,
        complete=True,
        workers=sum(int(r.get("workers") or 0) for r in runs),
        merged_from=[
            {"path": n, "shard": dict(r["shard"]), "time": r.get("time"), "workers": r.get("workers")}
            for r, n in sorted(zip(runs, names), key=lambda rn: int(rn[0]["shard"]["index"]))
        ],
    )
    if overridden and gates is not None:
        run["thresholds_of_shards"] = {"path": first.get("thresholds"), "sha256": first.get("thresholds_sha256")}
        run["thresholds"], run["thresholds_sha256"] = gates.path, gates.sha256
    return run


def _label(run: Mapping[str, Any]) -> str:
    return f"shard {run['shard'].get('index')}/{run['shard'].get('count')}"
