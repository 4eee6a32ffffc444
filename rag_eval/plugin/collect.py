"""Collection: golden and dialogue items become cases, one per item per tier (the test id
is the item id), either through a test module's ``golden_case`` / ``dialogue_case``
parameters or, without such a module, through the plugin's own :class:`GoldenSetFile`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_eval import tiers
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import GoldenItem
from rag_eval.plugin.run import DatasetInputError, Run, run_of, started_session
from rag_eval.plugin.runner import CaseRunner

CASE_FIXTURES = frozenset({"golden_case", "dialogue_case"})
NOT_CONFIGURED = (
    "rag-eval is not configured: give --rag-golden-set FILE or --rag-dataset DIR "
    "(or the ini keys rag_eval_golden_set / rag_eval_dataset)"
)


def tier_of(definition: pytest.Function | Any) -> str | None:
    marked = [t for t in tiers.names() if definition.get_closest_marker(t) is not None]
    return marked[0] if len(marked) == 1 else None


def _golden(run: Run) -> list[GoldenItem]:
    # Errors here are collection errors: pytest shows a CollectError as its message
    # alone, where any other exception would come wrapped in a pluggy traceback.
    try:
        return list(run.dataset().items)
    except DatasetInputError as exc:
        raise pytest.Collector.CollectError(f"rag-eval: {exc}") from None


def _dialogues(run: Run) -> list[DialogueItem]:
    try:
        return run.dialogues()
    except DatasetInputError as exc:
        raise pytest.Collector.CollectError(f"rag-eval: {exc}") from None


def parametrize(metafunc: pytest.Metafunc) -> None:
    """``pytest_generate_tests``: a test taking ``golden_case`` or ``dialogue_case`` gets one
    case per selected item its tier (its one tier marker) takes."""
    fixtures = CASE_FIXTURES & set(metafunc.fixturenames)
    if not fixtures:
        return
    run = run_of(metafunc.config)
    if run is None:
        raise pytest.Collector.CollectError(f"{metafunc.definition.nodeid}: {NOT_CONFIGURED}")
    tier = tier_of(metafunc.definition)
    if "dialogue_case" in fixtures:
        takes = [t.name for t in tiers.all_tiers() if DialogueItem in t.items]
        if tier not in takes:
            raise pytest.Collector.CollectError(
                f"{metafunc.definition.nodeid}: a test using dialogue_case needs one of the markers {', '.join(takes)}"
            )
        chosen = run.selected(_dialogues(run))
        metafunc.parametrize("dialogue_case", chosen, ids=[i.id for i in chosen])
        return
    if tier is None:
        raise pytest.Collector.CollectError(
            f"{metafunc.definition.nodeid}: a test using golden_case needs exactly one tier marker "
            f"({', '.join(tiers.names())})"
        )
    applies = tiers.get(tier).applies
    picked = [i for i in run.selected(_golden(run)) if applies(i)]
    metafunc.parametrize("golden_case", picked, ids=[i.id for i in picked])


class GoldenSetFile(pytest.File):
    """The golden set as a collector: one case per golden item per tier, collected by the
    plugin itself when no test module of the run asks for ``golden_case``."""

    def collect(self) -> Iterator[pytest.Item]:
        run = run_of(self.config)
        assert run is not None
        items = [*run.selected(_golden(run)), *run.selected(_dialogues(run))]
        for tier in tiers.all_tiers():  # passk takes dialogues too: k independent replays
            for golden in [i for i in items if tier.applies(i)]:
                name = f"{tier.name}[{golden.id}]"
                yield GoldenCase.from_parent(
                    self, name=name, tier=tier.name, golden=golden, **_case_id(self, tier.name, golden.id)
                )


def _case_id(parent: pytest.File, tier: str, golden_id: str) -> dict[str, Any]:
    """The case's node id as pytest parses a parametrized one (``tier`` with params
    ``golden_id``), where pytest has structured node ids (9+): ``--lf`` and ``--sw`` read
    ``evals/golden.jsonl::retrieval[q05]`` back from the cache in that form, and a plain
    name ``retrieval[q05]`` would never match it. Older pytest compares the strings."""
    structured = getattr(parent, "id", None)
    if structured is None or not hasattr(structured, "child"):
        return {}
    return {"nodeid": structured.child(tier).with_params(golden_id)}


class GoldenCase(pytest.Item):
    """One golden item in one tier; the test id is the golden id."""

    def __init__(self, *, tier: str, golden: GoldenItem | DialogueItem, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tier = tier
        self.golden = golden
        self.add_marker(tier)

    def runtest(self) -> None:
        runner(self.config, self).case(self.tier, self.golden)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, pytest.fail.Exception):
            return str(excinfo.value.msg)  # the case's own diagnosis, no traceback through the plugin
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.tier}[{self.golden.id}]"


def runner(config: pytest.Config, node: pytest.Item) -> CaseRunner:
    run = run_of(config)
    if run is None:
        pytest.fail(NOT_CONFIGURED, pytrace=False)
    # A serial run hands the case to the controller in this process; --json-report keeps
    # the full case on the report, where that report's readers expect it.
    inbox = run.controller.inbox if run.controller is not None and not run.config.keep_full else None
    return CaseRunner(
        started_session(run),
        node,
        strict=run.config.strict,
        progress_total=run.progress_total,
        ahead=run.ahead.prefetcher if run.ahead is not None else None,
        inbox=inbox,
    )


def add_golden_set_cases(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """No copied test files: without a test module of its own that takes ``golden_case``,
    the run gets the plugin's cases, added before -m/-k select. A run given explicit
    paths (``pytest tests/unit``) gets them only if the golden set lies under them."""
    run = run_of(config)
    if run is None or any(CASE_FIXTURES & set(getattr(i, "fixturenames", ())) for i in items):
        return
    if session.testsfailed:  # a module failed to collect (maybe one of the user's golden_case modules)
        return
    try:
        golden = run.paths().golden.resolve()
    except DatasetInputError as exc:
        raise pytest.UsageError(f"rag-eval: {exc}") from None
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


def progress_count(session: pytest.Session) -> int:
    """The collected cases of the slow tiers (``Tier.progress``: the judge)."""
    slow = [t.name for t in tiers.all_tiers() if t.progress]
    return sum(1 for i in session.items if any(i.get_closest_marker(t) is not None for t in slow))
