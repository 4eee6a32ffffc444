"""rag_app as one implementation of the contract (in process), and the conversions
between rag_app's records and the contract's, used by the HTTP API as well."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from rag_app.settings import Settings
from rag_app.types import ChatResult, Chunk, RetrievalResult, Source, Trace
from rag_eval.contract import Answer, Retrieval, RetrievedItem

CHUNK_METADATA: tuple[str, ...] = ("doc_id", "kind", "parent_id", "book", "section", "page_start", "page_end")


class RagAppSystem:
    """``rag_app.pipeline.RagPipeline`` behind the contract."""

    answers = True

    def __init__(self, settings: Settings, corpus_path: Path) -> None:
        from rag_app.pipeline import RagPipeline  # heavy imports only when a case runs

        self.pipeline = RagPipeline(settings, corpus_path=corpus_path)

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        return retrieval_from_rag_app(self.pipeline.retrieve(question, top_k))

    def chat(self, question: str, top_k: int | None = None, history: Sequence[Mapping[str, str]] = ()) -> Answer:
        return answer_from_rag_app(self.pipeline.chat(question, top_k, [dict(h) for h in history]))

    def describe(self) -> dict[str, Any]:
        return {"adapter": "rag_app", **asdict(self.pipeline.info)}

    @property
    def chunks(self) -> Mapping[str, Chunk]:
        return self.pipeline.index.chunks

    @property
    def documents(self) -> Sequence[Any]:
        return self.pipeline.documents


def item_from_chunk(chunk: Chunk, score: float | None = None) -> RetrievedItem:
    return RetrievedItem(chunk.chunk_id, chunk.text, score, {k: getattr(chunk, k) for k in CHUNK_METADATA})


def stages_from_trace(trace: Trace) -> dict[str, tuple[RetrievedItem, ...]]:
    """Every stage with ranked hits (the hit-less ``generation`` stage is timing only)."""
    return {
        s.name: tuple(RetrievedItem(h.chunk_id, "", h.score) for h in s.hits)
        for s in trace.stages
        if s.hits or s.name != "generation"
    }


def retrieval_from_rag_app(result: RetrievalResult) -> Retrieval:
    context = result.trace.stage("context")
    scores = {h.chunk_id: h.score for h in context.hits} if context else {}
    return Retrieval(
        items=tuple(item_from_chunk(c, scores.get(c.chunk_id, 0.0)) for c in result.context),
        stages=stages_from_trace(result.trace),
        degraded=result.degraded,
        degradation_reason=result.degradation_reason,
    )


def item_from_source(source: Source) -> RetrievedItem:
    return RetrievedItem(
        source.chunk_id,
        "",
        None,
        {"n": source.n, **{k: getattr(source, k) for k in CHUNK_METADATA if hasattr(source, k)}},
    )


def answer_from_rag_app(chat: ChatResult) -> Answer:
    context = tuple(item_from_chunk(c, 0.0) for c in chat.context_used)
    return Answer(
        answer=chat.answer,
        sources=tuple(item_from_source(s) for s in chat.sources),
        context=context,
        refused=chat.refused,
        degraded=chat.degraded,
        degradation_reason=chat.degradation_reason,
        retrieval=Retrieval(context, stages_from_trace(chat.trace), chat.degraded, chat.degradation_reason),
        generator=chat.generator,
        usage={"prompt_tokens": chat.usage.prompt_tokens, "completion_tokens": chat.usage.completion_tokens},
    )
