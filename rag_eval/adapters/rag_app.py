"""rag_app as one system under test, in process: the only module of rag_eval (with
``rag_app_corpus``) that imports rag_app.

It declares rag_app's stages (no ``reranked`` stage when the reranker is ``none``),
turns rag_app's records into the contract's, and turns the errors a user can fix
(bad settings, an unreachable service) into rag_eval's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from functools import cached_property
from pathlib import Path
from typing import Any

from rag_eval.core.contract import Answer, Retrieval, RetrievedItem
from rag_eval.core.dialogue import DialogueTurn, as_dialogue_turn
from rag_eval.core.errors import ConfigError, ServiceError
from rag_eval.core.records import Chunk as EvalChunk
from rag_eval.core.records import Document as EvalDocument
from rag_eval.core.stages import StageSpec

try:
    from rag_app.errors import ConfigError as AppConfigError
    from rag_app.errors import RagAppError
    from rag_app.settings import Settings, coerce
    from rag_app.types import ChatResult, Chunk, Document, RetrievalResult, Source, Trace
except ImportError as exc:  # the demo's dependencies are an extra
    raise ConfigError(
        f"the rag_app pipeline needs the demo extra ({exc.name} is not installed): pip install 'rag-eval-gate[demo]'"
    ) from None

# What each item carries to the framework; pages_label is rag_app's own display label (第3-4页).
CHUNK_METADATA: tuple[str, ...] = (
    "doc_id",
    "kind",
    "parent_id",
    "book",
    "section",
    "page_start",
    "page_end",
    "pages_label",
)
#: rag_app's stages: two retrievers side by side, RRF fusion, the reranker, the truncated context.
STAGES = StageSpec((("vector", "bm25"), ("fused",), ("reranked",), ("context",)), final="context", thresholded="vector")


@contextlib.contextmanager
def translated(where: str = "rag_app") -> Iterator[None]:
    """rag_app's user-fixable errors as rag_eval's (the plugin reports those at start-up)."""
    try:
        yield
    except AppConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from exc
    except RagAppError as exc:
        raise ServiceError(f"{where}: {exc}" if where else str(exc)) from exc


def load_settings(overrides: Mapping[str, Any], project_root: Path | None, corpus: Path | None) -> Settings:
    """rag_app's settings: pyproject [tool.rag_app] < env < the run's overrides; a relative
    cache_dir from the project file or env is relative to the project root."""
    values = dict(overrides)
    if corpus is not None:
        values = {"corpus_path": str(corpus), **values}
    with translated("rag_app settings"):
        settings = Settings.load(pyproject=project_root / "pyproject.toml" if project_root else None, overrides=values)
    if project_root is not None and "cache_dir" not in overrides and not Path(settings.cache_dir).is_absolute():
        settings = settings.replace(cache_dir=str(project_root / settings.cache_dir))
    return settings


def check_overrides(overrides: Mapping[str, str], where: Mapping[str, str]) -> None:
    """Every ``--rag-set NAME=VALUE`` names a rag_app setting with a valid value."""
    if "corpus_path" in overrides:  # it would be applied to the index but not to the gold
        raise ConfigError(
            f"{where.get('corpus_path', '--rag-set corpus_path=...')}: the corpus is the dataset's "
            "(its corpus/, corpus.jsonl or *.md); point --rag-dataset at another dataset instead"
        )
    with translated(""):
        for name, value in overrides.items():
            coerce(name, value, where.get(name, f"--rag-set {name}={value}"))
    with translated("pipeline setting override"):
        Settings().replace(**dict(overrides))


class RagAppSystem:
    """``rag_app.pipeline.RagPipeline`` behind the contract."""

    answers = True
    # One call at a time: the pipeline's index, caches and model clients are not made for
    # threads (the plugin may still overlap the judge's calls with it).
    concurrency = 1

    def __init__(self, overrides: Mapping[str, Any], project_root: Path | None, corpus: Path | None) -> None:
        self.settings = load_settings(overrides, project_root, corpus)

    @property
    def stages(self) -> StageSpec:
        return STAGES.without("reranked") if self.settings.reranker == "none" else STAGES

    def warm(self, show_progress: bool) -> None:
        """Build (or load) the index now, with rag_app's progress bar on stderr when asked
        (the plugin calls this on the controller, outside pytest's capture, before cases run)."""
        import os

        before = os.environ.get("RAG_PROGRESS")
        if before is None:
            os.environ["RAG_PROGRESS"] = "on" if show_progress else "off"
        try:
            self.pipeline  # noqa: B018 - reading the property builds it (fails early)
        finally:
            if before is None:
                os.environ.pop("RAG_PROGRESS", None)

    @cached_property
    def pipeline(self) -> Any:
        from rag_app.pipeline import RagPipeline  # heavy imports only when a case runs

        with translated():
            return RagPipeline(self.settings, corpus_path=self.settings.corpus_path)

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        with translated():
            result = self.pipeline.retrieve(question, top_k)
        return retrieval_from_rag_app(result, self.stages)

    def chat(self, question: str, top_k: int | None = None, history: Sequence[Mapping[str, str]] = ()) -> Answer:
        with translated():
            result = self.pipeline.chat(question, top_k, [dict(h) for h in history])
        return answer_from_rag_app(result, self.stages)

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> DialogueTurn:
        """rag_app's tutor: clarify / answer with layered hints / state limits, one turn."""
        with translated():
            turn = self.pipeline.dialogue([dict(t) for t in turns], dict(context))
        raw = turn.to_dict()
        retrieval = raw.get("retrieval")
        if isinstance(retrieval, Mapping) and isinstance(retrieval.get("stages"), Mapping):
            names = set(self.stages.names)  # the declared stages only (no rerank stage with reranker none)
            raw["retrieval"] = {**retrieval, "stages": {k: v for k, v in retrieval["stages"].items() if k in names}}
        return as_dialogue_turn(raw, "rag_app dialogue()")

    def describe(self) -> dict[str, Any]:
        return {"adapter": "rag_app", **asdict(self.pipeline.info)}

    # --- the local corpus, as rag_app reads and chunks it (gold = "corpus") -------------
    def corpus_documents(self, path: Path) -> tuple[EvalDocument, ...]:
        from rag_app.corpus import load_corpus

        with translated("corpus"):
            docs = load_corpus(path)
        return tuple(document_record(d) for d in docs)

    def corpus_chunks(self, documents: Sequence[EvalDocument]) -> list[EvalChunk]:
        """The chunks rag_app makes of the corpus with these settings (no embedding)."""
        from rag_app.corpus import ChunkConfig, chunk_documents

        app_docs = [Document(d.doc_id, d.title, d.text, d.metadata, d.source) for d in documents]
        with translated("chunking"):
            chunks = chunk_documents(app_docs, ChunkConfig.from_settings(self.settings))
        return [chunk_record(c) for c in chunks]


def document_record(doc: Document) -> EvalDocument:
    return EvalDocument(doc.doc_id, doc.title, doc.text, dict(doc.metadata), doc.source)


def chunk_record(c: Chunk) -> EvalChunk:
    return EvalChunk(
        c.chunk_id,
        c.doc_id,
        c.text,
        c.kind,
        c.parent_id,
        c.book,
        c.section,
        c.page_start,
        c.page_end,
        c.char_start,
        c.char_end,
        dict(c.metadata),
        c.pages_label,
    )


def item_from_chunk(chunk: Chunk, score: float | None = None) -> RetrievedItem:
    return RetrievedItem(chunk.chunk_id, chunk.text, score, {k: getattr(chunk, k) for k in CHUNK_METADATA})


def stages_from_trace(trace: Trace, spec: StageSpec) -> dict[str, tuple[RetrievedItem, ...]]:
    """The declared stages of the trace (the hit-less ``generation`` stage is timing only)."""
    return {
        s.name: tuple(RetrievedItem(h.chunk_id, "", h.score) for h in s.hits)
        for s in trace.stages
        if s.name in spec.names
    }


def stage_ms_from_trace(trace: Trace) -> dict[str, float]:
    """rag_app times every stage it runs (vector search, BM25, fusion, rerank, truncation to
    the context budget, generation): each stage's seconds as milliseconds."""
    return {s.name: s.seconds * 1000.0 for s in trace.stages}


def retrieval_from_rag_app(result: RetrievalResult, spec: StageSpec = STAGES) -> Retrieval:
    context = result.trace.stage("context")
    scores = {h.chunk_id: h.score for h in context.hits} if context else {}
    return Retrieval(
        items=tuple(item_from_chunk(c, scores.get(c.chunk_id, 0.0)) for c in result.context),
        stages=stages_from_trace(result.trace, spec),
        degraded=result.degraded,
        degradation_reason=result.degradation_reason,
        stage_ms=stage_ms_from_trace(result.trace),
    )


def item_from_source(source: Source) -> RetrievedItem:
    return RetrievedItem(
        source.chunk_id,
        "",
        None,
        {"n": source.n, **{k: getattr(source, k) for k in CHUNK_METADATA if hasattr(source, k)}},
    )


def answer_from_rag_app(chat: ChatResult, spec: StageSpec = STAGES) -> Answer:
    context = tuple(item_from_chunk(c, 0.0) for c in chat.context_used)
    return Answer(
        answer=chat.answer,
        sources=tuple(item_from_source(s) for s in chat.sources),
        context=context,
        refused=chat.refused,
        degraded=chat.degraded,
        degradation_reason=chat.degradation_reason,
        retrieval=Retrieval(context, stages_from_trace(chat.trace, spec), chat.degraded, chat.degradation_reason),
        generator=chat.generator,
        usage={"prompt_tokens": chat.usage.prompt_tokens, "completion_tokens": chat.usage.completion_tokens},
        stage_ms=stage_ms_from_trace(chat.trace),
    )
