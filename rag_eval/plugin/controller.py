"""The controller (the process that runs pytest's session, not an xdist worker): takes
each case from its test report, warms the system before the cases, and at the end of the
loop aggregates, gates and writes the results, once.

An object registered as a plugin rather than module-level hooks because
``pytest_runtest_logreport`` gets no config: the state must be bound to this run, not to
a global that a second run in the same process (pytester, an IDE) would overwrite.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import pytest

from rag_eval import tiers
from rag_eval.adapters import kinds
from rag_eval.core.case import USER_PROPERTY, CaseResult
from rag_eval.core.errors import RagEvalError
from rag_eval.gates.gate import run_gates
from rag_eval.gates.result import GateResult
from rag_eval.labels.compare import LabelReport, compare_labels
from rag_eval.outputs import writers
from rag_eval.outputs.write import write_outputs
from rag_eval.plugin.collect import CASE_FIXTURES, GoldenCase, progress_count
from rag_eval.plugin.junit import write_junit
from rag_eval.plugin.lastfailed import GateModeFailures
from rag_eval.plugin.run import DatasetInputError, Run, StartError
from rag_eval.plugin.runner import HANDED_OVER, PROGRESS_TOTAL_PROPERTY
from rag_eval.plugin.terminal import Progress
from rag_eval.results.baseline import BaselineError
from rag_eval.results.build import ResultsWriteError, file_sha256_or_none, git_commit, now_iso
from rag_eval.results.finalize import Baseline, Outputs, Written, baseline_lines, conclude
from rag_eval.results.model import RunResults
from rag_eval.session import EvalConfig, run_redactor
from rag_eval.util.escape import terminal
from rag_eval.util.heap import paused
from rag_eval.util.redact import Redactor

CONTROLLER_PLUGIN = "rag_eval_controller"


class Controller:
    """What the controller accumulates during the run, and the hooks that feed it."""

    def __init__(self, run: Run, config: pytest.Config) -> None:
        self.run = run
        self.pytest_config = config
        self.baseline = _baseline(run)
        self.redactor: Redactor = run_redactor(run.config.eval.pipeline)  # every secret of the run: every output
        self.cases: dict[str, CaseResult] = {}
        self.gates: list[GateResult] = []
        self.regression: list[GateResult] = []
        self.baseline_lines: list[str] = []
        self.passed = True
        self.written: Written | None = None
        self.label_report: LabelReport | None = None  # with --rag-human-labels, at finish
        self._evidence: dict[str, Any] | None = None  # run.evidence_pending, computed once at finish
        self.complete = True  # False: -x, --maxfail, Ctrl-C or SIGTERM stopped the loop
        self.write_error: str | None = None  # the results file could not be written: why
        # What the controller's warm-up build did (index_built, embeddings_computed, ...): under
        # xdist the workers only load the index it built, so their cases would say "not built".
        self.warm_build: dict[str, Any] = {}
        self.short: dict[str, str] = {}  # nodeid -> the one-line stand-in of its case
        # A serial run's cases, handed over in this process by the test (CaseRunner.run)
        # instead of as JSON on the report: nodeid -> its cases in the order the test ran
        # them (a test may run several), see pytest_runtest_logreport.
        self.inbox: dict[str, list[CaseResult]] = {}
        self.progress = Progress(config)
        self.warmed = False  # under xdist: the system was warmed when the first worker collected
        self.gate_failures = GateModeFailures(config)  # --lf in gate mode (registered with the controller)

    # --- hooks (registered on the controller only) ------------------------------------------
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.progress.total = progress_count(session)
        self.check_keyword_subset([i.nodeid for i in session.items], stop=True)

    def check_keyword_subset(self, nodeids: list[str], stop: bool) -> None:
        """A ``-k`` subset against a full baseline is refused like a ``--rag-tag`` subset
        (other cases, numbers not comparable; not "16 removed"): a usage error in ``error``
        mode, else the run goes on without the comparison and says why. Under xdist the
        controller learns the selection only when the workers have collected (``stop``
        False): the comparison is then left out in either mode, with the reason."""
        keyword = self.pytest_config.option.keyword
        baseline = self.baseline
        if not keyword or baseline is None or baseline.data is None or self.pytest_config.option.collectonly:
            return
        missing = _unselected(nodeids, self._selected_ids())
        if not missing:
            return
        why = (
            f"the baseline ran every selected case but this run selects {missing} fewer with -k {keyword!r}: "
            "other cases, numbers not comparable; run without -k to compare, or compare a -k run with a -k baseline"
        )
        if stop and self.run.config.baseline_mismatch == "error":
            raise pytest.UsageError(f"--rag-baseline {baseline.path}: {why} (or --rag-baseline-mismatch warn)")
        self.baseline = Baseline(baseline.path, None, f"baseline {baseline.path} not compared: {why}")

    def _selected_ids(self) -> tuple[set[str], set[str]]:
        """The golden and the dialogue ids of the run's --rag-split/--rag-tag/--rag-shard selection."""
        golden = {i.id for i in self.run.selected(list(self.run.dataset().items))}
        return golden, {d.id for d in self.run.selected(self.run.dialogues())}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist, on the controller, when the first worker has collected: warm the
        system here (the index build with its progress on the terminal) if the collection
        holds a case. xdist schedules no test before every worker has collected and this
        returns, so the workers load the index built here instead of each building it."""
        if self.warmed or self.pytest_config.option.collectonly:
            return
        self.warmed = True
        self.check_keyword_subset(ids, stop=False)
        if _holds_a_case(ids, self._case_ids()):
            self.warm_system()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Take the case from the call report, then leave a one-line stand-in on every
        report: the full case (kilobytes of stages, context and answer) would otherwise stay
        in memory with pytest's reports and land in --junitxml as a property of every test
        (1.2 MB for the 97 demo retrieval cases). Runs first, before junitxml reads it.
        With pytest-json-report's --json-report the full case stays: that report is where
        a tool that reads it expects the per-case data."""
        if report.when == "call":
            for case in self._cases_of(report):
                self._take(report.nodeid, case)
        for i, prop in enumerate(report.user_properties):
            name, value = prop  # a tuple here, a list after xdist's JSON round trip
            if name == PROGRESS_TOTAL_PROPERTY and isinstance(value, int) and not self.progress.total:
                self.progress.total = value  # a worker's count (xdist): the controller collected nothing
            if name != USER_PROPERTY:
                continue
            short = self.short.get(report.nodeid)
            if short is not None and not self.run.config.keep_full:
                report.user_properties[i] = (USER_PROPERTY, short)

    def _cases_of(self, report: pytest.TestReport) -> list[CaseResult]:
        """The cases of a call report: a worker's as JSON strings on the report (a dict is
        taken as it is), a serial run's from the inbox. Every case the test ran since the
        last call report is in the inbox; the report may also carry the stand-ins of an
        earlier run of the same item (a rerun keeps the item's properties), so the inbox,
        not the count of stand-ins, says which cases are new."""
        cases = self.inbox.pop(report.nodeid, [])
        for name, value in report.user_properties:
            if name == USER_PROPERTY and value != HANDED_OVER:
                cases.append(CaseResult.from_dict(value if isinstance(value, dict) else json.loads(cast(str, value))))
        return cases

    def _take(self, nodeid: str, case: CaseResult) -> None:
        self.cases[case.key] = case
        if case.tier in tiers.names() and tiers.get(case.tier).progress:
            self.progress.case_done()
        if case.outcome in ("fail", "error"):
            self.gate_failures.failing.add(nodeid)
        stage = f" at {case.failed_stage}" if case.failed_stage else ""
        self.short[nodeid] = terminal(f"{case.key}: {case.outcome}{stage} (details in the results file)", False)

    # --- before and after the loop ------------------------------------------------------------
    def warm(self, session: pytest.Session) -> None:
        """Before any case of a serial run: let the system prepare (rag_app builds or loads
        its index) with its progress shown on the terminal — a cold build of a large corpus
        takes minutes, and inside a captured test it would print nothing. Under xdist the
        controller collects nothing: ``pytest_xdist_node_collection_finished`` warms instead,
        and the workers then load the built index from its fingerprinted cache."""
        if self.pytest_config.option.collectonly:
            return
        if any(isinstance(i, GoldenCase) or CASE_FIXTURES & set(getattr(i, "fixturenames", ())) for i in session.items):
            self.warm_system()

    def warm_system(self) -> None:
        """Start and warm the system before any case; one that cannot start is a usage
        error said in one line (``ERROR: ...``), not a traceback or an ``Exit`` banner."""
        try:
            system = self.run.session().system
        except StartError as exc:
            raise pytest.UsageError(str(exc)) from None
        warm = getattr(system, "warm", None)
        if not callable(warm):
            return
        capman = self.pytest_config.pluginmanager.getplugin("capturemanager")
        show = self.pytest_config.get_verbosity() >= 0
        try:
            if capman is not None:
                with capman.global_and_fixture_disabled():
                    warm(show)
            else:
                warm(show)
        except RagEvalError as exc:
            raise pytest.UsageError(f"rag-eval: the system could not start: {exc}") from None
        describe = getattr(system, "describe", None)
        if callable(describe):
            self.warm_build = kinds.process_state(self.run.session().config.pipeline.kind, describe())

    def finish(self, session: pytest.Session, complete: bool) -> None:
        """Aggregate, gate and write the outputs; a failed gate fails the session. The
        garbage collector pauses meanwhile (rag_eval.util.heap: a burst of short-lived objects)."""
        if self.pytest_config.option.collectonly:
            return
        with paused():
            self._finish(session, complete)

    def _finish(self, session: pytest.Session, complete: bool) -> None:
        sharded = self.run.config.shard is not None
        if not self.cases and not sharded:  # a shard that owns no selected item still writes its (empty) file
            return
        results = self._results(complete, sharded)
        self.complete = complete
        cfg = self.run.config
        outputs = Outputs(
            results=cfg.results_path,
            report=cfg.report_path,
            summary=cfg.summary_path if complete else None,
            artifact_url=cfg.artifact_url,
            redactor=self.redactor,
        )
        try:
            self.written = write_outputs(results, outputs)
        except ResultsWriteError as exc:  # disk full, no permission: a failed run said in one line, not INTERNALERROR
            self.write_error = self.redactor.text(str(exc))
            self.passed = False
        # the results every writer rendered; redacted here only when the results file failed first
        shown = self.written.shown if self.written is not None and self.written.shown is not None else None
        write_junit(self.pytest_config, shown or writers.redacted(results, self.redactor), self.write_error)
        if self.write_error is not None or (
            complete and (not self.passed or self.written is None or self.written.problems)
        ):
            session.testsfailed += 1

    def _results(self, complete: bool, sharded: bool) -> RunResults:
        # Gate in one fixed order (not completion order): float sums and worst-case lists then
        # match across serial, -n N and merged sharded runs exactly.
        cases = self.sorted_cases()
        thresholds = self.run.config.thresholds
        # A shard holds part of the cases: its numbers are not the run's, so the merge gates.
        labels = self.run.config.labels
        # labels against the whole run's judge: a shard holds part of it (the merge has no labels)
        self.label_report = (
            compare_labels(labels, {"cases": [c.to_dict() for c in cases]})
            if labels is not None and not sharded
            else None
        )
        self.gates = run_gates(thresholds, cases, self.label_report) if not sharded else []
        info = {**self._run_info(), "complete": complete}
        pending = self.evidence_pending(cases)
        if pending is not None:
            info["evidence_pending"] = pending
        # the index was built (or loaded) by the controller: its build is part of run.system
        system = {k: str(v) for k, v in self.warm_build.items()} if self.warm_build and info.get("workers") else None
        done = conclude(
            info,
            cases,
            self.gates,
            thresholds,
            self.baseline,
            self._golden_of(cases),
            complete=complete,
            sharded=sharded,
            system=system,
        )
        self.passed = done.passed
        self.regression = list(done.comparison.gates)
        if complete and not sharded:
            self.baseline_lines = baseline_lines(done.results)
        if self.label_report is not None:
            return dataclasses.replace(done.results, labels=self.label_report.to_dict())
        return done.results

    def evidence_pending(self, cases: list[CaseResult]) -> dict[str, Any] | None:
        """``run.evidence_pending``: how many non-gold chunks the run showed await review, how many
        were decided, the command that lists them (docs/golden-sets.md#keeping-gold-true); None for
        a shard or a run whose session never started. Computed once: the terminal and the report agree."""
        if self._evidence is not None:
            return self._evidence
        if self.run.config.shard is not None or not self.run.session_started():
            return None
        from rag_eval.authoring.evidence import awaiting_review

        session = self.run.session()
        items = {i.id: i for i in session.dataset.items}
        found = awaiting_review([c.to_dict() for c in cases], items, session.lookup)
        self._evidence = {
            "count": len(found.candidates),
            "decided": found.decided,
            "command": f"python -m rag_eval evidence {self.run.config.results_path}",
        }
        return self._evidence

    def sorted_cases(self) -> list[CaseResult]:
        return sorted(self.cases.values(), key=lambda c: (c.tier, c.id))

    def _case_ids(self) -> set[str]:
        """The golden and dialogue ids of the run: the parameters of its case items."""
        return {i.id for i in self.run.dataset().items} | {d.id for d in self.run.dialogues()}

    def _golden_of(self, cases: list[CaseResult]) -> dict[str, dict[str, Any]]:
        """The golden items behind the cases, so a results file is readable on its own (reports, merges)."""
        ids = {c.id for c in cases}
        dialogues = {i.id: i.to_dict() for i in self.run.dialogues() if i.id in ids}
        return {**dialogues, **{i.id: i.to_dict() for i in self.run.dataset().items if i.id in ids}}

    def _run_info(self) -> dict[str, Any]:
        cfg = self.run.config
        paths = self.run.paths()
        dataset = self.run.dataset()
        thresholds = cfg.thresholds
        return {
            "time": now_iso(),
            **git_commit(self.pytest_config.rootpath),
            "dataset": str(paths.root),
            "dataset_fingerprint": dataset.fingerprint,
            "corpus_hash": dataset.corpus_hash,
            "golden_set": str(paths.golden),
            "golden_sha256": file_sha256_or_none(paths.golden),
            "split": cfg.split,
            "tags": list(cfg.tags),
            "shard": cfg.shard.to_dict() if cfg.shard else None,
            "overrides": _overrides(cfg.eval),
            "thresholds": thresholds.path if thresholds else None,
            "thresholds_sha256": thresholds.sha256 if thresholds else None,
            "workers": getattr(self.pytest_config.option, "numprocesses", None) or 0,
            "system_state": kinds.state_keys_of(cfg.eval.pipeline.kind),
        }


def _overrides(cfg: EvalConfig) -> dict[str, Any]:
    """The settings the run changed: --rag-set's, and --rag-top-k as ``top_k``."""
    return {**cfg.settings_overrides, **({"top_k": cfg.top_k} if cfg.top_k is not None else {})}


def _baseline(run: Run) -> Baseline | None:
    """Load --rag-baseline at start-up, so a wrong or incomparable file stops the run before it costs anything."""
    cfg = run.config
    if cfg.baseline_path is None:
        return None
    try:
        dataset = run.dataset()
    except DatasetInputError as exc:
        raise pytest.UsageError(f"rag-eval: {exc}") from None
    current = {
        "dataset_fingerprint": dataset.fingerprint,
        "dataset": str(dataset.paths.root),
        "golden_sha256": dataset.golden_sha256,
        "split": cfg.split,
        "tags": list(cfg.tags),
    }
    try:
        return Baseline.load(Path(cfg.baseline_path), current, cfg.baseline_mismatch)
    except BaselineError as exc:
        raise pytest.UsageError(f"--rag-baseline: {exc}") from None


def _params(nodeids: Iterable[str]) -> set[str]:
    """The parameters of parametrized node ids: ``test_rag.py::test_retrieval[q-1]`` -> ``q-1``."""
    out: set[str] = set()
    for nodeid in nodeids:
        head, bracket, param = nodeid.rpartition("[")
        if bracket and param.endswith("]"):
            out.add(param[:-1])
    return out


def _unselected(nodeids: Iterable[str], selected: tuple[set[str], set[str]]) -> int:
    """How many golden (or dialogue) ids of the selection have no case among ``nodeids``,
    counted for each kind of which at least one case was collected (-m picks tiers, not cases)."""
    collected = _params(nodeids)
    return sum(len(ids - collected) for ids in selected if ids & collected)


def _holds_a_case(nodeids: Iterable[str], case_ids: set[str]) -> bool:
    """Whether a worker's collection holds a case: ``test_rag.py::test_retrieval[q-1]``
    or an auto-collected ``retrieval[q-1]``, parametrized by a golden or dialogue id."""
    return bool(_params(nodeids) & case_ids)
