"""The plugin's options and ini keys, read, checked and defaulted once into a frozen
:class:`RunConfig` at ``pytest_configure``: a bad value is a usage error there, naming
the option or ini key and the fix."""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rag_eval import tiers
from rag_eval.adapters import AdapterConfigError, PipelineSpec, load_spec, settings_check
from rag_eval.adapters import kinds as adapter_kinds
from rag_eval.core.errors import ConfigError
from rag_eval.dataset import GOLDEN_NAMES, DatasetPaths
from rag_eval.gates.thresholds import Thresholds, ThresholdsError, load_thresholds
from rag_eval.labels.load import LabelsError, load_labels
from rag_eval.labels.model import Label
from rag_eval.llm.policy import DEFAULT_CONCURRENCY
from rag_eval.results.finalize import MISMATCH_MODES, Mismatch
from rag_eval.session import EvalConfig
from rag_eval.util.person_files import FileGuardError, refuse_overlap
from rag_eval.util.shard import Shard

CASE_FAILURE_MODES: tuple[str, ...] = ("gate", "strict")
CONCURRENCY_VAR = "RAG_EVAL_CONCURRENCY"


def _add_output_options(parser: pytest.Parser) -> None:
    out = parser.getgroup("rag_eval_outputs", "RAG evaluation: report, summary and baseline")
    out.addoption(
        "--rag-report",
        default=None,
        metavar="PATH",
        help="where to write the HTML report (default: beside --rag-results, same name, .html)",
    )
    out.addoption("--rag-no-report", action="store_true", help="do not write the HTML report (e.g. on shards)")
    out.addoption(
        "--rag-summary-md",
        default=None,
        metavar="PATH",
        help="append a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)",
    )
    out.addoption("--rag-artifact-url", default=None, help="link to the uploaded report, shown in the Markdown summary")
    out.addoption(
        "--rag-baseline", default=None, metavar="PATH", help="an earlier results file (e.g. main's) to compare with"
    )
    out.addoption(
        "--rag-baseline-mismatch",
        choices=MISMATCH_MODES,
        default="error",
        help="a baseline of another dataset: error (default) stops the run; "
        "warn runs without the comparison and says why",
    )


def add_options(parser: pytest.Parser) -> None:
    """Every option and ini key of the plugin (``pytest_addoption``), group by group, in ``--help``'s order."""
    _add_output_options(parser)
    _add_input_options(parser)
    _add_case_options(parser)
    add_tier_options(parser)  # each tier's group (the judge's: its endpoint, budgets, human labels)
    _add_pipeline_options(parser)


def _add_input_options(parser: pytest.Parser) -> None:
    """What to run: the dataset, golden set, thresholds, results file, split, shard, tags, settings, grid."""
    group = parser.getgroup("rag_eval", "RAG evaluation gate")
    group.addoption(
        "--rag-dataset",
        help="folder with a golden set (golden.jsonl or qa.jsonl) "
        "and optionally a corpus (corpus/, corpus.jsonl or *.md)",
    )
    group.addoption("--rag-golden-set", help="golden set JSONL (default: golden.jsonl or qa.jsonl in --rag-dataset)")
    group.addoption(
        "--rag-allow-outside-dataset",
        action="store_true",
        help="read corpus and golden files of --rag-dataset that resolve outside its folder (symlinks, ..); "
        "refused by default",
    )
    group.addoption("--rag-thresholds", help="gates file (default: thresholds.toml)")
    group.addoption(
        "--rag-results",
        default=None,
        metavar="PATH",
        help="where to write the results JSON (default: ini rag_eval_results, reports/eval-results.json)",
    )
    group.addoption("--rag-split", choices=("tune", "holdout", "all"), default="all", help="golden split to run")
    group.addoption(
        "--rag-shard",
        default=None,
        metavar="I/N",
        help="run shard I of N (a stable partition by golden id); merge with `python -m rag_eval merge`",
    )
    group.addoption("--rag-tag", action="append", default=[], metavar="KEY=VALUE", help="only items with this tag")
    group.addoption("--rag-set", action="append", default=[], metavar="NAME=VALUE", help="override a pipeline setting")
    group.addoption(
        "--rag-grid",
        default=None,
        metavar="GRID.toml",
        help="run a grid of configurations instead of one run, then compare them (docs/compare.md)",
    )
    group.addoption(
        "--rag-top-k", type=int, help="how many items to ask the system for (the call's top_k, for every system)"
    )
    parser.addini(
        "rag_eval_dataset",
        "default --rag-dataset (relative to the ini file); the plugin is inert without a dataset or golden set",
        default="",
    )
    parser.addini("rag_eval_golden_set", "default --rag-golden-set (relative to the ini file)", default="")
    parser.addini(
        "rag_eval_results", "default --rag-results (relative to the ini file)", default="reports/eval-results.json"
    )
    parser.addini("rag_eval_thresholds", "default --rag-thresholds", default="thresholds.toml")


def _add_case_options(parser: pytest.Parser) -> None:
    """How cases run: the dialogue set, what a failing case does, its timeout, the concurrency."""
    group = parser.getgroup("rag_eval", "RAG evaluation gate")
    group.addoption(
        "--rag-dialogues",
        default=None,
        metavar="PATH",
        help="dialogue set JSONL (default: dialogues.jsonl beside the golden set)",
    )
    group.addoption(
        "--rag-case-failures",
        choices=CASE_FAILURE_MODES,
        default=None,
        help="gate (default): a failing case is reported as xfail and the gates decide the exit code; "
        "strict: every failing or erroring case fails its test",
    )
    group.addoption(
        "--rag-case-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a case that takes longer ends as an error naming the limit; the other cases go on (default: no limit)",
    )
    parser.addini("rag_eval_case_failures", "default --rag-case-failures (gate or strict)", default="gate")
    group.addoption(
        "--rag-concurrency",
        type=int,
        default=None,
        metavar="N",
        help=f"cases whose model or service calls run ahead of their tests, at once, in each process (default "
        f"{DEFAULT_CONCURRENCY}, or ini rag_eval_concurrency, or {CONCURRENCY_VAR}; 1 = one call at a time)",
    )
    parser.addini("rag_eval_concurrency", f"default --rag-concurrency (default {DEFAULT_CONCURRENCY})", default="")


def _add_pipeline_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("rag_eval_pipeline", "RAG evaluation: the system under test (docs/adapters.md)")
    group.addoption(
        "--rag-pipeline",
        default=None,
        help=f"the system under test (no default): {', '.join(adapter_kinds.named())} (rag_app runs in process), "
        "or package.module:factory for your own object",
    )
    group.addoption(
        "--rag-pipeline-config",
        default=None,
        metavar="TOML",
        help="adapter configuration (url, field paths, gold mode)",
    )
    parser.addini("rag_eval_pipeline", "default --rag-pipeline", default="")
    parser.addini("rag_eval_pipeline_config", "default --rag-pipeline-config (relative to the ini file)", default="")


@dataclass(frozen=True)
class InputSource:
    """Where the dataset and golden set come from, so that a bad one names its source."""

    dataset: Path | None
    golden: Path | None
    where: str  # "--rag-dataset" or "ini rag_eval_dataset (pyproject.toml)"
    allow_outside: bool = False  # --rag-allow-outside-dataset


@dataclass(frozen=True)
class RunConfig:
    """Every option and ini key of a configured run, parsed and defaulted once."""

    inputs: InputSource
    eval: EvalConfig  # what the session measures (pipeline, thresholds, judge, passk overrides)
    split: str
    tags: tuple[str, ...]  # KEY=VALUE, checked
    shard: Shard | None
    strict: bool  # --rag-case-failures strict: a failing case fails its test
    dialogues: str | None  # --rag-dialogues
    results_path: Path
    report_path: Path | None
    summary_path: Path | None
    artifact_url: str | None
    baseline_path: Path | None
    baseline_mismatch: Mismatch
    keep_full: bool  # --json-report asked for the cases on the reports
    labels: tuple[Label, ...] | None = None  # --rag-human-labels, loaded and checked at start-up

    @property
    def thresholds(self) -> Thresholds | None:
        return self.eval.thresholds

    @property
    def tag_filter(self) -> dict[str, str]:
        return dict(t.partition("=")[::2] for t in self.tags)


def read_config(config: pytest.Config) -> RunConfig | None:
    """The run's configuration, or None: without a dataset or golden set the plugin is inert."""
    inputs = _inputs(config)
    if inputs is None:
        return None
    root = project_base(config)
    spec = _pipeline_spec(config)
    concurrency = _concurrency(config)
    cfg = EvalConfig(
        paths=DatasetPaths(inputs.dataset or Path(), None, inputs.golden or Path()),  # resolved lazily (Run.paths)
        settings_overrides=_overrides(config, spec),
        thresholds=_load_thresholds(config, root),
        project_root=root,
        tier_args=_tier_args(config, root, concurrency),
        pipeline=spec,
        case_timeout=_case_timeout(config),
        top_k=_positive(config, "top_k"),
        concurrency=concurrency,
    )
    _check_tier_options(cfg)
    # as pytest resolves its own: a command-line path against the folder pytest was started
    # in (--junitxml), an ini value against the ini file's folder; normalised (no "app/../")
    here = config.invocation_params.dir
    given = config.getoption("rag_results")
    results = _rooted(here, given) if given else _rooted(root, str(config.getini("rag_eval_results")))
    report = config.getoption("rag_report")
    baseline = config.getoption("rag_baseline")
    run_config = RunConfig(
        inputs=inputs,
        eval=cfg,
        split=config.getoption("rag_split"),
        tags=_checked_tags(config),
        shard=_parse_shard(config),
        strict=_strict(config),
        dialogues=config.getoption("rag_dialogues"),
        results_path=results,
        # the report follows the results file it renders (same folder and stem)
        report_path=None
        if config.getoption("rag_no_report")
        else (_rooted(here, report) if report else results.with_suffix(".html")),
        summary_path=Path(config.getoption("rag_summary_md")) if config.getoption("rag_summary_md") else None,
        artifact_url=config.getoption("rag_artifact_url"),
        baseline_path=Path(baseline) if baseline is not None else None,
        baseline_mismatch=config.getoption("rag_baseline_mismatch"),
        keep_full=bool(getattr(config.option, "json_report", False)),
        labels=_human_labels(config, root),
    )
    _refuse_overlap(run_config, config, root)
    return run_config


def _refuse_overlap(cfg: RunConfig, config: pytest.Config, root: Path) -> None:
    """No output of the run (results, report, summary) is one of its inputs or another output."""
    dataset, golden = cfg.inputs.dataset, cfg.inputs.golden
    in_dataset = [dataset / name for name in (*GOLDEN_NAMES, "corpus.jsonl")] if dataset is not None else []
    labels = config.getoption("rag_human_labels") or str(config.getini("rag_eval_human_labels")) or None
    inputs: list[tuple[str, str | Path | None]] = [
        ("--rag-golden-set", golden),
        *(("--rag-dataset", p) for p in in_dataset),
        ("--rag-thresholds", cfg.thresholds.path if cfg.thresholds is not None else None),
        ("--rag-baseline", cfg.baseline_path),
        ("--rag-dialogues", cfg.dialogues),
        ("--rag-human-labels", _rooted(root, labels) if labels else None),
        ("--rag-pipeline-config", config.getoption("rag_pipeline_config")),
    ]
    outputs = [
        ("--rag-results", cfg.results_path),
        ("--rag-report", cfg.report_path),
        ("--rag-summary-md", cfg.summary_path),
    ]
    try:
        refuse_overlap(outputs, inputs)
    except FileGuardError as exc:
        raise pytest.UsageError(f"rag-eval: {exc}") from None


def _human_labels(config: pytest.Config, root: Path) -> tuple[Label, ...] | None:
    """--rag-human-labels (or ini rag_eval_human_labels), read before any case: a bad file
    stops the run with every ``file:line`` error of it."""
    given = config.getoption("rag_human_labels")
    ini = str(config.getini("rag_eval_human_labels"))
    if not given and not ini:
        return None
    where = (
        "--rag-human-labels"
        if given
        else f"ini rag_eval_human_labels (in {config.inipath.name if config.inipath else 'the ini file'})"
    )
    try:
        return tuple(load_labels(Path(given) if given else _rooted(root, ini)))
    except LabelsError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


def _pipeline_spec(config: pytest.Config) -> PipelineSpec:
    """Read and check the adapter configuration once, before any case: a bad one is a usage error."""
    ini_config = config.getini("rag_eval_pipeline_config")
    path = config.getoption("rag_pipeline_config") or (str(project_base(config) / ini_config) if ini_config else None)
    # `--rag-pipeline mypipe:make` names a module of the user's repository: importable from
    # the project folder and the invocation dir, as under `python -m pytest`, while the spec
    # imports it (it stays in sys.modules). Only then: left on sys.path, those folders would
    # make the repository's modules importable to the user's own unit tests too, which then
    # pass only when rag options are given (issue 20.11).
    added = [
        f for f in dict.fromkeys((str(config.invocation_params.dir), str(project_base(config)))) if f not in sys.path
    ]
    sys.path[:0] = added
    try:
        return load_spec(config.getoption("rag_pipeline"), path, default=config.getini("rag_eval_pipeline") or None)
    except AdapterConfigError as exc:
        # only the ini keys the run actually took: a --rag-pipeline-config file names its own pipeline
        ini = [
            key
            for key, options in (
                ("rag_eval_pipeline_config", ("rag_pipeline_config",)),
                ("rag_eval_pipeline", ("rag_pipeline", "rag_pipeline_config")),
            )
            if config.getini(key) and not any(config.getoption(o) for o in options)
        ]
        source = (
            f" (set by ini {', '.join(ini)} in {config.inipath.name if config.inipath else 'the ini file'})"
            if ini
            else ""
        )
        raise pytest.UsageError(f"rag-eval pipeline{source}: {exc}") from None
    finally:
        for folder in added:
            if folder in sys.path:
                sys.path.remove(folder)


def _inputs(config: pytest.Config) -> InputSource | None:
    """The configured inputs, or None: the plugin is then inert (a user's unrelated test
    run gets no extra output, files or gates)."""
    root = project_base(config)
    ini_file = config.inipath.name if config.inipath else "the ini file"
    dataset, golden = config.getoption("rag_dataset"), config.getoption("rag_golden_set")
    where = "--rag-dataset"
    if not dataset and config.getini("rag_eval_dataset"):
        dataset = str(root / str(config.getini("rag_eval_dataset")))
        where = f"ini rag_eval_dataset (in {ini_file})"
    if not golden and config.getini("rag_eval_golden_set"):
        golden = str(root / str(config.getini("rag_eval_golden_set")))
        if not dataset:
            where = f"ini rag_eval_golden_set (in {ini_file})"
    if not dataset and not golden:
        return None
    return InputSource(
        Path(dataset) if dataset else None,
        Path(golden) if golden else None,
        where,
        bool(config.getoption("rag_allow_outside_dataset")),
    )


def project_base(config: pytest.Config) -> Path:
    """What the plugin's default and relative paths (thresholds.toml, reports/, .rag_cache,
    the ini keys' values) are relative to: ``--rootdir`` when given, else the folder of the
    ini file (pytest.ini, pyproject.toml, tox.ini, setup.cfg), else the folder pytest was
    started in. Never the rootdir pytest guessed from its arguments: it takes the value of
    a space-form option (``--rag-dataset ../data``) for a path and would move every default
    to the parent folder, dropping the user's thresholds (issue 20.2)."""
    if config.option.rootdir:
        return config.rootpath
    if config.inipath is not None:
        return config.inipath.parent
    return config.invocation_params.dir


def _rooted(root: Path, path: str) -> Path:
    """``path`` against ``root`` when relative, with ``..`` and ``.`` folded in (not resolved
    through symlinks): the path the terminal prints is the file's plain name."""
    return Path(os.path.normpath(root / path))


class _TierOptions:
    """What a tier's ``add_options`` gets (``tiers.base.Options``): its own help section, and
    the parser's ini keys."""

    def __init__(self, parser: pytest.Parser, tier: tiers.Tier) -> None:
        self._group = parser.getgroup(f"rag_eval_{tier.name}", tier.option_help or f"RAG evaluation: {tier.name} tier")
        self._parser = parser

    def addoption(self, *names: str, **attrs: Any) -> None:
        self._group.addoption(*names, **attrs)

    def addini(self, name: str, help: str, **attrs: Any) -> None:
        self._parser.addini(name, help, **attrs)


def add_tier_options(parser: pytest.Parser) -> None:
    """The options of every registered tier not added to this parser yet (a tier registered
    by a conftest adds its own when that conftest is loaded: ``hooks.pytest_plugin_registered``)."""
    added = _ADDED.setdefault(parser, set())
    for tier in tiers.all_tiers():
        if tier.name not in added:
            added.add(tier.name)
            tier.add_options(_TierOptions(parser, tier))


_ADDED: weakref.WeakKeyDictionary[pytest.Parser, set[str]] = weakref.WeakKeyDictionary()  # tiers added per parser


@dataclass(frozen=True)
class _TierValues:
    """What a tier's ``read_options`` gets (``tiers.base.OptionValues``)."""

    config: pytest.Config
    base: Path
    concurrency: int

    def getoption(self, name: str) -> Any:
        return self.config.getoption(name)

    def getini(self, name: str) -> Any:
        return self.config.getini(name)

    @property
    def handed(self) -> Mapping[str, Any] | None:
        """On an xdist worker, its ``workerinput`` (``hooks.pytest_configure_node``)."""
        handed: Mapping[str, Any] | None = getattr(self.config, "workerinput", None)
        return handed


def _tier_args(config: pytest.Config, root: Path, concurrency: int) -> dict[str, Any]:
    """Each tier's command-line values (``Tier.read_options``), read and checked once."""
    out: dict[str, Any] = {}
    values = _TierValues(config, root, concurrency)
    for tier in tiers.all_tiers():
        try:
            value = tier.read_options(values)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None
        if value is not None:
            out[tier.name] = value
    return out


def _check_tier_options(cfg: EvalConfig) -> None:
    """Every tier's options read and checked once, at start-up: a contradiction (passk's
    n < k) is a configuration error, never a number."""
    for tier in tiers.all_tiers():
        try:
            tier.options(cfg)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from None


def _positive(config: pytest.Config, option: str) -> int | None:
    value = config.getoption(f"rag_{option}")
    if value is not None and value < 1:
        raise pytest.UsageError(f"--rag-{option.replace('_', '-')} must be at least 1, got {value}")
    return value


def _case_timeout(config: pytest.Config) -> float | None:
    value: float | None = config.getoption("rag_case_timeout")
    if value is not None and not value > 0:  # also refuses nan
        raise pytest.UsageError(f"--rag-case-timeout must be a number of seconds above 0 (e.g. 120), got {value}")
    return value


def _concurrency(config: pytest.Config) -> int:
    """--rag-concurrency, else ini rag_eval_concurrency, else RAG_EVAL_CONCURRENCY, else the
    default; anything but a whole number >= 1 stops the run naming where it was set."""
    given: int | None = config.getoption("rag_concurrency")
    ini = str(config.getini("rag_eval_concurrency")).strip()
    env = os.environ.get(CONCURRENCY_VAR, "").strip()
    if given is not None:
        where, text = "--rag-concurrency", str(given)
    elif ini:
        where, text = f"ini rag_eval_concurrency (in {config.inipath.name if config.inipath else 'the ini file'})", ini
    elif env:
        where, text = f"the environment variable {CONCURRENCY_VAR}", env
    else:
        return DEFAULT_CONCURRENCY
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise pytest.UsageError(
            f"{where} = {text!r}: a whole number >= 1 (cases run ahead at once; 1 = one at a "
            f"time, as before), e.g. {DEFAULT_CONCURRENCY}"
        )
    return value


def _load_thresholds(config: pytest.Config, root: Path) -> Thresholds | None:
    explicit = config.getoption("rag_thresholds")
    path = Path(explicit) if explicit else root / config.getini("rag_eval_thresholds")
    if not explicit and not path.is_file():
        return None  # the ini default (thresholds.toml) may be absent: the built-in gates apply
    if not path.is_file():
        raise pytest.UsageError(
            f"--rag-thresholds {explicit}: no such file (resolved to {path.resolve()}); give an existing thresholds "
            "file, or leave the option out for the built-in gates"
        )
    try:
        return load_thresholds(path)
    except ThresholdsError as exc:
        raise pytest.UsageError(str(exc)) from None


def _parse_shard(config: pytest.Config) -> Shard | None:
    """--rag-shard, parsed once at start-up (a bad value is a usage error there)."""
    text = config.getoption("rag_shard")
    try:
        return Shard.parse(str(text)) if text is not None else None
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _checked_tags(config: pytest.Config) -> tuple[str, ...]:
    for item in config.getoption("rag_tag"):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise pytest.UsageError(f"--rag-tag expects KEY=VALUE (e.g. --rag-tag scenario=negative), got {item!r}")
    return tuple(config.getoption("rag_tag"))


def _overrides(config: pytest.Config, spec: PipelineSpec) -> dict[str, Any]:
    """``--rag-set NAME=VALUE``: the system's settings, checked by its adapter; refused for a
    pipeline whose adapter takes none, where they would do nothing (``--rag-top-k`` is EvalConfig.top_k)."""
    out: dict[str, Any] = {}
    where: dict[str, str] = {}
    for item in config.getoption("rag_set"):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise pytest.UsageError(f"--rag-set expects NAME=VALUE (e.g. --rag-set reranker=none), got {item!r}")
        out[name.strip()] = value.strip()
        where[name.strip()] = f"--rag-set {item}"
    if not out:
        return out
    check = settings_check(spec)
    if check is None:
        raise pytest.UsageError(
            f"{', '.join(where.values())}: no setting of {spec.where} can be changed from the command line "
            "(--rag-set changes the settings of a system whose adapter reads them, such as rag_app); "
            "configure your own system in its own code or in [options] of the pipeline configuration"
        )
    try:
        check(out, where)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    return out


def _strict(config: pytest.Config) -> bool:
    mode = config.getoption("rag_case_failures") or config.getini("rag_eval_case_failures")
    if mode not in CASE_FAILURE_MODES:
        raise pytest.UsageError(f"rag_eval_case_failures = {mode!r}; valid: {', '.join(CASE_FAILURE_MODES)}")
    return mode == "strict"
