"""One evaluation run in one process: the dataset, the system under test, the gold space,
redaction and the answer memo; ``run_case`` hands each case to its registered tier.

Built lazily: collection only reads the golden set; the index is built (or loaded
from its fingerprinted cache) when the first case runs, once per process.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, cast

from rag_eval import tiers
from rag_eval.adapters import (
    PipelineSpec,
    SystemContext,
    build_system,
    corpus_chunker,
    corpus_reader,
    pin_reader,
    rehash_options,
)
from rag_eval.adapters.gold import GoldSpace
from rag_eval.adapters.gold_check import GoldCheck, gold_ids, system_ids, unheld
from rag_eval.core.case import CaseResult
from rag_eval.core.contract import Answer, Retrieval, SystemUnderTest, as_answer, as_retrieval, describe_scalars
from rag_eval.core.dialogue import DialogueTurn
from rag_eval.core.errors import ConfigError
from rag_eval.core.records import AnswerRecord, RetrievalRecord, Trace
from rag_eval.core.stages import StageSpec, infer_stages
from rag_eval.dataset import Dataset, DatasetPaths, load_dataset
from rag_eval.gates.thresholds import Thresholds
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup, ResolvedGold
from rag_eval.tiers import Item, Tier
from rag_eval.util.redact import Redactor, run_secrets


@dataclass(frozen=True)
class EvalConfig:
    """What one evaluation run measures.

    ``project_root``: where ``pyproject.toml`` ([tool.rag_app]) is read from, and what a
    relative ``cache_dir`` from that file or the environment is relative to. None means
    the current directory (as ``rag_app`` itself does). The pytest plugin passes its
    rootdir, so running pytest from a subdirectory measures the same pipeline.
    """

    paths: DatasetPaths
    settings_overrides: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Thresholds | None = None
    top_k: int | None = None
    project_root: Path | None = None
    # Each tier's command-line values (``Tier.read_options``) by tier name.
    tier_args: Mapping[str, Any] = field(default_factory=dict)
    case_timeout: float | None = None  # --rag-case-timeout: seconds one case may take (None: no limit)
    concurrency: int = 1  # --rag-concurrency: cases run ahead at once in this process (1: one at a time)
    pipeline: PipelineSpec = field(kw_only=True)  # which system, and how gold meets its ids: no default


Record = TypeVar("Record", Retrieval, Answer, DialogueTurn)
T = TypeVar("T")


def read_dataset(paths: DatasetPaths, spec: PipelineSpec, context: SystemContext) -> Dataset:
    """The golden set and its corpus as a run of ``spec`` reads them; a pin made as
    ``corpus-hash`` reads the corpus by default is the same corpus (``load_dataset``)."""
    return load_dataset(paths, corpus_reader(spec, context), pinned_by=pin_reader(context), rehash=rehash_options(spec))


class EvalSession:
    """The system, the gold space, redaction and the answer memo of one process; the
    tiers (``rag_eval.tiers``) run the cases on it."""

    def __init__(
        self,
        config: EvalConfig,
        system_factory: Callable[[], SystemUnderTest] | None = None,
        dataset: Dataset | None = None,
    ):
        """``dataset``: already loaded (the plugin loads it at collection), else loaded on first use."""
        self.config = config
        self._dataset = dataset
        self._factory = system_factory or (lambda: build_system(config.pipeline, self.context))
        self._chats: dict[str, AnswerRecord] = {}
        self._chat_locks: dict[str, threading.Lock] = {}
        self._memo: dict[str, Any] = {}
        # Cases may run on several threads (rag_eval.plugin.prefetch): the memo builds a value
        # once, each item's answer is generated once, and the system gets at most
        # ``system_concurrency`` calls at a time.
        self._lock = threading.RLock()
        self._held: dict[int, int] = {}  # thread -> system slots it holds (calling, abandon)

    @cached_property
    def context(self) -> SystemContext:
        return SystemContext(self.config.settings_overrides, self.config.project_root, self.config.paths.corpus)

    @cached_property
    def dataset(self) -> Dataset:
        if self._dataset is not None:
            return self._dataset
        return read_dataset(self.config.paths, self.config.pipeline, self.context)

    @cached_property
    def redactor(self) -> Redactor:
        """Every secret of the run (see :func:`run_redactor`)."""
        return run_redactor(self.config.pipeline)

    @cached_property
    def system(self) -> SystemUnderTest:
        return self._factory()

    @cached_property
    def stages(self) -> StageSpec | None:
        """The stages the pipeline configuration or the system declares (None: inferred per case)."""
        declared = self.config.pipeline.stages
        return declared if declared is not None else getattr(self.system, "stages", None)

    @cached_property
    def gold_space(self) -> GoldSpace:
        """Gold and system output in one id space (see rag_eval.adapters.gold). In corpus
        mode built from the dataset corpus as the system chunks it (its kind's CorpusView):
        no index, no system call."""
        spec = self.config.pipeline
        docs = self.dataset.documents
        chunker = corpus_chunker(spec, self.context)
        chunks = chunker(docs) if chunker is not None and docs else []
        return GoldSpace(spec.gold, docs, chunks, spec.id_map, self.stages, spec.text_max_item_chars)

    @cached_property
    def gold_check(self) -> GoldCheck:
        """Every gold chunk id looked up in the system once (where it can look ids up;
        see rag_eval.adapters.gold_check); corpus mode checks gold against the corpus."""
        spec = self.config.pipeline
        chunks, docs = gold_ids(self.dataset.items)
        if spec.gold == "corpus":
            return GoldCheck(None, frozenset(), active=False)
        if not chunks or not getattr(self.system, "can_lookup", False):
            return GoldCheck(None, chunks | docs)
        ids = sorted({i for mapped in system_ids(chunks, spec.id_map).values() for i in mapped})
        look = self.system.lookup  # type: ignore[attr-defined]  # optional in the contract: can_lookup says so
        held = self.calling(lambda: look(ids))
        return GoldCheck(unheld(chunks, spec.id_map, held), chunks | docs)

    @property
    def lookup(self) -> ChunkLookup:
        return self.gold_space.lookup

    @property
    def doc_of(self) -> dict[str, str]:
        return self.gold_space.doc_of

    @property
    def kind_of(self) -> dict[str, str]:
        return self.gold_space.kind_of

    @cached_property
    def system_info(self) -> dict[str, Any]:
        return {**self.config.pipeline.describe(), **self.system.describe()}

    def gold(self, item: GoldenItem, returned: Iterable[str] = ()) -> ResolvedGold:
        """``returned``: every id the system gave for this case (the ids and text modes
        resolve against them; corpus mode ignores them)."""
        return self.gold_space.resolve(item, returned)

    def stage_spec(self, trace: Trace) -> StageSpec:
        """The declared stages, or the ones this case's trace has, in its order."""
        return self.stages if self.stages is not None else infer_stages(s.name for s in trace.stages)

    def answer_skip_reason(self) -> str | None:
        """Why the answer tiers cannot run (a retrieval-only system), or None."""
        if getattr(self.system, "answers", True):
            return None
        return (
            f"the system under test ({self.config.pipeline.where}) is retrieval-only: it has no chat endpoint or "
            "method, so the answer tiers (deterministic, judge, passk) do not apply"
        )

    @property
    def top_k(self) -> int | None:
        """The call's top_k (EvalConfig.top_k, set by --rag-top-k), the same for every
        adapter; None: the system's own default (rag_app: its rerank_top_n setting)."""
        return self.config.top_k

    @cached_property
    def system_concurrency(self) -> int:
        """How many calls the system takes at once: what it declares (``concurrency``; an
        in-process object that says nothing takes one at a time), at most the run's."""
        declared = getattr(self.system, "concurrency", None)
        if declared is None:
            return 1
        if isinstance(declared, bool) or not isinstance(declared, int) or declared < 1:
            raise ConfigError(
                f"{self.config.pipeline.where}: concurrency = {declared!r}; the system's `concurrency` "
                "is how many of its calls may run at once: a whole number >= 1 (1: not thread-safe)"
            )
        return min(declared, self.config.concurrency)

    @cached_property
    def _system_slots(self) -> threading.BoundedSemaphore:
        return threading.BoundedSemaphore(self.system_concurrency)

    def calling(self, call: Callable[[], T]) -> T:
        """``call()`` of the system, holding one of its ``system_concurrency`` slots."""
        slots = self._system_slots
        slots.acquire()
        me = threading.get_ident()
        with self._lock:
            self._held[me] = self._held.get(me, 0) + 1
        try:
            return call()
        finally:
            with self._lock:
                mine = self._held.get(me, 0)
                if mine:  # not given back by abandon()
                    self._held[me] = mine - 1
                    slots.release()

    def abandon(self, thread: int | None) -> None:
        """A case past ``--rag-case-timeout`` is left running on ``thread``: the system slots
        it holds are given back, so the cases after it do not wait for it too."""
        with self._lock:
            held = self._held.pop(thread, 0) if thread is not None else 0
        for _ in range(held):
            self._system_slots.release()

    def warm(self) -> None:
        """Build on this thread what the tiers read lazily, before cases run on others."""
        for value in (
            lambda: self.system_info,
            lambda: self.stages,
            lambda: self.gold_space,
            lambda: self.gold_check,
            lambda: self.redactor,
            lambda: self._system_slots,
        ):
            value()
        for tier in tiers.all_tiers():
            self.tier_options(tier)
        # Not the judge runner: it imports the openai SDK (~1 s), which a run whose selected
        # tests never judge must not pay; memo() builds it once, under its lock, on the
        # thread of the first case that judges (each tier's first case runs alone).

    def retrieve(self, question: str) -> RetrievalRecord:
        """The system's retrieval as the tiers score it (contract records -> rag_eval records)."""
        raw = self.calling(lambda: self.system.retrieve(question, self.top_k))
        return self.gold_space.retrieval_result(question, redacted(as_retrieval(raw), self.redactor))

    def answer(self, item: GoldenItem) -> AnswerRecord:
        """One fresh answer (no memo), converted for the tiers."""
        raw = self.calling(lambda: self.system.chat(item.question, self.top_k, item.history))
        return self.gold_space.chat_result(item.question, redacted(as_answer(raw), self.redactor))

    def redacted(self, record: Record) -> Record:
        """A system's record with every secret of the run removed (see :func:`redacted`)."""
        return redacted(record, self.redactor)

    # --- the tiers ------------------------------------------------------------------------
    def run_case(self, tier: str, item: Item) -> CaseResult:
        """Run one case in a registered tier; any exception becomes an ``error`` outcome, never a pass."""
        t0 = time.perf_counter()
        try:
            limit = self.config.case_timeout
            if limit is None:
                return tiers.get(tier).run(self, item)
            return within(limit, lambda: tiers.get(tier).run(self, item), self.abandon)
        except Exception as exc:  # noqa: BLE001 - every failure of the system is recorded, not raised
            return tiers.errored(item, tier, exc, self, t0)

    def skip_reason(self, tier: str, item: Item) -> str | None:
        """Why a case of this tier does not run on this system (its test is skipped), or None."""
        return tiers.get(tier).skip_reason(self, item)

    def tier_options(self, tier: Tier) -> Any:
        """The tier's ``[<tier>.case]`` options with their defaults, read once per session."""
        return self.memo(f"options.{tier.name}", lambda: tier.options(self.config))

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """A value the session keeps for its tiers (a client, options), built on first use."""
        if key not in self._memo:
            with self._lock:
                if key not in self._memo:
                    self._memo[key] = build()
        return cast(T, self._memo[key])

    def memoized(self, key: str) -> Any:
        """What :meth:`memo` keeps under ``key``, or None when it was never built."""
        return self._memo.get(key)

    def safe_info(self) -> dict[str, Any]:
        """The system's description, or {} when the system itself failed to start."""
        try:
            return self.system_info
        except Exception:  # noqa: BLE001 - the system itself failed to start
            return {}

    def with_system(self, case: CaseResult) -> CaseResult:
        """The case with the system's short description under ``details.system``."""
        return _with_system(case, self.system_info)

    def chat(self, item: GoldenItem) -> AnswerRecord:
        """The system's answer to an item, once per process: the deterministic and the
        judge tier grade the same answer instead of paying for a second generation."""
        if item.id not in self._chats:
            with self._lock:
                lock = self._chat_locks.setdefault(item.id, threading.Lock())
            with lock:  # two tiers' cases of one item on two threads: one generation
                if item.id not in self._chats:
                    self._chats[item.id] = self.answer(item)
        return self._chats[item.id]


class CaseTimeout(Exception):
    """A case outlived ``--rag-case-timeout``: recorded as its ``error``."""


def within(limit: float, call: Callable[[], T], abandon: Callable[[int | None], None] | None = None) -> T:
    """``call()``, or :class:`CaseTimeout` once it has run ``limit`` seconds.

    The call runs in a daemon thread: Python cannot stop a thread, so a call past the limit
    goes on in the background (its result is dropped) while the next cases run, and ends
    with the process; ``abandon(thread)`` is told, so it gives back what that call holds (the
    system's call slot). A system that cannot take a second call meanwhile errors those
    too, which the results then show."""
    box: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=target, name="rag-eval-case", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        if abandon is not None:
            abandon(worker.ident)
        raise CaseTimeout(
            f"the case took longer than --rag-case-timeout {limit:g} s and was abandoned; "
            "raise the limit, or make the system answer faster (e.g. shorter questions)"
        )
    if failure:
        raise failure[0]
    return box[0]


def run_redactor(pipeline: PipelineSpec, env: Mapping[str, str] = os.environ) -> Redactor:
    """One redactor for the run: every secret of the environment (``redact.run_secrets``)
    plus the HTTP adapter's header values (the Dify key is one of them)."""
    extra = pipeline.http.secrets if pipeline.http is not None else ()
    return Redactor(run_secrets(env, extra))


def redacted(record: Record, redactor: Redactor) -> Record:
    """A system's retrieval or answer (texts, sources, context, reasons) with every secret
    removed: the session boundary, so no rag_eval record downstream (cases, judge prompts,
    caches, outputs) holds a key a system echoed."""
    if not redactor:
        return record
    data = record.to_dict()
    clean = redactor.obj(data)
    return record if clean == data else type(record).from_dict(clean)


def _with_system(case: CaseResult, info: Mapping[str, Any]) -> CaseResult:
    """The case with what the system says of itself under ``details.system``: every
    scalar of its description (nested mappings as dotted keys), so a baseline
    comparison shows a changed top_k or component, not only the documented keys."""
    short: dict[str, Any] = {k: info.get(k) for k in SYSTEM_KEYS}
    short.update(describe_scalars(info))
    return dataclasses.replace(case, details={**case.details, "system": short})


#: always present in ``details.system`` (null when the system does not say): the keys the
#: framework's own layers write (the spec's adapter and gold, an endpoint, the answers'
#: generator, a description that could not be read); every other key is the adapter's
#: ``describe()``, as it reports it
SYSTEM_KEYS: tuple[str, ...] = (
    "adapter",
    "endpoint",
    "gold",
    "generator",
    "info_error",  # the HTTP adapter could not read the service's description: say so in run.system
)
