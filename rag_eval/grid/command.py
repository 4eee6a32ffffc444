"""``python -m rag_eval grid GRID.toml``: run the grid's jobs, merge shards, compare, select.

Exit 0 when every configuration has results and the comparison is written; 1 when a
configuration has none (its job failed: the comparison still covers the others and names
it); 2 for a grid file that cannot be used (nothing is run).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rag_eval.core.errors import RagEvalError
from rag_eval.grid.comparison import Run, compare
from rag_eval.grid.jobs import Job, JobOutcome, jobs, run_jobs
from rag_eval.grid.render import markdown, page
from rag_eval.grid.select import choose, report
from rag_eval.grid.spec import Configuration, GridError, GridSpec, load_grid
from rag_eval.results.file import ResultsFileError, load_results
from rag_eval.results.merge import MergeError, merge_results, read_shards
from rag_eval.util.atomic import write_atomic
from rag_eval.util.person_files import refuse_overlap
from rag_eval.util.shard import Shard


def register(sub: Any) -> None:
    p = sub.add_parser("grid", help="run a grid of configurations on one golden set and compare them")
    p.add_argument("grid", help="the grid file (TOML: [grid], [axes], [blocks])")
    p.add_argument("--select", default=None, metavar="METRIC", help="choose on tune by METRIC, confirm on holdout")
    p.add_argument("--job", default=None, metavar="I/N", help="run only part I of N of the jobs (a CI matrix)")
    p.add_argument("--compare-only", action="store_true", help="run nothing: compare the results already there")
    p.add_argument("--out", default=None, metavar="DIR", help="where jobs and the comparison go (default: [grid] out)")


def main(args: argparse.Namespace, say: Callable[[str], None] = print) -> int:
    try:
        spec = load_grid(args.grid)
        if args.out:
            spec = _with_out(spec, Path(args.out).resolve())
        part = Shard.parse(args.job) if args.job else None
    except (GridError, ValueError) as exc:
        print(f"error: {exc}".replace("--rag-shard", "--job"), file=sys.stderr)
        return 2
    metric = args.select or spec.select
    try:
        if metric:
            return _select(spec, metric, part, args.compare_only, say)
        return _grid(spec, spec.split, spec.configurations(), part, args.compare_only, say)
    except RagEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _with_out(spec: GridSpec, out: Path) -> GridSpec:
    return replace(spec, out=out)


def _mine(todo: Sequence[Job], part: Shard | None) -> list[Job]:
    return [j for i, j in enumerate(todo) if part is None or i % part.count == part.index - 1]


def _run(
    spec: GridSpec, split: str, configs: Sequence[Configuration], part: Shard | None, only_compare: bool, say: Any
) -> list[JobOutcome]:
    todo = _mine(jobs(spec, configs, split), part)
    return [] if only_compare else run_jobs(todo, Path.cwd(), say)


def collect(spec: GridSpec, split: str, configs: Sequence[Configuration]) -> tuple[list[Run], dict[str, str]]:
    """Each configuration's results (its shards merged, exactly as ``rag_eval merge``), and
    why a configuration has none."""
    runs, problems = [], {}
    for config in configs:
        mine = jobs(spec, [config], split)
        try:
            if spec.shards == 1:
                results = load_results(mine[0].results)
                path = mine[0].results
            else:
                paths = [str(j.results) for j in mine]
                results = merge_results(read_shards(paths), paths)
                path = mine[0].folder / "results.json"
                write_atomic(path, json.dumps(results, ensure_ascii=False).encode())
        except (OSError, ResultsFileError, MergeError) as exc:
            problems[config.name] = f"no results on {split}: {exc}"
            continue
        runs.append(Run(config, path, results))
    return runs, problems


def _grid(
    spec: GridSpec, split: str, configs: Sequence[Configuration], part: Shard | None, only_compare: bool, say: Any
) -> int:
    outcomes = _run(spec, split, configs, part, only_compare, say)
    if part is not None and not only_compare:
        say(f"grid: ran part {part} of the jobs; compare with --compare-only once every part is in {spec.out}")
        return 0 if all(o.ok for o in outcomes) else 1
    runs, problems = collect(spec, split, configs)
    comparison = compare(runs, spec.reference_configuration(), spec.k, split, problems)
    write(spec, spec.out / split, comparison, say)
    return 0 if not problems else 1


def inputs(spec: GridSpec) -> list[tuple[str, Path | None]]:
    """What a grid reads, which none of its outputs may be."""
    return [("the grid file", spec.path), ("[grid] pipeline_config", spec.pipeline_config)]


def write(spec: GridSpec, folder: Path, comparison: dict[str, Any], say: Callable[[str], None]) -> None:
    names = ("comparison.json", "comparison.md", "comparison.html")
    refuse_overlap([(f"the comparison's {n}", folder / n) for n in names], inputs(spec))
    folder.mkdir(parents=True, exist_ok=True)
    text = markdown(comparison)
    write_atomic(folder / "comparison.json", json.dumps(comparison, ensure_ascii=False, indent=1).encode())
    write_atomic(folder / "comparison.md", text.encode())
    write_atomic(folder / "comparison.html", page(comparison).encode())
    say(text)
    say(f"comparison: {folder / 'comparison.json'} (Markdown: comparison.md, page: comparison.html)")


def _select(spec: GridSpec, metric: str, part: Shard | None, only_compare: bool, say: Any) -> int:
    configs = spec.configurations()
    code = _grid(spec, "tune", configs, part, only_compare, say)
    if part is not None and not only_compare:
        return code
    tune_runs, _ = collect(spec, "tune", configs)
    if not tune_runs:
        raise GridError(f"{spec.where}: no configuration has tune results to choose from")
    chosen = choose(tune_runs, metric)
    reference = spec.reference_configuration()
    pair = [chosen.config] + ([reference] if reference.name != chosen.config.name else [])
    say(f"grid: chose {chosen.config.name} on tune by {metric}; running it and the reference on holdout")
    code = max(code, _grid(spec, "holdout", pair, None, only_compare, say))
    holdout_runs, _ = collect(spec, "holdout", pair)
    record = report(metric, chosen, len(tune_runs), {r.config.name: r for r in holdout_runs}, reference.name)
    refuse_overlap([("the selection", spec.out / "selection.json")], inputs(spec))
    write_atomic(spec.out / "selection.json", json.dumps(record, ensure_ascii=False, indent=1).encode())
    say(
        f"selected {record['chosen']}: {metric} = {_fmt(record['tune'])} on tune, "
        f"{_fmt(record['holdout'].get(record['chosen']))} on holdout (reference {reference.name}: "
        f"{_fmt(record['holdout'].get(reference.name))} on holdout); warning: {record['warning']}"
    )
    return code


def _fmt(e: Mapping[str, Any] | None) -> str:
    """An estimate with its interval and the cases it rests on; "—" when there is none."""
    if e is None or e.get("value") is None:
        return "—"
    ci = e.get("ci")
    sure = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f" (no interval: {e.get('ci_note') or 'not computed'})"
    return f"{e['value']:.4f}{sure} (n={e.get('n')})"


def from_pytest(grid: str) -> int:
    """``pytest --rag-grid GRID.toml``: the same as ``python -m rag_eval grid GRID.toml``."""
    return main(argparse.Namespace(grid=grid, select=None, job=None, compare_only=False, out=None))
