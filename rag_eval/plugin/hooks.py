"""pytest wiring: golden items become cases; thresholds.toml gates the run.

Hooks only: each reads the run's one state object (:class:`rag_eval.plugin.run.Run`,
one ``StashKey``) and hands on. Workers compute cases and send each ``CaseResult`` to the
controller on the test report (``user_properties``, one JSON string; a serial run hands
the case over in process: ``CaseRunner.inbox``); aggregation,
gating and writing results happen once, on the controller
(:class:`rag_eval.plugin.controller.Controller`), so ``pytest -n 2`` gives exactly the
numbers of a serial run. The only package of rag_eval that imports pytest.
"""

from __future__ import annotations

import signal
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from rag_eval import tiers
from rag_eval.plugin.ahead import Ahead
from rag_eval.plugin.collect import add_golden_set_cases, parametrize, progress_count, runner
from rag_eval.plugin.controller import CONTROLLER_PLUGIN, Controller
from rag_eval.plugin.options import add_options, add_tier_options, read_config
from rag_eval.plugin.run import RUN, Run, run_of, started_session
from rag_eval.plugin.runner import CaseRunner
from rag_eval.plugin.terminal import write_summary
from rag_eval.session import EvalSession, run_redactor
from rag_eval.util.redact import install_log_redaction

GOLDEN_MARKER = "golden set validation: schema, ids, gold traceability, split hygiene"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    add_options(parser)
    _PARSERS[pluginmanager] = parser


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """A conftest that registered a tier of its own: that tier's options join the command line
    (the rootdir's conftests load before the command line is read)."""
    parser = _PARSERS.get(manager)
    if parser is not None:
        add_tier_options(parser)


_PARSERS: weakref.WeakKeyDictionary[pytest.PytestPluginManager, pytest.Parser] = weakref.WeakKeyDictionary()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--rag-grid GRID.toml``: the grid's jobs (each its own pytest run) and the comparison,
    instead of this run's tests; the exit code is the grid command's."""
    grid = config.getoption("rag_grid", None)
    if not grid:
        return None
    from rag_eval.grid.command import from_pytest

    return from_pytest(str(grid))


def pytest_configure(config: pytest.Config) -> None:
    for tier in tiers.all_tiers():
        config.addinivalue_line("markers", f"{tier.name}: {tier.marker}")
    config.addinivalue_line("markers", f"golden: {GOLDEN_MARKER}")
    run_config = read_config(config)
    if run_config is None:
        # inert: a user's unrelated test run gets no extra output, files or gates; but a run
        # that names a system and no golden set evaluates nothing, and says so
        config.pluginmanager.register(NoGoldenSet(config), "rag_eval_no_golden_set")
        return
    run = Run(run_config)
    config.stash[RUN] = run
    config.add_cleanup(run.heap.release)
    # every log record of the run redacted (httpcore logs headers a server may echo the key in),
    # on the controller and on each xdist worker
    config.add_cleanup(install_log_redaction(run_redactor(run_config.eval.pipeline)))
    if not hasattr(config, "workerinput"):
        run.controller = Controller(run, config)
        config.pluginmanager.register(run.controller, CONTROLLER_PLUGIN)
        config.pluginmanager.register(run.controller.gate_failures, CONTROLLER_PLUGIN + "_lastfailed")
        _sigterm_as_interrupt(config)


class NoGoldenSet:
    """A system named (--rag-pipeline, --rag-pipeline-config or the ini key) and no golden
    set: one line at the end naming the options, when the system was named on the
    command line or when nothing ran (an unrelated test run of a repository whose ini names
    a system stays quiet)."""

    def __init__(self, config: pytest.Config) -> None:
        given = [
            o for o in ("--rag-pipeline", "--rag-pipeline-config") if config.getoption(o.lstrip("-").replace("-", "_"))
        ]
        ini = [k for k in ("rag_eval_pipeline", "rag_eval_pipeline_config") if config.getini(k)]
        self.named = given or ini
        self.explicit = bool(given)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if not self.named or not (self.explicit or exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED):
            return
        terminalreporter.write_line(
            f"rag-eval: {' and '.join(self.named)} name a system under test, but no golden set is given, so "
            "nothing was evaluated: give --rag-golden-set FILE or --rag-dataset DIR (or the ini keys "
            "rag_eval_golden_set / rag_eval_dataset)",
            yellow=True,
            bold=True,
        )


def _sigterm_as_interrupt(config: pytest.Config) -> None:
    """SIGTERM (a CI runner's cancel or its own timeout) stops the run as Ctrl-C does: the
    cases done are written as an incomplete run, with the report and JUnit. A second SIGTERM
    ends the process at once. A handler someone else installed is left alone."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        return

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, stop)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    config.add_cleanup(restore)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, on the controller: hand each worker what the tiers give it (`Tier.worker_input`: the judge ledger)."""
    run = run_of(node.config)
    if run is None:
        return
    for tier in tiers.all_tiers():
        node.workerinput.update(tier.worker_input(run.config.eval))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize(metafunc)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    add_golden_set_cases(session, config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """On a worker: how many slow (judge) cases it collected (the controller collects none).
    In every process: the collected items live to the end, out of the collector's scans."""
    run = run_of(session.config)
    if run is not None and hasattr(session.config, "workerinput"):
        run.progress_total = progress_count(session)
    if run is not None:
        run.heap.freeze()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Before each test: start the next cases' model and service calls (rag_eval.plugin.ahead)."""
    run = run_of(item.config)
    if run is not None and run.config.eval.concurrency > 1 and run.session_started():
        if run.ahead is None:
            run.ahead = Ahead(item.session, run.config.eval.concurrency)
        run.ahead.top_up(run.session(), item, nextitem)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    """After all cases ran (on the controller): aggregate, gate, write results.

    A failed gate increments ``session.testsfailed`` so pytest exits 1 even when every
    case passed (as pytest-cov does for --cov-fail-under).
    """
    run = run_of(session.config)
    controller = run.controller if run is not None else None
    if controller is not None:
        controller.warm(session)
    try:
        result = yield
    except BaseException:
        # -x, --maxfail or Ctrl-C stopped the loop: keep what was computed, marked incomplete.
        _stop_ahead(run)
        if controller is not None:
            controller.finish(session, complete=False)
        raise
    _stop_ahead(run)
    if controller is not None:
        controller.finish(session, complete=True)
    return result


def _stop_ahead(run: Run | None) -> None:
    if run is not None and run.ahead is not None:
        run.ahead.stop()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A shard that owns none of the selected items is a valid, empty part of the run
    (it wrote its empty file): exit 0, not 5, so a CI matrix job does not fail for it.
    ``--sw`` stopping at a failing case is a failed run (1), not an interrupted one (2)."""
    run = run_of(session.config)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and run is not None and run.config.shard is not None:
        session.exitstatus = pytest.ExitCode.OK
    stepwise = session.config.getoption("stepwise", False)
    if (
        run is not None
        and stepwise
        and exitstatus == pytest.ExitCode.INTERRUPTED
        and session.shouldstop
        and session.testsfailed
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The gate's summary, printed after pytest's own summary and stats line."""
    run = run_of(config)
    if run is None:
        return
    if not hasattr(config, "workerinput"):  # the controller: what the tiers made for the run
        for tier in tiers.all_tiers():
            tier.close(run.config.eval)
    if run.controller is not None:
        write_summary(config, run.controller)


@pytest.fixture(scope="session")
def rag_eval_session(pytestconfig: pytest.Config) -> EvalSession:
    """The per-process evaluation session (dataset, system under test, tiers)."""
    run = run_of(pytestconfig)
    if run is None:
        pytest.fail("rag-eval is not configured: give --rag-golden-set FILE or --rag-dataset DIR", pytrace=False)
    return started_session(run)


@pytest.fixture
def rag_eval(rag_eval_session: EvalSession, request: pytest.FixtureRequest) -> CaseRunner:
    return runner(request.config, request.node)
