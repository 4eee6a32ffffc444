"""``python -m rag_eval``: validate a golden set, print its coverage, show its corpus hash,
merge the results files of a sharded run, re-render a results file's summary or report,
sample judged cases for human labels, say how many items a gate needs to see a drop; draft,
review and accept golden items and review a run's evidence (rag_eval.authoring.cli);
calibrate the judge against people (rag_eval.calibrate.command)."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.adapters.gold import GOLD_MODES
from rag_eval.authoring import cli as authoring
from rag_eval.calibrate import command as calibrate_command
from rag_eval.core.errors import RagEvalError
from rag_eval.dataset import ALLOW_OUTSIDE, find_paths, golden_items
from rag_eval.golden.load import GoldenSetError
from rag_eval.golden.validate import coverage_table, validate_all
from rag_eval.grid import command as grid_command
from rag_eval.tiers import golden_applies
from rag_eval.util.escape import terminal

if TYPE_CHECKING:  # the merge command imports these lazily, to keep startup fast
    from rag_eval.adapters import PipelineSpec
    from rag_eval.gates.result import GateResult


ALLOW_OUTSIDE_ARGS = ("--allow-outside-dataset", ALLOW_OUTSIDE)
ALLOW_OUTSIDE_HELP = "read corpus and golden files that resolve outside the dataset folder (symlinks, ..)"


DATASET_HELP = "dataset folder (default: rag_eval_dataset of [tool.pytest.ini_options] in ./pyproject.toml)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not load_tiers(args.tiers):
        return 2
    done = authoring.run(args)
    if done is not None:
        return done
    return COMMANDS[args.command](args)


def build_parser() -> argparse.ArgumentParser:
    """The command line: each command's arguments are added by its own ``_add_<command>``
    (or its module's ``add_parser``), in the order ``--help`` lists them."""
    parser = argparse.ArgumentParser(prog="python -m rag_eval", description=__doc__)
    parser.add_argument("--tiers", default="", metavar="MODULES", help=TIERS_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_validate, _add_coverage, _add_corpus_hash, _add_merge, _add_summary, _add_report):
        add(sub)
    for add in (_add_sample, _add_power):
        add(sub)
    authoring.add_parsers(sub)
    calibrate_command.add_parser(sub)
    grid_command.register(sub)
    return parser


def _add_dataset_args(parser: argparse.ArgumentParser, golden_set: bool = True) -> None:
    parser.add_argument("--dataset", "--rag-dataset", default=None, help=DATASET_HELP)
    if golden_set:
        parser.add_argument("--golden-set", "--rag-golden-set", default=None)
    parser.add_argument(*ALLOW_OUTSIDE_ARGS, action="store_true", help=ALLOW_OUTSIDE_HELP)


def _add_validate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_val = sub.add_parser("validate", help="validate a golden set against its corpus and index")
    _add_dataset_args(p_val)
    p_val.add_argument("--coverage", action="store_true", help="also print the scenario × tier coverage table")
    p_val.add_argument(
        "--dimension", action="append", default=[], metavar="TAG", help="with --coverage: a tag dimension (repeatable)"
    )
    p_val.add_argument("--min", type=int, default=None, metavar="N", help="with --coverage: list cells below N items")
    p_val.add_argument("--fail-under", action="store_true", help="with --min: exit 1 when a cell has fewer than N")
    _add_reading_args(p_val)
    p_val.add_argument(
        "--pipeline",
        "--rag-pipeline",
        default=None,
        metavar="SYSTEM",
        help="also look every gold chunk id up in this system (package.module:factory, or as --rag-pipeline "
        "of pytest); exits 1 naming the ids it does not hold",
    )


def _add_coverage(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_dataset_args(sub.add_parser("coverage", help="print the scenario × tier coverage table"))


def _add_reading_args(parser: argparse.ArgumentParser) -> None:
    """How the command reads the corpus: as a run of this gold mode and pipeline would."""
    parser.add_argument(
        "--gold",
        choices=GOLD_MODES,
        default=None,
        help="how gold meets the system's ids, as gold = ... of the pipeline configuration "
        "(default: that file's gold, else the default of its pipeline's kind, else corpus); "
        "ids/text: chunk ids are the system's own and are not looked up in a local index",
    )
    parser.add_argument(
        "--pipeline-config",
        "--rag-pipeline-config",
        default=None,
        metavar="TOML",
        help="read the gold mode (and the system that reads the corpus) from this pipeline configuration",
    )


def _add_corpus_hash(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_hash = sub.add_parser(
        "corpus-hash",
        help="print the content hash golden items record as corpus.sha256 (of the corpus as a gold = 'corpus' "
        "run reads it, or as --gold / --rag-pipeline-config say)",
    )
    _add_dataset_args(p_hash, golden_set=False)
    _add_reading_args(p_hash)


def _add_merge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_merge = sub.add_parser(
        "merge", help="merge the results files of `pytest --rag-shard I/N` runs, gate them, exit by the gate"
    )
    p_merge.add_argument(
        "files", nargs="+", metavar="FILE", help="every shard's results file, e.g. reports/shard-*.json"
    )
    p_merge.add_argument("--out", default="reports/eval-results.json", help="the merged results file")
    p_merge.add_argument("--report", "--rag-report", default=None, help="the HTML report (default: --out with .html)")
    p_merge.add_argument("--no-report", "--rag-no-report", action="store_true", help="do not write the HTML report")
    p_merge.add_argument(
        "--summary-md",
        "--rag-summary-md",
        default=None,
        metavar="PATH",
        help="append the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY)",
    )
    p_merge.add_argument(
        "--thresholds",
        "--rag-thresholds",
        default=None,
        help="gate with this file instead of the one the shards recorded",
    )
    p_merge.add_argument(
        "--artifact-url",
        "--rag-artifact-url",
        default=None,
        help="link to the uploaded report, shown in the Markdown summary",
    )
    p_merge.add_argument(
        "--baseline",
        "--rag-baseline",
        default=None,
        metavar="PATH",
        help="an earlier results file (e.g. main's) to compare with",
    )
    p_merge.add_argument(
        "--baseline-mismatch",
        "--rag-baseline-mismatch",
        choices=("error", "warn"),
        default="error",
        help="a baseline of another dataset: error (default) exits 2; warn merges without the comparison and says why",
    )


def _add_summary(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_sum = sub.add_parser("summary", help="print (or write) the Markdown summary of a results file")
    p_sum.add_argument("results", help="a results file (reports/eval-results.json)")
    p_sum.add_argument("--artifact-url", "--rag-artifact-url", default=None, help="link to the uploaded report")
    p_sum.add_argument("--out", default=None, help="write here instead of printing (overwrites)")


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_rep = sub.add_parser("report", help="render the HTML report of a stored results file")
    p_rep.add_argument("results", help="a results file (reports/eval-results.json)")
    p_rep.add_argument("--out", default=None, help="the HTML file (default: the results file with .html)")
    p_rep.add_argument("--calibration", default=None, metavar="FILE", help="show this `calibrate` file in the report")


def _add_sample(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_sam = sub.add_parser("sample", help="draw a seeded sample of judged cases to label: a labelling sheet and page")
    p_sam.add_argument("results", help="a results file with judged cases (reports/eval-results.json)")
    p_sam.add_argument("--n", type=int, default=150, help="cases to sample (default 150; 150-300 labels is usual)")
    p_sam.add_argument("--seed", type=int, default=0, help="the random seed: the same seed gives the same sample")
    p_sam.add_argument(
        "--stratify",
        default=None,
        metavar="tag:KEY|verdict",
        help="sample each tag value or judge verdict in proportion",
    )
    p_sam.add_argument(
        "--metric", action="append", default=[], metavar="KEY", help="label only this metric (repeatable)"
    )
    p_sam.add_argument("--out", default="reports/labelling", metavar="DIR", help="where the sheet and page go")
    p_sam.add_argument(
        "--force",
        action="store_true",
        help="replace a sheet in --out that holds labels (a timestamped copy of it is kept); without it, refused",
    )


def _add_power(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p_pow = sub.add_parser("power", help="how many golden items a gate needs to see a drop (from a results file)")
    p_pow.add_argument("results", help="a results file (reports/eval-results.json)")
    p_pow.add_argument("--metric", required=True, help="a metrics key, e.g. recall@5 or retrieval.recall@5")
    p_pow.add_argument("--drop", type=float, required=True, help="the drop to see, e.g. 0.03 for 3 points")
    p_pow.add_argument("--alpha", type=float, default=0.05, help="one-sided significance level (default 0.05)")
    p_pow.add_argument("--power", type=float, default=0.8, help="the power wanted (default 0.8)")


def _dataset_command(args: argparse.Namespace) -> int:
    """``validate``, ``coverage`` and ``corpus-hash``: they read a dataset (as given, else the ini keys)."""
    try:
        args.dataset, args.golden_set = default_inputs(args.dataset, getattr(args, "golden_set", None))
        if args.command == "coverage":
            paths = find_paths(args.dataset, args.golden_set, allow_outside=args.allow_outside_dataset)
            print(coverage_table(golden_items(paths), golden_applies()))
            return 0
        if args.command == "corpus-hash":
            return _corpus_hash(args)
        gaps = Gaps(args.dimension, args.min, args.fail_under) if args.coverage else None
        spec = _validate_spec(args.gold, args.pipeline_config)
        code = _validate(args.dataset, args.golden_set, args.coverage, spec, gaps, args.allow_outside_dataset)
        if args.pipeline:
            return max(code, _validate_held(args.dataset, args.golden_set, args.pipeline, args.pipeline_config))
        return code
    except (GoldenSetError, RagEvalError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _corpus_hash(args: argparse.Namespace) -> int:
    from rag_eval.adapters import SystemContext, corpus_reader, pin_reader
    from rag_eval.corpus import corpus_hash

    paths = find_paths(args.dataset, allow_outside=args.allow_outside_dataset)
    if paths.corpus is None:
        raise GoldenSetError(f"--rag-dataset {args.dataset}: no corpus (corpus/, corpus.jsonl or *.md) to hash")
    # as a run with this gold mode and pipeline reads it; without either, the reading every
    # run accepts a pin of (pin_reader: rag_eval.dataset.load_dataset)
    context = SystemContext(corpus=paths.corpus)
    if args.gold is None and args.pipeline_config is None:
        read = pin_reader(context)
    else:
        read = corpus_reader(_validate_spec(args.gold, args.pipeline_config), context)
    print(corpus_hash(read(paths.corpus)))
    return 0


TIERS_HELP = (
    "import these modules first (comma-separated, e.g. conftest): the tiers they register are known "
    "to the command (a results file with a project's own tier: its judged values, schema, report view)"
)


def load_tiers(modules: str) -> bool:
    """Import each module of ``--tiers`` (from the current directory too); False, said, when one fails."""
    names = [m.strip() for m in modules.split(",") if m.strip()]
    if names and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure of a user's module is reported, not raised
            print(f"error: --tiers {name}: cannot import it ({type(exc).__name__}: {exc})", file=sys.stderr)
            return False
    return True


def default_inputs(
    dataset: str | None, golden: str | None, project: Path | None = None
) -> tuple[str | None, str | None]:
    """The dataset and golden set to use: as given, else the plugin's ini keys
    (rag_eval_dataset / rag_eval_golden_set of ./pyproject.toml, relative to its folder);
    neither is a usage error that names both ways. No built-in demo default."""
    if dataset or golden:
        return dataset, golden
    import tomllib

    root = project or Path.cwd()
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        data = {}
    ini = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
    ds, gs = ini.get("rag_eval_dataset"), ini.get("rag_eval_golden_set")
    if not ds and not gs:
        raise RagEvalError(
            "no golden set: give --rag-dataset DIR (a folder with golden.jsonl or qa.jsonl) or --rag-golden-set FILE, "
            f"or set rag_eval_dataset in [tool.pytest.ini_options] of {root / 'pyproject.toml'}"
        )
    return (str(root / ds) if ds else None), (str(root / gs) if gs else None)


def _validate_spec(gold: str | None, pipeline_config: str | None) -> PipelineSpec:
    """The system whose reading and chunking of the corpus ``validate`` checks gold against:
    the configuration file's ``pipeline`` and ``gold`` (only those keys: validating a golden
    set must not import or call the system), ``--gold`` over the file's; with no file, the
    kind that reads ``--gold``'s mode (default corpus) as its own."""
    import tomllib

    from rag_eval.adapters import PipelineSpec, kinds

    data: dict[str, Any] = {}
    if pipeline_config:
        try:
            data = tomllib.loads(Path(pipeline_config).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise RagEvalError(f"--rag-pipeline-config {pipeline_config}: cannot read it ({exc})") from None
    choice = str(data.get("pipeline") or "")
    kind = kinds.get("python" if ":" in choice else choice) if choice else None
    mode = str(gold or data.get("gold") or (kind.default_gold if kind else "corpus"))
    if kind is None:
        kind = kinds.get(kinds.native_kind(mode) or "")
    if kind is None or mode not in kind.gold_modes:
        offered = ", ".join(kind.gold_modes) if kind else ", ".join(GOLD_MODES)
        where = f"{pipeline_config}: gold = {mode!r}" if pipeline_config and not gold else f"--gold {mode}"
        raise RagEvalError(f"{where} is not offered by pipeline {choice or '(none named)'!r}; valid: {offered}")
    return PipelineSpec(kind.name, gold=mode)


@dataclass(frozen=True)
class Gaps:
    """``validate --coverage``'s gap options: tag dimensions, the cell minimum, whether gaps fail."""

    dimensions: Sequence[str]
    minimum: int | None
    fail: bool


def _validate(
    dataset: str | None,
    golden: str | None,
    coverage: bool,
    spec: PipelineSpec,
    gaps: Gaps | None = None,
    allow_outside: bool = False,
) -> int:
    from rag_eval.adapters import corpus_chunker
    from rag_eval.golden.resolve import ChunkLookup
    from rag_eval.session import EvalConfig, EvalSession
    from rag_eval.util.text import terms

    paths = find_paths(dataset, golden, allow_outside=allow_outside)
    # ids/text gold with no system named: the framework reads the corpus (no system installed or chunking)
    session = EvalSession(EvalConfig(paths, pipeline=spec))
    gold = spec.gold
    items = list(session.dataset.items)  # schema, unique ids, corpus hash
    if paths.corpus is None:
        print("gold exists, key facts traceable, no document in both splits: skipped (no corpus in the dataset)")
    elif gold != "corpus":
        print(
            f"gold = {gold!r}: chunk ids are the system's own, not looked up in a local index; doc ids and quotes "
            "are checked against the corpus (give --rag-pipeline to look chunk ids up in the system)"
        )
    docs = session.dataset.documents
    chunker = corpus_chunker(session.config.pipeline, session.context)
    lookup = ChunkLookup(docs, chunker(docs) if chunker is not None and docs else [])
    results = validate_all(items, lookup, terms, corpus=paths.corpus is not None, gold=gold)
    n_problems = 0
    for check, problems in results.items():
        status = "ok" if not problems else f"{len(problems)} problem(s)"
        print(f"{check}: {status}")
        for p in problems:
            print(f"  {p}")
        n_problems += len(problems)
    thin = 0
    if coverage:
        print()
        print(coverage_table(items, golden_applies()))
        if gaps is not None and (gaps.dimensions or gaps.minimum is not None):
            from rag_eval.golden.coverage import coverage_cells, gaps_table

            minimum = gaps.minimum if gaps.minimum is not None else 1
            cells = coverage_cells(items, gaps.dimensions or ["scenario"], minimum)
            thin = sum(1 for c in cells if c.thin)
            print()
            print(terminal(gaps_table(cells, minimum)))
    print(f"{len(items)} items in {paths.golden}: {'valid' if not n_problems else f'{n_problems} problem(s)'}")
    if gaps is not None and gaps.fail and thin:
        print(f"--fail-under: {thin} cell(s) below --min {gaps.minimum if gaps.minimum is not None else 1}")
        return 1
    return 1 if n_problems else 0


def _validate_held(dataset: str | None, golden: str | None, pipeline: str, config: str | None) -> int:
    """``validate --rag-pipeline``: every gold chunk id looked up in the system itself
    (its ``lookup``; the framework adapters ask their stores); 1 when it lacks some."""
    from rag_eval.adapters import SystemContext, build_system, load_spec
    from rag_eval.adapters.gold_check import gold_ids, system_ids, unheld

    paths = find_paths(dataset, golden)
    spec = load_spec(pipeline, config)
    system = build_system(spec, SystemContext(project_root=Path.cwd(), corpus=paths.corpus))
    items = golden_items(paths)
    chunks, _ = gold_ids(items)
    if not chunks:
        print(f"gold held by {spec.where}: no gold chunk ids to look up")
        return 0
    if not getattr(system, "can_lookup", False):
        print(f"gold held by {spec.where}: not checked (the system cannot look ids up: it has no lookup(ids))")
        return 0
    ids = sorted({i for mapped in system_ids(chunks, spec.id_map).values() for i in mapped})
    missing = unheld(chunks, spec.id_map, system.lookup(ids))  # type: ignore[attr-defined]
    print(f"gold held by {spec.where}: {'ok' if not missing else f'{len(missing)} problem(s)'}")
    for gid in sorted(missing):
        where = [i.id for i in items if any(r.chunk_id == gid for g in i.evidence for r in g.any_of)]
        print(f"  gold chunk id {gid!r} (items {', '.join(where)}) is not indexed by the system; fix the id")
    return 1 if missing else 0


def _render(args: argparse.Namespace) -> int:
    """Re-render the outputs of a stored results file (CI: after the artifact upload)."""
    from rag_eval.outputs import writers
    from rag_eval.results.file import load_results
    from rag_eval.results.model import RunResults
    from rag_eval.util.person_files import refuse_overlap

    path = Path(args.results)
    out = Path(args.out) if args.out else None if args.command == "summary" else path.with_suffix(".html")
    calibration_file = getattr(args, "calibration", None)  # report only
    try:
        refuse_overlap([("--out", out)], [("RESULTS", path), ("--calibration", calibration_file)])
        results = RunResults.from_dict(load_results(path))
        if args.command == "summary":
            data = writers.get("markdown").render(results, writers.Context(artifact_url=args.artifact_url or None))
            if out is None:
                sys.stdout.write(data.decode("utf-8"))
                return 0
            writers.write_file(out, data)
            return 0
        calibration: list[str] = []
        if calibration_file:
            from rag_eval.calibrate.record import lines, load_record

            calibration = lines(load_record(Path(calibration_file)))
        out = out or path.with_suffix(".html")
        writers.write("html", results, out, writers.Context(calibration=tuple(calibration)))
    except RagEvalError as exc:  # the results or --calibration file, or an output that is an input
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # written atomically: nothing half-written is left
        print(f"error: cannot write --out {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"report: {out}")
    return 0


def _power(args: argparse.Namespace) -> int:
    """Print the items needed for ``--drop`` on ``--metric`` and the drop the run can see now."""
    from rag_eval.gates.power_report import PowerError, power_answer
    from rag_eval.results.file import ResultsFileError, load_results

    try:
        answer = power_answer(load_results(Path(args.results)), args.metric, args.drop, args.alpha, args.power)
    except (ResultsFileError, PowerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(answer.lines()))
    return 0


def _sample(args: argparse.Namespace) -> int:
    """The labelling sheet and page of a seeded sample (docs/human-labels.md#which-cases-to-label)."""
    from rag_eval.labels.page import PAGE, SHEET, write_sample
    from rag_eval.labels.sample import SampleError, sample_cases
    from rag_eval.results.file import ResultsFileError, load_results
    from rag_eval.util.person_files import FileGuardError, refuse_overlap

    out = Path(args.out)
    try:
        refuse_overlap([("--out", out / SHEET), ("--out", out / PAGE)], [("RESULTS", Path(args.results))])
        results = load_results(Path(args.results))
        sample = sample_cases(results, args.n, seed=args.seed, stratify=args.stratify, metrics=args.metric)
    except (ResultsFileError, SampleError, FileGuardError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not sample:
        print(
            f"error: {args.results}: no judged case to label (run the judge tier, or the dialogue tier with a judge)",
            file=sys.stderr,
        )
        return 2

    try:
        written = write_sample(sample, Path(args.out), str(args.results), force=args.force)
    except FileGuardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # each file is written atomically: none is left half-written
        print(f"error: cannot write --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    sheet, page = written.sheet, written.page

    strata = ", ".join(sorted({c.stratum for c in sample}))  # tag values come from the golden set: escaped
    print(
        f"sampled {len(sample)} case(s) (seed {args.seed}"
        + (f", strata {terminal(strata, False)})" if args.stratify else ")")
    )
    print(f"labelling sheet: {terminal(str(sheet), False)}")
    print(f"labelling page: {terminal(str(page), False)}")
    if written.kept is not None:
        print(f"the labels the sheet held (--force) are kept in {terminal(str(written.kept), False)}")
    return 0


def _merge(args: argparse.Namespace) -> int:
    """Exit 0 when every gate passed, 1 when one failed (or an output could not be
    written), 2 when the shards cannot be merged or the baseline cannot be used."""
    from rag_eval.outputs.write import write_outputs
    from rag_eval.results.baseline import BaselineError
    from rag_eval.results.finalize import Baseline, Outputs, baseline_lines, summary_lines
    from rag_eval.results.merge import MergeError, merge, read_shards
    from rag_eval.util.person_files import FileGuardError, refuse_overlap

    started = time.time()
    out = Path(args.out)
    report = None if args.no_report else Path(args.report) if args.report else out.with_suffix(".html")
    summary = Path(args.summary_md) if args.summary_md else None
    outputs = [("--out", out), ("--report", report), ("--summary-md", summary)]
    inputs = [*(("FILE", f) for f in args.files), ("--thresholds", args.thresholds), ("--baseline", args.baseline)]
    try:
        refuse_overlap(outputs, inputs)
        merged = merge(read_shards(args.files), args.files, args.thresholds)
        # the thresholds file the shards recorded is an input too (known once they are read)
        refuse_overlap(outputs, [("run.thresholds", merged.thresholds.path if merged.thresholds else None)])
    except FileGuardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except MergeError as exc:
        print(f"error: cannot merge: {exc}", file=sys.stderr)
        return 2
    baseline = None
    if args.baseline:
        try:
            baseline = Baseline.load(Path(args.baseline), merged.run, args.baseline_mismatch)
        except BaselineError as exc:
            print(f"error: --rag-baseline: {exc}", file=sys.stderr)
            return 2
    done = merged.conclude(baseline)
    results, regression, passed = done.results, done.comparison.gates, done.passed
    try:
        written = write_outputs(results, Outputs(out, report, summary, args.artifact_url, started=started))
    except OSError as exc:  # the results file itself: nothing was written (no temporary file left)
        print(
            f"error: {exc}"
            if isinstance(exc, RagEvalError)
            else f"error: cannot write --out {out}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    # The lines of the pytest terminal summary of an unsharded run.
    if merged.thresholds is None:
        print(
            "no thresholds file: built-in gates only (error_rate = 0 per tier that ran, at least one case run per "
            "selected tier; the shards ran without one; pass --rag-thresholds PATH)"
        )
    gates: list[GateResult] = [*merged.gates, *regression]
    note = f" (merged {len(args.files)} shards, {len(results.cases)} cases)"
    for line in summary_lines(gates, passed, baseline, bool(regression), baseline_lines(results), written, note):
        print(line.text, file=sys.stderr if line.text.startswith("ERROR:") else sys.stdout)
    return 0 if passed and not written.problems else 1


# A command's handler; the authoring commands are run by authoring.run, before this is looked up.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": _dataset_command,
    "coverage": _dataset_command,
    "corpus-hash": _dataset_command,
    "merge": _merge,
    "summary": _render,
    "report": _render,
    "sample": _sample,
    "power": _power,
    "calibrate": calibrate_command.run,
    "grid": grid_command.main,
}
