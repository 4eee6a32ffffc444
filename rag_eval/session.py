"""One evaluation run in one process: the dataset, the system under test, and how
each tier turns a golden item into a ``CaseResult``.

Built lazily: collection only reads the golden set; the index is built (or loaded
from its fingerprinted cache) when the first case runs, once per process.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

from rag_eval.dialogue.records import DialogueTurn
from rag_eval.records import AnswerRecord, RetrievalRecord, Trace
from rag_eval.dialogue.model import DialogueItem
from rag_eval.dataset import Dataset, DatasetPaths, load_dataset
from rag_eval.evaluate.deterministic import DeterministicCaseConfig, evaluate_deterministic
from rag_eval.evaluate.retrieval import RetrievalCaseConfig, evaluate_retrieval
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup, ResolvedGold
from rag_eval.adapters import PipelineSpec, SystemContext, build_system, corpus_chunker, corpus_reader
from rag_eval.adapters.gold import GoldSpace
from rag_eval.stages import StageSpec, infer_stages
from rag_eval.contract import Answer, Retrieval, SystemUnderTest, as_answer, as_retrieval
from rag_eval.redact import Redactor, run_secrets
from rag_eval.results.case import CaseResult
from rag_eval.evaluate.judge import JudgeCaseConfig
from rag_eval.judge import DEEPEVAL_DEFAULT_METRICS
from rag_eval.judge.config import JudgeConfig
from rag_eval.gates.thresholds import Thresholds


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
    judge: JudgeConfig | None = None
    judge_ledger: Path | None = None
    geval_criteria: str | None = None
    deepeval_metrics: tuple[str, ...] = DEEPEVAL_DEFAULT_METRICS
    passk_n: int | None = None  # command-line overrides of [passk.case] n / k
    passk_k: int | None = None
    pipeline: PipelineSpec = PipelineSpec("rag_app")  # which system, and how gold meets its ids


class EvalSession:
    def __init__(self, config: EvalConfig, system_factory: Callable[[], SystemUnderTest] | None = None):
        self.config = config
        self._factory = system_factory or (lambda: build_system(config.pipeline, self.context))
        self._chats: dict[str, Any] = {}

    @cached_property
    def context(self) -> SystemContext:
        return SystemContext(self.config.settings_overrides, self.config.project_root, self.config.paths.corpus)

    @cached_property
    def dataset(self) -> Dataset:
        return load_dataset(self.config.paths, corpus_reader(self.config.pipeline, self.context))

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
        mode built from the dataset corpus as rag_app chunks it: no index, no system call."""
        spec = self.config.pipeline
        docs = self.dataset.documents
        chunker = corpus_chunker(spec, self.context)
        chunks = chunker(docs) if chunker is not None and docs else []
        return GoldSpace(spec.gold, docs, chunks, spec.id_map, self.stages, spec.text_max_item_chars)

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
        """rag_app reads --rag-top-k from its settings (rerank_top_n); any other system gets it
        as the call's top_k, so the option means the same thing for every adapter."""
        if self.config.top_k is not None or self.config.pipeline.kind == "rag_app":
            return self.config.top_k
        value = self.config.settings_overrides.get("rerank_top_n")
        return int(value) if value is not None else None

    def retrieve(self, question: str) -> RetrievalRecord:
        """The system's retrieval as the tiers score it (contract records -> rag_eval records)."""
        raw = self.system.retrieve(question, self.top_k)
        return self.gold_space.retrieval_result(question, redacted(as_retrieval(raw), self.redactor))

    def answer(self, item: GoldenItem) -> AnswerRecord:
        """One fresh answer (no memo), converted for the tiers."""
        raw = self.system.chat(item.question, self.top_k, item.history)
        return self.gold_space.chat_result(item.question, redacted(as_answer(raw), self.redactor))

    def _rules(self, tier: str) -> tuple[dict[str, Any], dict[str, float]]:
        if self.config.thresholds is None:
            return {}, {}
        rules = self.config.thresholds.case_rules(tier)
        return dict(rules.options), dict(rules.floors)

    def retrieval_config(self) -> RetrievalCaseConfig:
        options, floors = self._rules("retrieval")
        extra = self.config.thresholds.metric_names("retrieval") if self.config.thresholds else set()
        base = RetrievalCaseConfig()
        metrics = tuple(dict.fromkeys(base.metrics + tuple(sorted(extra))))
        return RetrievalCaseConfig(
            require=options.get("require", base.require),
            metrics=metrics,
            case_min=floors,
            negative=options.get("negative", base.negative),
        )

    def run_case(self, tier: str, item: GoldenItem | DialogueItem) -> CaseResult:
        """Run one case; any exception becomes an ``error`` outcome, never a pass.

        A ``DialogueItem`` runs in the ``dialogue`` tier (one replay) or the ``passk`` tier
        (k independent replays); see ``rag_eval.session_dialogue``."""
        t0 = time.perf_counter()
        try:
            if isinstance(item, DialogueItem):
                result = self.dialogues.run(tier, item, t0)
            elif tier == "retrieval":
                result = self._retrieval(item, t0)
            elif tier == "deterministic":
                result = self._deterministic(item, t0)
            elif tier == "judge":
                result = self._judge(item)
            elif tier == "passk":
                result = self._passk(item, t0)
            else:
                raise ValueError(f"unknown tier {tier!r}")
        except Exception as exc:  # noqa: BLE001 - every failure of the system is recorded, not raised
            return CaseResult(
                id=item.id,
                tier=tier,
                outcome="error",
                failed_stage="error",
                message=self.redactor.text(f"{type(exc).__name__}: {exc}"),
                tags=dict(item.tags),
                split=item.split,
                negative=getattr(item, "is_negative", False),
                duration=time.perf_counter() - t0,
                details={"traceback": self.redactor.text(traceback.format_exc(limit=8))[-4000:], "system": self._safe_info()},
            )
        return result

    @cached_property
    def dialogues(self) -> Any:
        """The dialogue tier of this session (``rag_eval.session_dialogue.DialogueTier``)."""
        from rag_eval.session_dialogue import DialogueTier

        return DialogueTier(self)

    def dialogue_skip_reason(self) -> str | None:
        """Why the dialogue tier cannot run (the system has no dialogue call), or None."""
        return self.dialogues.skip_reason()

    def _safe_info(self) -> dict[str, Any]:
        try:
            return self.system_info
        except Exception:  # noqa: BLE001 - the system itself failed to start
            return {}

    def _retrieval(self, item: GoldenItem, t0: float) -> CaseResult:
        result = self.retrieve(item.question)
        gold = self.gold(item, _returned(result.trace))
        case = evaluate_retrieval(
            item,
            gold,
            result,
            doc_of=self.doc_of,
            kind_of=self.kind_of,
            config=self.retrieval_config(),
            spec=self.stage_spec(result.trace),
            duration=time.perf_counter() - t0,
        )
        return _with_system(case, self.system_info)

    def _deterministic(self, item: GoldenItem, t0: float) -> CaseResult:
        reason = self.answer_skip_reason()
        if reason is not None:
            return CaseResult(
                id=item.id, tier="deterministic", outcome="skip", message=reason, tags=dict(item.tags),
                split=item.split, negative=item.is_negative, duration=time.perf_counter() - t0,
            )
        options, _ = self._rules("deterministic")
        chat = self.chat(item)
        gold = self.gold(item, _returned(chat.trace))
        case = evaluate_deterministic(
            item,
            gold,
            chat,
            doc_of=self.doc_of,
            kind_of=self.kind_of,
            config=DeterministicCaseConfig(skip_checks=tuple(options.get("skip_checks", ()))),
            spec=self.stage_spec(chat.trace),
            citations=self.config.pipeline.citations,
            duration=time.perf_counter() - t0,
        )
        return _with_system(case, self.system_info)


    def judge_skip_reason(self) -> str | None:
        """Why the judge tier cannot run here (one sentence naming what to set), or None."""
        if self.config.judge is None:
            return "judge not configured"
        return self.answer_skip_reason() or self.config.judge.missing_reason()

    @cached_property
    def judge_runner(self) -> Any:
        from rag_eval.judge.tier import JudgeRunner  # the openai client only when judging

        assert self.config.judge is not None
        return JudgeRunner(
            self.config.judge, self.config.judge_ledger, self.config.geval_criteria, self.config.deepeval_metrics
        )

    def chat(self, item: GoldenItem) -> Any:
        """The system's answer to an item, once per process: the deterministic and the
        judge tier grade the same answer instead of paying for a second generation."""
        if item.id not in self._chats:
            self._chats[item.id] = self.answer(item)
        return self._chats[item.id]

    def _judge(self, item: GoldenItem) -> CaseResult:
        chat = self.chat(item)
        _, floors = self._rules("judge")
        case = self.judge_runner.run(item, chat, JudgeCaseConfig(floors))
        return _with_system(case, self.system_info)


    def passk_settings(self) -> tuple[int, int, str]:
        options, _ = self._rules("passk")
        n = self.config.passk_n or int(options.get("n", 5))
        k = self.config.passk_k or int(options.get("k", 3))
        if n < k:
            raise ValueError(f"passk: n = {n} trials < k = {k}: pass@k needs at least k trials (configuration error)")
        return n, k, str(options.get("condition", "deterministic"))

    def passk_skip_reason(self, item: GoldenItem | DialogueItem | None = None) -> str | None:
        if isinstance(item, DialogueItem):
            return self.dialogue_skip_reason()
        _, _, condition = self.passk_settings()
        return self.answer_skip_reason() or (self.judge_skip_reason() if condition == "judge" else None)

    def _passk(self, item: GoldenItem, t0: float) -> CaseResult:
        """n independent trials of the stochastic stages; one trial when nothing is stochastic."""
        from rag_eval.evaluate.passk import TrialOutcome, passk_case

        n, k, condition = self.passk_settings()
        _, floors = self._rules("passk")
        deterministic = bool(self.system_info.get("generator_deterministic")) and condition == "deterministic"
        trials: list[TrialOutcome] = []
        for trial in range(1 if deterministic else n):
            # A fresh generation per trial (no memo, no shared cache entry: the judge keys its
            # cache by trial index), so trials are independent draws.
            chat = self.answer(item)
            if condition == "judge":
                case = self.judge_runner.run(item, chat, JudgeCaseConfig(floors), trial=trial, tier="passk")
            else:
                case = evaluate_deterministic(
                    item, self.gold(item, _returned(chat.trace)), chat, self.doc_of, self.kind_of, DeterministicCaseConfig(),
                    spec=self.stage_spec(chat.trace), citations=self.config.pipeline.citations,
                )
            trials.append(TrialOutcome(trial, case.outcome, case.failed_stage, case.message, chat.answer))
        usage = self.judge_runner.usage_for(item.id, "passk") if condition == "judge" else None
        case = passk_case(
            item, trials, n=n, k=k, deterministic=deterministic, duration=time.perf_counter() - t0, usage=usage
        )
        return _with_system(case, self.system_info)


def run_redactor(pipeline: PipelineSpec, env: Mapping[str, str] = os.environ) -> Redactor:
    """One redactor for the run: every secret of the environment (``redact.run_secrets``)
    plus the HTTP adapter's header values (the Dify key is one of them)."""
    extra = pipeline.http.secrets if pipeline.http is not None else ()
    return Redactor(run_secrets(env, extra))


Record = TypeVar("Record", Retrieval, Answer, DialogueTurn)


def redacted(record: Record, redactor: Redactor) -> Record:
    """A system's retrieval or answer (texts, sources, context, reasons) with every secret
    removed: the session boundary, so no rag_eval record downstream (cases, judge prompts,
    caches, outputs) holds a key a system echoed."""
    if not redactor:
        return record
    data = record.to_dict()
    clean = redactor.obj(data)
    return record if clean == data else type(record).from_dict(clean)


def _returned(trace: Trace) -> list[str]:  # noqa: D103 - every id the system gave for a case
    return [h.chunk_id for s in trace.stages for h in s.hits]


INDEX_BUILD_KEYS = ("index_built", "embeddings_computed", "embeddings_cached")


def index_build(info: Mapping[str, Any]) -> dict[str, Any]:
    """What a process's index build did, where the system's description says it."""
    return {k: info[k] for k in INDEX_BUILD_KEYS if k in info}


def _with_system(case: CaseResult, info: Mapping[str, Any]) -> CaseResult:
    from dataclasses import replace

    short = {
        k: info.get(k)
        for k in (
            "adapter", "endpoint", "gold", "index_fingerprint", "vector_store", "embedder", "reranker", "generator",
            "info_error",  # the HTTP adapter could not read the service's description: say so in run.system
        )
    }
    # what this process's index build did (rag_app): only where the system says so
    short.update(index_build(info))
    return replace(case, details={**case.details, "system": short})
