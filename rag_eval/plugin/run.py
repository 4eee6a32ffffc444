"""The plugin's one per-run object, :class:`Run`, under one ``StashKey``: the run's
configuration and what is loaded from it once per process (paths, golden set, dialogue
set, the evaluation session), plus the controller on the controller process.

Kept in the config's stash, not in module globals: a module global outlives the run, so
a second pytest.main() in the same process (pytester, IDEs) would see the first run's
golden set even after the file changed.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import pytest

from rag_eval.adapters import SystemContext
from rag_eval.core.errors import ConfigError, RagEvalError
from rag_eval.dataset import Dataset, DatasetPaths, find_paths
from rag_eval.dialogue.find import find_dialogue_set
from rag_eval.dialogue.load import load_dialogue_set
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.load import GoldenSetError
from rag_eval.golden.model import GoldenItem
from rag_eval.plugin.options import RunConfig
from rag_eval.session import EvalSession, read_dataset
from rag_eval.util.heap import Heap

if TYPE_CHECKING:
    from rag_eval.plugin.ahead import Ahead
    from rag_eval.plugin.controller import Controller


class StartError(RagEvalError):
    """The system cannot start, or the thresholds name stages it lacks: a usage error at start-up."""


class DatasetInputError(Exception):
    """The dataset, golden set or selection cannot be used; the message says why and the fix."""


class Run:
    """One configured run in one process (controller or xdist worker)."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.controller: Controller | None = None  # on the controller only
        # Under xdist the controller collects nothing: a worker counts the slow (judge)
        # cases it collected (every worker collects the same items) and its cases carry it.
        self.progress_total = 0
        self.ahead: Ahead | None = None  # cases started ahead of their tests (--rag-concurrency > 1)
        self.heap = Heap()  # frozen after collection and once the system started (rag_eval.util.heap)
        self._paths: DatasetPaths | None = None
        self._dataset: Dataset | None = None
        self._dialogues: list[DialogueItem] | None = None
        self._session: EvalSession | None = None

    def paths(self) -> DatasetPaths:
        if self._paths is None:
            inputs = self.config.inputs
            try:
                self._paths = find_paths(inputs.dataset, inputs.golden, inputs.where, inputs.allow_outside)
            except GoldenSetError as exc:
                raise DatasetInputError(str(exc)) from None
        return self._paths

    def dataset(self) -> Dataset:
        """The golden set and corpus, loaded once per run; a corpus-hash mismatch stops the run."""
        if self._dataset is None:
            paths = self.paths()
            cfg = self.config.eval
            context = SystemContext(cfg.settings_overrides, cfg.project_root, paths.corpus)
            try:
                self._dataset = read_dataset(paths, cfg.pipeline, context)
            except (GoldenSetError, RagEvalError) as exc:
                raise DatasetInputError(str(exc)) from None
        return self._dataset

    def dialogues(self) -> list[DialogueItem]:
        """The run's dialogue set (``--rag-dialogues``, else dialogues.jsonl beside the golden set), loaded once."""
        if self._dialogues is None:
            try:
                path = find_dialogue_set(self.paths().golden, self.config.dialogues)
                self._dialogues = load_dialogue_set(path) if path is not None else []
            except GoldenSetError as exc:  # DialogueSetError is one: file:line, field and fix
                raise DatasetInputError(str(exc)) from None
        return self._dialogues

    def selected(self, items: list[GoldenItem] | list[DialogueItem]) -> list[GoldenItem | DialogueItem]:
        """The items of --rag-split, --rag-tag and --rag-shard (id, split and tags are all it reads)."""
        split, tags, shard = self.config.split, self.config.tag_filter, self.config.shard
        return [
            i
            for i in items
            if (split == "all" or i.split == split)
            and all(str(i.tags.get(k, "")) == v for k, v in tags.items())
            and (shard is None or shard.owns(i.id))
        ]

    def session_started(self) -> bool:
        return self._session is not None

    def session(self) -> EvalSession:
        """The per-process evaluation session (dataset, system under test, tiers), built once."""
        if self._session is None:
            try:
                paths = self.paths()
                dataset = self.dataset()  # usually loaded and hash-checked at collection already
            except DatasetInputError as exc:
                pytest.fail(f"rag-eval: {exc}", pytrace=False)
            session = EvalSession(dataclasses.replace(self.config.eval, paths=paths), dataset=dataset)
            _start_system(session)
            self._session = session
            self.heap.freeze()  # the system and its index live to the end of the run
        return self._session


RUN = pytest.StashKey[Run]()


def started_session(run: Run) -> EvalSession:
    """The run's session inside a test (a fixture): a system that cannot start ends the
    run. The controller has usually stopped it as a usage error before any case
    (``Controller.warm_system``); this is the fallback where it did not warm."""
    try:
        return run.session()
    except StartError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def run_of(config: pytest.Config) -> Run | None:
    """The run's state, or None when the plugin is inert (no dataset or golden set)."""
    return config.stash.get(RUN, None)


def _start_system(session: EvalSession) -> None:
    """Build a non-default system up front, so a factory that returns the wrong object
    stops the run with its message instead of erroring every case (:class:`StartError`:
    the controller turns it into a usage error before any case runs)."""
    try:
        session.system  # noqa: B018 - reading the property builds it (fails early)
        session.system_concurrency  # noqa: B018 - reading the property builds it (fails early)
        stages = session.stages
    except ConfigError as exc:
        raise StartError(f"rag-eval pipeline: {exc}") from None
    thresholds = session.config.thresholds
    problems = thresholds.stage_problems(stages.names) if thresholds is not None and stages is not None else []
    if problems and stages is not None:
        raise StartError(
            "rag-eval thresholds: " + "; ".join(problems) + f" — the system's stages are {', '.join(stages.names)}"
        )
