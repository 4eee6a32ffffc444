"""pytest wiring: golden items become cases; thresholds.toml gates the run.

The only module of rag_eval that imports pytest. Workers compute cases and send
each ``CaseResult`` to the controller on the test report (``user_properties``,
JSON primitives only); aggregation, gating and writing results happen once, on
the controller, so ``pytest -n 2`` gives exactly the numbers of a serial run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, cast

import pytest

from rag_eval.errors import ConfigError, RagEvalError
from rag_eval.escape import terminal
from rag_eval.dataset import Dataset, DatasetPaths, find_paths, load_dataset
from rag_eval.gates.gate import run_gates
from rag_eval.golden.load import GoldenSetError
from rag_eval.golden.model import GoldenItem
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.validate import TIER_APPLIES
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS, DEEPEVAL_ENGINE_METRICS
from rag_eval.judge.config import JudgeConfig
from rag_eval.results.case import USER_PROPERTY, CaseResult
from rag_eval.results.build import (
    file_sha256_or_none,
    git_commit,
    judge_warnings,
    now_iso,
    usage_totals,
)
from rag_eval.results.baseline import BaselineError
from rag_eval.results.finalize import (
    MISMATCH_MODES,
    Baseline,
    Line,
    Outputs,
    Written,
    baseline_lines,
    conclude,
    summary_lines,
    write_outputs,
)
from rag_eval.gates.result import GateResult
from rag_eval.results.model import RunResults
from rag_eval.adapters import AdapterConfigError, PipelineSpec, SystemContext, corpus_reader, load_spec
from rag_eval.redact import Redactor
from rag_eval.session import EvalConfig, EvalSession, index_build, run_redactor
from rag_eval.shard import Shard
from rag_eval.gates.thresholds import Thresholds, ThresholdsError, load_thresholds

TIERS: tuple[str, ...] = ("retrieval", "deterministic", "judge", "passk", "dialogue")
CASE_FAILURE_MODES: tuple[str, ...] = ("gate", "strict")
MARKERS: dict[str, str] = {
    "retrieval": "retrieval tier: per-stage hit/recall/precision/MRR/nDCG of each golden item",
    "deterministic": "deterministic tier: model-free checks of each generated answer",
    "judge": "judge tier: LLM-as-judge metrics (needs a configured judge endpoint)",
    "passk": "repeated trials: pass@k, pass^k and stability per case",
    "dialogue": "dialogue tier: replay each dialogue item (clarification, retrieval, hints, interception)",
    "golden": "golden set validation: schema, ids, gold traceability, split hygiene",
}
# --rag-top-k means the call's top_k for any system (rag_app: its rerank_top_n setting);
# every other rag_app setting goes through --rag-set NAME=VALUE.
SHORTCUTS: dict[str, tuple[str, type]] = {"rag_top_k": ("rerank_top_n", int)}


@dataclass
class ControllerState:
    """What the controller accumulates during the run."""

    thresholds: Thresholds | None
    results_path: Path
    report_path: Path | None = None
    summary_path: Path | None = None
    baseline: Baseline | None = None
    cases: dict[str, CaseResult] = field(default_factory=dict)
    gates: list[GateResult] = field(default_factory=list)
    regression: list[GateResult] = field(default_factory=list)
    baseline_lines: list[str] = field(default_factory=list)
    passed: bool = True
    written: Written | None = None
    redactor: Redactor = field(default_factory=Redactor)  # every secret of the run: applied to every output
    # What the controller's warm-up build did (index_built, embeddings_computed, ...): under
    # xdist the workers only load the index it built, so their cases would say "not built".
    warm_build: dict[str, Any] = field(default_factory=dict)


STATE = pytest.StashKey[ControllerState]()
CONFIG = pytest.StashKey[EvalConfig]()
# Per-run caches live in the config's stash, not in module globals: a module global
# outlives the run, so a second pytest.main() in the same process (pytester, IDEs)
# would see the first run's golden set even after the file changed.
PATHS = pytest.StashKey[DatasetPaths]()
DATASET = pytest.StashKey[Dataset]()
SHARD = pytest.StashKey["Shard | None"]()
INPUTS = pytest.StashKey["InputSource"]()
SESSION = pytest.StashKey[EvalSession]()
DIALOGUES = pytest.StashKey["list[DialogueItem]"]()
CONTROLLER_PLUGIN = "rag_eval_controller"
# Under xdist the controller collects nothing: a worker counts the judge cases it
# collected (every worker collects the same items) and its judge cases carry the count.
JUDGE_TOTAL = pytest.StashKey[int]()
JUDGE_TOTAL_PROPERTY = "rag_eval_judge_total"


class DatasetInputError(Exception):
    """The dataset, golden set or selection cannot be used; the message says why and the fix."""


def _add_output_options(parser: pytest.Parser) -> None:
    out = parser.getgroup("rag_eval_outputs", "RAG evaluation: report, summary and baseline")
    out.addoption("--rag-report", default=None, metavar="PATH", help="where to write the HTML report (default: beside --rag-results, same name, .html)")
    out.addoption("--rag-no-report", action="store_true", help="do not write the HTML report (e.g. on shards)")
    out.addoption("--rag-summary-md", default=None, metavar="PATH", help="append a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)")
    out.addoption("--rag-artifact-url", default=None, help="link to the uploaded report, shown in the Markdown summary")
    out.addoption("--rag-baseline", default=None, metavar="PATH", help="an earlier results file (e.g. main's) to compare with")
    out.addoption(
        "--rag-baseline-mismatch",
        choices=MISMATCH_MODES,
        default="error",
        help="a baseline of another dataset: error (default) stops the run; warn runs without the comparison and says why",
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    _add_output_options(parser)
    group = parser.getgroup("rag_eval", "RAG evaluation gate")
    group.addoption("--rag-dataset", help="folder with a golden set (golden.jsonl or qa.jsonl) and optionally a corpus (corpus/, corpus.jsonl or *.md)")
    group.addoption("--rag-golden-set", help="golden set JSONL (default: golden.jsonl or qa.jsonl in --rag-dataset)")
    group.addoption("--rag-thresholds", help="gates file (default: thresholds.toml)")
    group.addoption("--rag-results", default=None, metavar="PATH", help="where to write the results JSON (default: ini rag_eval_results, reports/eval-results.json)")
    group.addoption("--rag-split", choices=("tune", "holdout", "all"), default="all", help="golden split to run")
    group.addoption("--rag-shard", default=None, metavar="I/N", help="run shard I of N (a stable partition by golden id); merge with `python -m rag_eval merge`")
    group.addoption("--rag-tag", action="append", default=[], metavar="KEY=VALUE", help="only items with this tag")
    group.addoption("--rag-set", action="append", default=[], metavar="NAME=VALUE", help="override a pipeline setting")
    group.addoption("--rag-top-k", type=int, help="how many items to ask the system for (rag_app: rerank_top_n)")
    parser.addini("rag_eval_dataset", "default --rag-dataset (relative to the rootdir); the plugin is inert without a dataset or golden set", default="")
    parser.addini("rag_eval_golden_set", "default --rag-golden-set (relative to the rootdir)", default="")
    parser.addini("rag_eval_results", "default --rag-results (relative to the rootdir)", default="reports/eval-results.json")
    parser.addini("rag_eval_thresholds", "default --rag-thresholds", default="thresholds.toml")
    group.addoption("--rag-dialogues", default=None, metavar="PATH", help="dialogue set JSONL (default: dialogues.jsonl beside the golden set)")
    group.addoption(
        "--rag-case-failures",
        choices=CASE_FAILURE_MODES,
        default=None,
        help="gate (default): a failing case is reported as xfail and the gates decide the exit code; "
        "strict: every failing or erroring case fails its test",
    )
    parser.addini("rag_eval_case_failures", "default --rag-case-failures (gate or strict)", default="gate")
    judge = parser.getgroup("rag_eval_judge", "RAG evaluation: judge tier (RAG_JUDGE_BASE_URL, RAG_JUDGE_MODEL, RAG_JUDGE_API_KEY)")
    judge.addoption("--rag-judge-engine", choices=("native", "deepeval"), default="native", help="native: one call per case (default); deepeval: deepeval's metrics on the same client")
    judge.addoption("--rag-fresh", action="store_true", help="ignore the judge response cache (answers are still stored)")
    judge.addoption("--rag-judge-cache", default=None, help="judge response cache folder (default .rag_cache/judge; keep it between CI runs)")
    judge.addoption("--rag-judge-prices", default=None, metavar="TOML", help='[prices."model"] prompt = USD per 1M tokens, completion = ...')
    judge.addoption("--rag-judge-budget-usd", type=float, default=None, help="stop issuing judge calls once this is spent")
    judge.addoption("--rag-judge-budget-tokens", type=int, default=None, help="stop issuing judge calls once this many tokens are used")
    judge.addoption(
        "--rag-deepeval-metrics",
        default=",".join(DEEPEVAL_DEFAULT_METRICS),
        help="with --rag-judge-engine deepeval: which of its metrics to run (comma-separated)",
    )
    passk = parser.getgroup("rag_eval_passk", "RAG evaluation: repeated trials")
    passk.addoption("--rag-passk-n", type=int, default=None, help="trials per case (overrides [passk.case] n)")
    passk.addoption("--rag-passk-k", type=int, default=None, help="k of pass@k and pass^k (overrides [passk.case] k)")
    judge.addoption("--rag-geval-criteria", default=None, help="with --rag-judge-engine deepeval: also run a GEval rubric with these criteria")
    _add_pipeline_options(parser)


def _add_pipeline_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("rag_eval_pipeline", "RAG evaluation: the system under test (docs/adapters.md)")
    group.addoption(
        "--rag-pipeline",
        default=None,
        help="rag_app (default, in process), http, dify, or package.module:factory for your own object",
    )
    group.addoption("--rag-pipeline-config", default=None, metavar="TOML", help="adapter configuration (url, field paths, gold mode)")
    parser.addini("rag_eval_pipeline", "default --rag-pipeline", default="")
    parser.addini("rag_eval_pipeline_config", "default --rag-pipeline-config (relative to the rootdir)", default="")


def _pipeline_spec(config: pytest.Config) -> PipelineSpec:
    """Read and check the adapter configuration once, before any case: a bad one is a usage error."""
    ini_config = config.getini("rag_eval_pipeline_config")
    path = config.getoption("rag_pipeline_config") or (str(config.rootpath / ini_config) if ini_config else None)
    # `--rag-pipeline mypipe:make` names a module of the user's repository: importable from
    # the rootdir and the invocation dir, as under `python -m pytest`.
    for folder in (str(config.invocation_params.dir), str(config.rootpath)):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        return load_spec(config.getoption("rag_pipeline") or config.getini("rag_eval_pipeline") or None, path)
    except AdapterConfigError as exc:
        ini = [key for key, option in (("rag_eval_pipeline_config", "rag_pipeline_config"), ("rag_eval_pipeline", "rag_pipeline"))
               if config.getini(key) and not config.getoption(option)]
        source = f" (set by ini {', '.join(ini)} in {config.inipath.name if config.inipath else 'the ini file'})" if ini else ""
        raise pytest.UsageError(f"rag-eval pipeline{source}: {exc}") from None


def _start_system(session: EvalSession) -> None:
    """Build a non-default system up front, so a factory that returns the wrong object
    stops the run with its message instead of erroring every case."""
    try:
        session.system
        stages = session.stages
    except ConfigError as exc:
        pytest.exit(f"rag-eval pipeline: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    thresholds = session.config.thresholds
    problems = thresholds.stage_problems(stages.names) if thresholds is not None and stages is not None else []
    if problems and stages is not None:
        pytest.exit(
            "rag-eval thresholds: " + "; ".join(problems) + f" — the system's stages are {', '.join(stages.names)}",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


@dataclass(frozen=True)
class InputSource:
    """Where the dataset and golden set come from, so that a bad one names its source."""

    dataset: Path | None
    golden: Path | None
    where: str  # "--rag-dataset" or "ini rag_eval_dataset (pyproject.toml)"


def _inputs(config: pytest.Config) -> InputSource | None:
    """The configured inputs, or None: the plugin is then inert (a user's unrelated test
    run gets no extra output, files or gates)."""
    root = config.rootpath
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
    return InputSource(Path(dataset) if dataset else None, Path(golden) if golden else None, where)


def _configured(config: pytest.Config) -> bool:
    return CONFIG in config.stash


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    inputs = _inputs(config)
    if inputs is None:
        return
    config.stash[INPUTS] = inputs
    root = config.rootpath
    thresholds = _load_thresholds(config, root)
    spec = _pipeline_spec(config)
    overrides = _overrides(config, spec)
    config.stash[CONFIG] = EvalConfig(
        paths=DatasetPaths(inputs.dataset or Path(), None, inputs.golden or Path()),  # resolved lazily, see _paths()
        settings_overrides=overrides,
        thresholds=thresholds,
        project_root=root,
        judge=_judge_config(config, root),
        judge_ledger=_judge_ledger(config),
        geval_criteria=config.getoption("rag_geval_criteria"),
        deepeval_metrics=_deepeval_metrics(config),
        passk_n=_positive(config, "passk_n"),
        passk_k=_positive(config, "passk_k"),
        pipeline=spec,
    )
    _check_tags(config)
    _parse_shard(config)
    _check_passk(config.stash[CONFIG])
    if not hasattr(config, "workerinput"):
        results = _rooted(root, config.getoption("rag_results") or str(config.getini("rag_eval_results")))
        report = config.getoption("rag_report")
        state = ControllerState(
            thresholds,
            results,
            # the report follows the results file it renders (same folder and stem)
            report_path=None if config.getoption("rag_no_report") else (_rooted(root, report) if report else results.with_suffix(".html")),
            summary_path=Path(config.getoption("rag_summary_md")) if config.getoption("rag_summary_md") else None,
            baseline=_baseline(config),
            redactor=run_redactor(spec),
        )
        config.stash[STATE] = state
        keep_full = bool(getattr(config.option, "json_report", False))
        config.pluginmanager.register(CaseCollector(state, keep_full, config), CONTROLLER_PLUGIN)


def _rooted(root: Path, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else root / p


def _baseline(config: pytest.Config) -> Baseline | None:
    """Load --rag-baseline at start-up, so a wrong or incomparable file stops the run before it costs anything."""
    path = config.getoption("rag_baseline")
    if path is None:
        return None
    try:
        dataset = _dataset(config)
    except DatasetInputError as exc:
        raise pytest.UsageError(f"rag-eval: {exc}") from None
    current = {
        "dataset_fingerprint": dataset.fingerprint,
        "dataset": str(dataset.paths.root),
        "golden_sha256": dataset.golden_sha256,
        "split": config.getoption("rag_split"),
        "tags": config.getoption("rag_tag"),
    }
    try:
        return Baseline.load(Path(path), current, config.getoption("rag_baseline_mismatch"))
    except BaselineError as exc:
        raise pytest.UsageError(f"--rag-baseline: {exc}") from None


def _judge_config(config: pytest.Config, root: Path) -> JudgeConfig:
    from rag_eval.judge.config import load_prices

    cache = Path(config.getoption("rag_judge_cache") or root / ".rag_cache" / "judge")
    try:
        prices = load_prices(config.getoption("rag_judge_prices")) if config.getoption("rag_judge_prices") else None
        return JudgeConfig.from_env(
            cache_dir=cache,
            fresh=config.getoption("rag_fresh"),
            prices=prices,
            budget_usd=config.getoption("rag_judge_budget_usd"),
            budget_tokens=config.getoption("rag_judge_budget_tokens"),
            engine=config.getoption("rag_judge_engine"),
        )
    except (ConfigError, ValueError, OSError) as exc:
        raise pytest.UsageError(f"judge configuration: {exc}") from None


def _deepeval_metrics(config: pytest.Config) -> tuple[str, ...]:
    names = tuple(n.strip() for n in str(config.getoption("rag_deepeval_metrics")).split(",") if n.strip())
    unknown = [n for n in names if n not in DEEPEVAL_ENGINE_METRICS]
    if unknown or not names:
        raise pytest.UsageError(
            f"--rag-deepeval-metrics: unknown {unknown or 'empty list'}; valid: {', '.join(DEEPEVAL_ENGINE_METRICS)}"
        )
    return names


def _check_passk(cfg: EvalConfig) -> None:
    """n < k is a configuration error, said at start-up, never a number."""
    options = cfg.thresholds.case_rules("passk").options if cfg.thresholds else {}
    n = cfg.passk_n or int(options.get("n", 5))
    k = cfg.passk_k or int(options.get("k", 3))
    if n < k:
        raise pytest.UsageError(
            f"passk: n = {n} trials < k = {k} (from --rag-passk-n/--rag-passk-k or [passk.case]): "
            "pass@k needs at least k trials; this is a configuration error, not a number"
        )


def _positive(config: pytest.Config, option: str) -> int | None:
    value = config.getoption(f"rag_{option}")
    if value is not None and value < 1:
        raise pytest.UsageError(f"--rag-{option.replace('_', '-')} must be at least 1, got {value}")
    return value


def _judge_ledger(config: pytest.Config) -> Path | None:
    """One spending ledger for the whole run, so a judge budget holds across xdist workers."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        path = workerinput.get("rag_eval_judge_ledger")
        return Path(path) if path else None
    if config.getoption("rag_judge_budget_usd") is None and config.getoption("rag_judge_budget_tokens") is None:
        return None
    return Path(tempfile.mkdtemp(prefix="rag-eval-judge-ledger-"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: hand the run's ledger folder to each worker."""
    if not _configured(node.config):
        return
    ledger = node.config.stash[CONFIG].judge_ledger
    node.workerinput["rag_eval_judge_ledger"] = str(ledger) if ledger else ""


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


def _parse_shard(config: pytest.Config) -> None:
    """--rag-shard, parsed once at start-up (a bad value is a usage error there)."""
    text = config.getoption("rag_shard")
    try:
        config.stash[SHARD] = Shard.parse(str(text)) if text is not None else None
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _shard(config: pytest.Config) -> Shard | None:
    return config.stash.get(SHARD, None)


def _check_tags(config: pytest.Config) -> None:
    for item in config.getoption("rag_tag"):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise pytest.UsageError(f"--rag-tag expects KEY=VALUE (e.g. --rag-tag scenario=negative), got {item!r}")


def _overrides(config: pytest.Config, spec: PipelineSpec) -> dict[str, Any]:
    """``--rag-set NAME=VALUE`` and the shortcut options: rag_app settings, checked by its
    adapter; refused for any other pipeline, where they would do nothing."""
    out: dict[str, Any] = {}
    where: dict[str, str] = {}
    for item in config.getoption("rag_set"):
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise pytest.UsageError(f"--rag-set expects NAME=VALUE (e.g. --rag-set reranker=none), got {item!r}")
        out[name.strip()] = value.strip()
        where[name.strip()] = f"--rag-set {item}"
    for option, (setting, _) in SHORTCUTS.items():
        value = config.getoption(option)
        if value is not None:
            out[setting] = value
            where[setting] = f"--{option.replace('_', '-')} {value}"
    if not out:
        return out
    # --rag-top-k means the call's top_k for every system (see EvalSession.top_k); the rest are rag_app's.
    foreign = {k: w for k, w in where.items() if k != "rerank_top_n"}
    if foreign and spec.kind != "rag_app" and spec.gold != "corpus":  # corpus gold is chunked by rag_app's settings
        raise pytest.UsageError(
            f"{', '.join(foreign.values())}: these change rag_app's settings, but the pipeline is {spec.where}; "
            "configure your own system in its own code or in [options] of the pipeline configuration"
        )
    if spec.kind != "rag_app" and not foreign:
        return out
    from rag_eval.adapters.rag_app import check_overrides

    try:
        check_overrides(out, where)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    return out


def _paths(config: pytest.Config) -> DatasetPaths:
    if PATHS not in config.stash:
        inputs = config.stash[INPUTS]
        try:
            config.stash[PATHS] = find_paths(inputs.dataset, inputs.golden, inputs.where)
        except GoldenSetError as exc:
            raise DatasetInputError(str(exc)) from None
    return config.stash[PATHS]


def _dataset(config: pytest.Config) -> Dataset:
    """The golden set and corpus, loaded once per run; a corpus-hash mismatch stops the run."""
    if DATASET not in config.stash:
        paths = _paths(config)
        cfg = config.stash[CONFIG]
        context = SystemContext(cfg.settings_overrides, cfg.project_root, paths.corpus)
        try:
            config.stash[DATASET] = load_dataset(paths, corpus_reader(cfg.pipeline, context))
        except (GoldenSetError, RagEvalError) as exc:
            raise DatasetInputError(str(exc)) from None
    return config.stash[DATASET]


def _tier_of(definition: pytest.Function | Any) -> str | None:
    tiers = [t for t in TIERS if definition.get_closest_marker(t) is not None]
    return tiers[0] if len(tiers) == 1 else None


def selected_items(config: pytest.Config, items: list[GoldenItem]) -> list[GoldenItem]:
    split = config.getoption("rag_split")
    tags = dict(t.partition("=")[::2] for t in config.getoption("rag_tag"))
    shard = _shard(config)
    return [
        i
        for i in items
        if (split == "all" or i.split == split)
        and all(str(i.tags.get(k, "")) == v for k, v in tags.items())
        and (shard is None or shard.owns(i.id))
    ]


# --- dialogue cases (issue 15) --------------------------------------------------------
def _dialogues(config: pytest.Config) -> list[DialogueItem]:
    """The run's dialogue set (``--rag-dialogues``, else dialogues.jsonl beside the golden set), loaded once."""
    if DIALOGUES not in config.stash:
        from rag_eval.dialogue.find import find_dialogue_set
        from rag_eval.dialogue.load import load_dialogue_set

        try:
            path = find_dialogue_set(_paths(config).golden, config.getoption("rag_dialogues"))
            config.stash[DIALOGUES] = load_dialogue_set(path) if path is not None else []
        except GoldenSetError as exc:  # DialogueSetError is one: file:line, field and fix
            raise DatasetInputError(str(exc)) from None
    return config.stash[DIALOGUES]


def _selected_dialogues(config: pytest.Config) -> list[DialogueItem]:
    try:
        items = _dialogues(config)
    except DatasetInputError as exc:
        raise pytest.Collector.CollectError(f"rag-eval: {exc}") from None
    return selected_items(config, items)  # type: ignore[arg-type, return-value]  # id, split and tags are all it reads


def _parametrize_dialogues(metafunc: pytest.Metafunc) -> None:
    tier = _tier_of(metafunc.definition)
    if tier not in ("dialogue", "passk"):
        raise pytest.Collector.CollectError(
            f"{metafunc.definition.nodeid}: a test using dialogue_case needs the dialogue or the passk marker"
        )
    chosen = _selected_dialogues(metafunc.config)
    metafunc.parametrize("dialogue_case", chosen, ids=[i.id for i in chosen])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not {"golden_case", "dialogue_case"} & set(metafunc.fixturenames):
        return
    if not _configured(metafunc.config):
        raise pytest.Collector.CollectError(
            f"{metafunc.definition.nodeid}: rag-eval is not configured: give --rag-golden-set FILE or "
            "--rag-dataset DIR (or the ini keys rag_eval_golden_set / rag_eval_dataset)"
        )
    if "dialogue_case" in metafunc.fixturenames:
        _parametrize_dialogues(metafunc)
        return
    # Errors here are collection errors: pytest shows a CollectError as its message
    # alone, where any other exception would come wrapped in a pluggy traceback.
    tier = _tier_of(metafunc.definition)
    if tier is None:
        raise pytest.Collector.CollectError(
            f"{metafunc.definition.nodeid}: a test using golden_case needs exactly one tier marker "
            f"({', '.join(TIERS)})"
        )
    try:
        items = _dataset(metafunc.config).items
    except DatasetInputError as exc:
        raise pytest.Collector.CollectError(f"rag-eval: {exc}") from None
    applies = TIER_APPLIES.get(tier, lambda i: True)
    chosen = [i for i in selected_items(metafunc.config, list(items)) if applies(i)]
    metafunc.parametrize("golden_case", chosen, ids=[i.id for i in chosen])


def eval_session(config: pytest.Config) -> EvalSession:
    """The per-process evaluation session (dataset, system under test, tiers), built once."""
    if SESSION not in config.stash:
        if not _configured(config):
            pytest.fail("rag-eval is not configured: give --rag-golden-set FILE or --rag-dataset DIR", pytrace=False)
        cfg = config.stash[CONFIG]
        try:
            paths = _paths(config)
            dataset = _dataset(config)  # usually loaded and hash-checked at collection already
        except DatasetInputError as exc:
            pytest.fail(f"rag-eval: {exc}", pytrace=False)
        session = EvalSession(dataclasses.replace(cfg, paths=paths))
        session.__dict__["dataset"] = dataset
        _start_system(session)
        config.stash[SESSION] = session
    return config.stash[SESSION]


@pytest.fixture(scope="session")
def rag_eval_session(pytestconfig: pytest.Config) -> EvalSession:
    """The per-process evaluation session (dataset, system under test, tiers)."""
    return eval_session(pytestconfig)


def _strict(config: pytest.Config) -> bool:
    mode = config.getoption("rag_case_failures") or config.getini("rag_eval_case_failures")
    if mode not in CASE_FAILURE_MODES:
        raise pytest.UsageError(f"rag_eval_case_failures = {mode!r}; valid: {', '.join(CASE_FAILURE_MODES)}")
    return mode == "strict"


class GoldenSetFile(pytest.File):
    """The golden set as a collector: one case per golden item per tier, collected by the
    plugin itself when no test module of the run asks for ``golden_case``."""

    def collect(self) -> Iterator[pytest.Item]:
        try:
            items = list(_dataset(self.config).items)
        except DatasetInputError as exc:
            raise pytest.Collector.CollectError(f"rag-eval: {exc}") from None
        chosen = selected_items(self.config, items)
        dialogues: list[GoldenItem | DialogueItem] = list(_selected_dialogues(self.config))
        for tier in TIERS:
            applies = TIER_APPLIES.get(tier, lambda i: True)
            cases: list[GoldenItem | DialogueItem] = [] if tier == "dialogue" else [g for g in chosen if applies(g)]
            if tier in ("dialogue", "passk"):  # passk over dialogues: k independent replays
                cases += dialogues
            for golden in cases:
                yield GoldenCase.from_parent(self, name=f"{tier}[{golden.id}]", tier=tier, golden=golden)


class GoldenCase(pytest.Item):
    """One golden item in one tier; the test id is the golden id."""

    def __init__(self, *, tier: str, golden: GoldenItem | DialogueItem, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tier = tier
        self.golden = golden
        self.add_marker(tier)

    def runtest(self) -> None:
        runner = CaseRunner(eval_session(self.config), self, strict=_strict(self.config))
        getattr(runner, self.tier)(self.golden)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, pytest.fail.Exception):
            return str(excinfo.value.msg)  # the case's own diagnosis, no traceback through the plugin
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.tier}[{self.golden.id}]"


def _golden_path(config: pytest.Config) -> Path:
    try:
        return _paths(config).golden.resolve()
    except DatasetInputError as exc:
        raise pytest.UsageError(f"rag-eval: {exc}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """No copied test files: without a test module of its own that takes ``golden_case``,
    the run gets the plugin's cases, added here before -m/-k select. A run given explicit
    paths (``pytest tests/unit``) gets them only if the golden set lies under them."""
    if not _configured(config) or any(
        {"golden_case", "dialogue_case"} & set(getattr(i, "fixturenames", ())) for i in items
    ):
        return
    if session.testsfailed:  # a module failed to collect (maybe one of the user's golden_case modules)
        return
    golden = _golden_path(config)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        given = [Path(a.split("::")[0]).resolve() for a in config.args]
        if not any(golden == g or g in golden.parents for g in given):
            return
    collector = GoldenSetFile.from_parent(session, path=golden)
    try:
        cases: list[pytest.Item | pytest.Collector] = list(collector.collect())
    except pytest.Collector.CollectError as exc:
        raise pytest.UsageError(str(exc)) from None
    # reported like any collected file, so "collected N items" counts the cases
    config.hook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, cases))
    items.extend(c for c in cases if isinstance(c, pytest.Item))


class CaseRunner:
    """What an eval test calls: runs the tier, records the result, reports the outcome.

    In ``gate`` mode a failing or erroring case is shown as xfail with its diagnosis:
    it is recorded and counted, and the gates (pass_rate, error_rate, metric gates)
    decide whether the build fails, so a known weak case does not block every pull
    request. In ``strict`` mode it fails its test.
    """

    def __init__(self, session: EvalSession, node: pytest.Item, strict: bool) -> None:  # noqa: D107
        self.session = session
        self.node = node
        self.strict = strict

    def run(self, tier: str, item: GoldenItem | DialogueItem) -> CaseResult:
        result = self.session.run_case(tier, item)
        # One JSON string: xdist's serialiser is far slower on nested dicts.
        self.node.user_properties.append((USER_PROPERTY, json.dumps(result.to_dict(), ensure_ascii=False)))
        total = self.node.config.stash.get(JUDGE_TOTAL, 0)
        if tier == "judge" and total:  # for the controller's judge progress under xdist
            self.node.user_properties.append((JUDGE_TOTAL_PROPERTY, total))
        if result.outcome == "pass":
            return result
        if result.outcome == "skip":  # e.g. the judge budget was reached: not run, not a pass
            pytest.skip(self.session.redactor.text(terminal(f"{item.id}: {result.message}")))
        if result.outcome == "error":
            text = terminal(f"[error] {item.id}: {result.message}")
        else:
            stage = f" (failed stage: {result.failed_stage})" if result.failed_stage else ""
            asked = item.opening if isinstance(item, DialogueItem) else item.question
            label = "opening" if isinstance(item, DialogueItem) else "question"
            text = terminal(f"{item.id}{stage}: {result.message}\n  {label}: {asked}")
        text = self.session.redactor.text(text)
        if not self.strict:
            # A dynamic xfail mark plus a traceback-free failure reports as xfailed;
            # pytest.xfail() builds (and discards) a full traceback: ~40 ms per case.
            self.node.add_marker(pytest.mark.xfail(reason=text, strict=False))
        pytest.fail(text, pytrace=False)

    def retrieval(self, item: GoldenItem) -> CaseResult:
        return self.run("retrieval", item)

    def deterministic(self, item: GoldenItem) -> CaseResult:
        reason = self.session.answer_skip_reason()
        if reason is not None:  # a retrieval-only system: the tier does not apply (no case, no gate), like an unset judge
            pytest.skip(terminal(f"{item.id}: {reason}"))
        return self.run("deterministic", item)

    def dialogue(self, item: DialogueItem) -> CaseResult:
        reason = self.session.dialogue_skip_reason()
        if reason is not None:  # a system without a dialogue call: every case skipped with this one reason
            pytest.skip(reason)
        return self.run("dialogue", item)

    def passk(self, item: GoldenItem | DialogueItem) -> CaseResult:
        try:
            reason = self.session.passk_skip_reason(item)
        except ValueError as exc:  # n < k: a configuration error, not a number
            raise pytest.UsageError(str(exc)) from None
        if reason is not None:
            pytest.skip(reason if isinstance(item, DialogueItem) else f"passk condition 'judge': {reason}")
        return self.run("passk", item)

    def judge(self, item: GoldenItem) -> CaseResult:
        reason = self.session.judge_skip_reason()
        if reason is not None:
            pytest.skip(reason)
        return self.run("judge", item)


@pytest.fixture
def rag_eval(rag_eval_session: EvalSession, request: pytest.FixtureRequest) -> CaseRunner:
    return CaseRunner(rag_eval_session, request.node, strict=_strict(request.config))


class CaseCollector:
    """Registered on the controller only (by ``pytest_configure``): collects each case's
    result from its test report, whichever process ran it.

    An object rather than a module-level hook because ``pytest_runtest_logreport`` gets
    no config: the state must be bound to this run, not to a global that a second run
    in the same process (pytester, an IDE) would overwrite.
    """

    def __init__(self, state: ControllerState, keep_full: bool = False, config: pytest.Config | None = None) -> None:
        self.state = state
        self.keep_full = keep_full  # --json-report asked for the cases on the reports
        self.short: dict[str, str] = {}  # nodeid -> the one-line stand-in of its case
        self.config = config
        self.judge_total = 0  # selected judge cases: a judge tier is slow (one model call each)
        self.judge_done = 0
        self.judge_t0 = 0.0
        self.warmed = False  # under xdist: the system was warmed when the first worker collected

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.judge_total = _judge_total(session)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist, on the controller, when the first worker has collected: warm the
        system here (the index build with its progress on the terminal) if the collection
        holds a case. xdist schedules no test before every worker has collected and this
        returns, so the workers load the index built here instead of each building it."""
        if self.warmed or self.config is None or self.config.option.collectonly:
            return
        self.warmed = True
        if _holds_a_case(ids, _case_ids(self.config)):
            _warm_system(self.config)

    def _judge_progress(self) -> None:
        """'judge: 40/83 cases, 1.9 cases/s, ETA 23 s' about ten times over the tier (not under -q)."""
        if self.judge_done == 1:  # before the total is known (under xdist it comes with the first case)
            self.judge_t0 = time.monotonic()
        if self.config is None or self.config.get_verbosity() < 0 or self.judge_total < JUDGE_PROGRESS_MIN:
            return
        step = max(1, self.judge_total // 10)
        if self.judge_done % step and self.judge_done != self.judge_total:
            return
        elapsed = time.monotonic() - self.judge_t0
        rate = (self.judge_done - 1) / elapsed if elapsed > 0 and self.judge_done > 1 else 0.0
        eta = f", ETA {(self.judge_total - self.judge_done) / rate:.0f} s" if rate else ""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            writer = getattr(tr, "_tw", None)  # under xdist pytest writes the outcome letters without a path
            if writer is not None and writer.width_of_current_line:
                writer.line()
            tr.write_line(f"judge: {self.judge_done}/{self.judge_total} cases, {rate:.1f} cases/s{eta}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take the case from the call report, then leave a one-line stand-in on every
        report: the full case (kilobytes of stages, context and answer) would otherwise stay
        in memory with pytest's reports and land in --junitxml as a property of every test
        (1.2 MB for the 97 demo retrieval cases). Runs first, before junitxml reads it.
        With pytest-json-report's --json-report the full case stays: that report is where
        a tool that reads it expects the per-case data."""
        for i, prop in enumerate(report.user_properties):
            name, value = prop  # a tuple here, a list after xdist's JSON round trip
            if name == JUDGE_TOTAL_PROPERTY and isinstance(value, int) and not self.judge_total:
                self.judge_total = value  # a worker's count (xdist): the controller collected nothing
            if name != USER_PROPERTY:
                continue
            if report.when == "call":
                # our own json.dumps string (CaseRunner.run); a dict is taken as it is
                case = CaseResult.from_dict(value if isinstance(value, dict) else json.loads(cast(str, value)))
                self.state.cases[case.key] = case
                if case.tier == "judge":
                    self.judge_done += 1
                    self._judge_progress()
                stage = f" at {case.failed_stage}" if case.failed_stage else ""
                self.short[report.nodeid] = terminal(f"{case.key}: {case.outcome}{stage} (details in the results file)", False)
            short = self.short.get(report.nodeid)
            if short is not None and not self.keep_full:
                report.user_properties[i] = (USER_PROPERTY, short)


def _judge_total(session: pytest.Session) -> int:
    return sum(1 for i in session.items if i.get_closest_marker("judge") is not None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a worker: how many judge cases it collected (see ``JUDGE_TOTAL``)."""
    if hasattr(session.config, "workerinput") and _configured(session.config):
        session.config.stash[JUDGE_TOTAL] = _judge_total(session)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    """After all cases ran (on the controller): aggregate, gate, write results.

    A failed gate increments ``session.testsfailed`` so pytest exits 1 even when every
    case passed (as pytest-cov does for --cov-fail-under).
    """
    _warm(session)
    try:
        result = yield
    except BaseException:
        # -x, --maxfail or Ctrl-C stopped the loop: keep what was computed, marked incomplete.
        _finish(session, complete=False)
        raise
    _finish(session, complete=True)
    return result


def _warm(session: pytest.Session) -> None:
    """On the controller, before any case of a serial run: let the system prepare (rag_app
    builds or loads its index) with its progress shown on the terminal — a cold build of a
    large corpus takes minutes, and inside a captured test it would print nothing. Under
    xdist the controller collects nothing: ``CaseCollector.pytest_xdist_node_collection_finished``
    warms instead, and the workers then load the built index from its fingerprinted cache."""
    config = session.config
    if hasattr(config, "workerinput") or not _configured(config) or config.option.collectonly:
        return
    if not any(isinstance(i, GoldenCase) or {"golden_case", "dialogue_case"} & set(getattr(i, "fixturenames", ()))
               for i in session.items):
        return
    _warm_system(config)


def _warm_system(config: pytest.Config) -> None:
    system = eval_session(config).system
    warm = getattr(system, "warm", None)
    if not callable(warm):
        return
    capman = config.pluginmanager.getplugin("capturemanager")
    show = config.get_verbosity() >= 0
    try:
        if capman is not None:
            with capman.global_and_fixture_disabled():
                warm(show)
        else:
            warm(show)
    except RagEvalError as exc:
        pytest.exit(f"rag-eval: the system could not start: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    state = config.stash.get(STATE, None)
    describe = getattr(system, "describe", None)
    if state is not None and callable(describe):
        state.warm_build = index_build(describe())


def _case_ids(config: pytest.Config) -> set[str]:
    """The golden and dialogue ids of the run: the parameters of its case items."""
    return {i.id for i in _dataset(config).items} | {d.id for d in _dialogues(config)}


def _holds_a_case(nodeids: Iterable[str], case_ids: set[str]) -> bool:
    """Whether a worker's collection holds a case: ``test_rag.py::test_retrieval[q-1]``
    or an auto-collected ``retrieval[q-1]``, parametrized by a golden or dialogue id."""
    for nodeid in nodeids:
        head, bracket, param = nodeid.rpartition("[")
        if bracket and param.endswith("]") and param[:-1] in case_ids:
            return True
    return False


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A shard that owns none of the selected items is a valid, empty part of the run
    (it wrote its empty file): exit 0, not 5, so a CI matrix job does not fail for it."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and _shard(session.config) is not None:
        session.exitstatus = pytest.ExitCode.OK


def _finish(session: pytest.Session, complete: bool) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None or session.config.option.collectonly:
        return
    sharded = _shard(session.config) is not None
    if not state.cases and not sharded:  # a shard that owns no selected item still writes its (empty) file
        return
    # Gate in one fixed order (not completion order): float sums and worst-case lists then
    # match across serial, -n N and merged sharded runs exactly.
    cases = sorted(state.cases.values(), key=lambda c: (c.tier, c.id))
    # A shard holds part of the cases: its numbers are not the run's, so the merge gates.
    gates = run_gates(state.thresholds, cases) if not sharded else []
    state.gates = gates
    run = {**_run_info(session.config, state), "complete": complete}
    # the index was built (or loaded) by the controller: its build is part of run.system
    system = {k: str(v) for k, v in state.warm_build.items()} if state.warm_build and run.get("workers") else None
    done = conclude(
        run, cases, gates, state.thresholds, state.baseline, _golden_of(session.config, cases),
        complete=complete, sharded=sharded, system=system,
    )
    results = done.results
    state.passed = done.passed
    state.regression = list(done.comparison.gates)
    if complete and not sharded:
        state.baseline_lines = baseline_lines(results)
    state.written = write_outputs(
        results,
        Outputs(
            results=state.results_path,
            report=state.report_path,
            summary=state.summary_path if complete else None,
            artifact_url=session.config.getoption("rag_artifact_url"),
            redactor=state.redactor,
        ),
    )
    _junit_properties(session.config, results, state.redactor)
    if complete and (not state.passed or state.written.problems):
        session.testsfailed += 1


def _junit_properties(config: pytest.Config, results: RunResults, redactor: Redactor) -> None:
    """With --junitxml: the verdict and each failed gate as testsuite properties, so a
    JUnit viewer shows why a run whose every case passed still failed (redacted, and
    control and bidi characters escaped: ``escape.terminal``)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - pytest moved its private module
        return
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    shown = lambda text: redactor.text(terminal(text, keep_newlines=False))  # noqa: E731
    xml.add_global_property("rag_eval_verdict", shown(results.verdict))
    for gate in results.gates:
        if not gate.passed:
            number = "n/a" if gate.value is None else f"{gate.value:.4f}"
            xml.add_global_property(
                shown(f"rag_eval_failed_gate {gate.metric}"),
                shown(f"{number} (threshold {gate.threshold}, n={gate.n})"),
            )


def _golden_of(config: pytest.Config, cases: list[CaseResult]) -> dict[str, dict[str, Any]]:
    """The golden items behind the cases, so a results file is readable on its own (reports, merges)."""
    ids = {c.id for c in cases}
    dialogues = {i.id: i.to_dict() for i in config.stash.get(DIALOGUES, []) if i.id in ids}
    return {**dialogues, **{i.id: i.to_dict() for i in _dataset(config).items if i.id in ids}}


def _run_info(config: pytest.Config, state: ControllerState) -> dict[str, Any]:
    cfg = config.stash[CONFIG]
    paths = _paths(config)
    dataset = _dataset(config)
    thresholds = state.thresholds
    return {
        "time": now_iso(),
        **git_commit(config.rootpath),
        "dataset": str(paths.root),
        "dataset_fingerprint": dataset.fingerprint,
        "corpus_hash": dataset.corpus_hash,
        "golden_set": str(paths.golden),
        "golden_sha256": file_sha256_or_none(paths.golden),
        "split": config.getoption("rag_split"),
        "tags": config.getoption("rag_tag"),
        "shard": shard.to_dict() if (shard := _shard(config)) else None,
        "overrides": dict(cfg.settings_overrides),
        "thresholds": thresholds.path if thresholds else None,
        "thresholds_sha256": thresholds.sha256 if thresholds else None,
        "workers": getattr(config.option, "numprocesses", None) or 0,
    }


JUDGE_PROGRESS_MIN = 20  # below this many judge cases pytest's own progress is enough
FAILING_SHOWN = 5  # per tier in the terminal; the report lists every case


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The gate's summary, printed after pytest's own summary and stats line, so that the
    verdict is the last thing the run prints (a CI log reader scrolls to the end)."""
    state = config.stash.get(STATE, None)
    ledger = config.stash[CONFIG].judge_ledger if _configured(config) else None
    if ledger is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(ledger, ignore_errors=True)  # the run's budget ledger: nothing to keep
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if state is None or not state.cases or tr is None or config.option.collectonly:
        return
    for line in gate_summary(config, state):
        # the one terminal writer of the gate summary: every line redacted here
        tr.write_line(state.redactor.text(line.text), red=line.tone == "fail", green=line.tone == "pass", yellow=line.tone == "warn", bold=line.bold)


def gate_summary(config: pytest.Config, state: ControllerState) -> list[Line]:
    cases = sorted(state.cases.values(), key=lambda c: (c.tier, c.id))
    out = [Line(""), Line("=" * 30 + " rag-eval gate " + "=" * 30, bold=True)]
    quiet = config.get_verbosity() < 0
    counts: dict[str, dict[str, int]] = {}
    for c in cases:
        row = counts.setdefault(c.tier, {"pass": 0, "fail": 0, "error": 0, "skip": 0})
        row[c.outcome] += 1
    for tier, row in sorted(counts.items()):
        measured = sum(1 for c in cases if c.tier == tier and c.details.get("measured_only"))
        apart = f" ({measured} negatives measured, not judged)" if measured else ""
        out.append(Line(f"{tier}: " + ", ".join(f"{v} {k}" for k, v in row.items() if v) + apart))
        if not quiet:
            out += [Line(t) for t in _failing_lines(tier, [c for c in cases if c.tier == tier])]
    judge = usage_totals(cases).get("judge")
    if judge:
        out.append(Line(
            f"judge: {int(judge.get('calls', 0))} calls ({int(judge.get('cached_calls', 0))} from cache), "
            f"{int(judge.get('prompt_tokens', 0))} prompt + {int(judge.get('completion_tokens', 0))} completion tokens, "
            f"${judge.get('cost_usd', 0.0):.4f}"
        ))
    passk = [c for c in cases if c.tier == "passk" and c.details.get("deterministic_generator")]
    if passk:
        out.append(Line(
            f"passk: the generator is deterministic, so each of {len(passk)} cases ran one trial "
            f"standing for n={passk[0].details.get('n')} (no pretend repeats)"
        ))
    out += [Line(f"WARNING: {terminal(w)}", "warn", bold=True) for w in judge_warnings(cases)]
    shard = _shard(config)
    if shard is not None:
        out.append(Line(f"shard {shard}: gates are evaluated over all shards by `python -m rag_eval merge`"))
    elif state.thresholds is None:
        out.append(Line("no thresholds file: built-in gates only (error_rate = 0 per tier that ran, at least one case "
                        "run per selected tier; create thresholds.toml or pass --rag-thresholds)"))
    gates: list[GateResult] = [*state.gates, *state.regression]
    out += summary_lines(gates, state.passed, state.baseline, bool(state.regression), state.baseline_lines, state.written)
    if shard is None:
        out.append(_verdict_line(gates, state))
    return out


def _failing_lines(tier: str, cases: list[CaseResult]) -> list[str]:
    """A count per stage, then the first few cases with their diagnosis (all in the report)."""
    bad = [c for c in cases if c.outcome in ("fail", "error")]
    if not bad:
        return []
    by_stage: dict[str, int] = {}
    for c in bad:
        by_stage[c.failed_stage or "unattributed"] = by_stage.get(c.failed_stage or "unattributed", 0) + 1
    stages = ", ".join(f"{k} {v}" for k, v in sorted(by_stage.items(), key=lambda kv: (-kv[1], kv[0])))
    out = [f"  {tier} failing or erroring: {len(bad)} — by stage: {stages}"]
    for c in bad[:FAILING_SHOWN]:
        message = c.message if len(c.message) <= 240 else c.message[:239] + "…"
        out.append(f"    {c.id} ({c.failed_stage or c.outcome}): {terminal(message, keep_newlines=False)}")
    if len(bad) > FAILING_SHOWN:
        out.append(f"    … and {len(bad) - FAILING_SHOWN} more (every case is in the report)")
    return out


def _verdict_line(gates: list[GateResult], state: ControllerState) -> Line:
    """One line, last: the verdict, the failed gates with their numbers, where the report is."""
    failed = [g for g in gates if not g.passed]
    report = f" — report: {state.written.report}" if state.written is not None and state.written.report else ""
    if not gates:
        return Line(f"rag-eval gate: no gates evaluated{report}", "warn", bold=True)
    if state.passed:
        return Line(f"rag-eval gate PASSED: {len(gates)} of {len(gates)} gates passed{report}", "pass", bold=True)
    shown = "; ".join(g.short() for g in failed[:3]) + (f"; {len(failed) - 3} more" if len(failed) > 3 else "")
    why = f" ({shown})" if failed else " (a results, report or summary file could not be written)"
    return Line(f"rag-eval gate FAILED: {len(failed)} of {len(gates)} gates failed{why}{report}", "fail", bold=True)
