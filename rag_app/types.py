"""Records that cross pipeline stages: documents, chunks, ranked hits, traces, answers.

Everything here is a frozen dataclass with ``to_dict``/``from_dict`` so that it can
cross a process boundary (xdist workers, results files, the HTTP API).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping

ChunkKind = Literal["child", "parent"]
STAGES: tuple[str, ...] = ("vector", "bm25", "fused", "reranked", "context")


@dataclass(frozen=True)
class Document:
    """One source document as loaded: a Markdown book or a JSONL corpus line."""

    doc_id: str
    title: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # file the document came from, for error messages


@dataclass(frozen=True)
class Chunk:
    """A piece of a document. Children are matched; parents are returned as context.

    ``char_start``/``char_end`` are offsets into ``Document.text`` so that gold evidence
    given as a quoted span can be located in whatever chunks the current chunker made.
    """

    chunk_id: str
    doc_id: str
    text: str
    kind: ChunkKind
    parent_id: str | None
    book: str
    section: str
    page_start: int | None
    page_end: int | None
    char_start: int
    char_end: int
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["metadata"] = dict(self.metadata)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Chunk:
        return cls(**{**d, "metadata": dict(d.get("metadata") or {})})

    @property
    def pages_label(self) -> str:
        if self.page_start is None:
            return ""
        if self.page_end is None or self.page_end == self.page_start:
            return f"第{self.page_start}页"
        return f"第{self.page_start}-{self.page_end}页"


@dataclass(frozen=True)
class Hit:
    """One entry of a ranked list: rank starts at 1."""

    chunk_id: str
    score: float
    rank: int

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "score": self.score, "rank": self.rank}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Hit:
        return cls(chunk_id=str(d["chunk_id"]), score=float(d["score"]), rank=int(d["rank"]))


@dataclass(frozen=True)
class StageResult:
    """The ranked output of one stage (vector, bm25, fused, reranked, context)."""

    name: str
    hits: tuple[Hit, ...]
    seconds: float = 0.0

    @property
    def ids(self) -> list[str]:
        return [h.chunk_id for h in self.hits]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": self.seconds, "hits": [h.to_dict() for h in self.hits]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StageResult:
        return cls(
            name=str(d["name"]),
            hits=tuple(Hit.from_dict(h) for h in d.get("hits", [])),
            seconds=float(d.get("seconds", 0.0)),
        )


@dataclass(frozen=True)
class Trace:
    """Every stage's ranked ids with scores, in pipeline order, plus timings."""

    stages: tuple[StageResult, ...] = ()

    def stage(self, name: str) -> StageResult | None:
        for s in self.stages:
            if s.name == name:
                return s
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"stages": [s.to_dict() for s in self.stages]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trace:
        return cls(stages=tuple(StageResult.from_dict(s) for s in d.get("stages", [])))


@dataclass(frozen=True)
class Source:
    """A citation target, built by the system from chunk metadata (never from model prose)."""

    n: int
    chunk_id: str
    doc_id: str
    book: str
    section: str
    page_start: int | None
    page_end: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Source:
        fields: dict[str, Any] = {
            k: d.get(k) for k in ("n", "chunk_id", "doc_id", "book", "section", "page_start", "page_end")
        }
        return cls(**fields)


@dataclass(frozen=True)
class Usage:
    """Token use of one model call (zero for offline components)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class RetrievalResult:
    """What ``retrieve`` returns: the final context chunks and the trace of every stage."""

    question: str
    context: tuple[Chunk, ...]
    trace: Trace
    degraded: bool = False
    degradation_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "context": [c.to_dict() for c in self.context],
            "trace": self.trace.to_dict(),
            "degraded": self.degraded,
            "degradation_reason": self.degradation_reason,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RetrievalResult:
        return cls(
            question=str(d["question"]),
            context=tuple(Chunk.from_dict(c) for c in d.get("context", [])),
            trace=Trace.from_dict(d.get("trace", {})),
            degraded=bool(d.get("degraded", False)),
            degradation_reason=d.get("degradation_reason"),
        )


@dataclass(frozen=True)
class Sufficiency:
    """Whether the evidence was judged enough to answer, the signals it was judged on, and why.

    Made by ``rag_app.sufficiency.decide``; a signal that does not exist for this question
    (no vector hit, no key term, a question in another script than the corpus) is None.
    """

    sufficient: bool
    reason: str  # a short code: sufficient, low_score, no_vector_hit, similarity_only
    message: str  # one sentence with the numbers, for traces and logs
    language: str  # "zh" (the question has Chinese words) or "en" (it has none)
    score: float | None  # coverage + similarity_weight * (top_similarity - threshold)
    min_score: float | None
    coverage: float | None
    top_similarity: float | None
    similarity_threshold: float
    agreement: float | None = None
    rerank_top: float | None = None
    rerank_margin: float | None = None
    unseen: float | None = None
    key_terms: tuple[str, ...] = ()
    missing_terms: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key_terms"], d["missing_terms"] = list(self.key_terms), list(self.missing_terms)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sufficiency:
        return cls(**{**d, "key_terms": tuple(d.get("key_terms") or ()), "missing_terms": tuple(d.get("missing_terms") or ())})


@dataclass(frozen=True)
class ChatResult:
    """What ``chat`` returns. ``refused`` is true when the system said it has no material."""

    question: str
    answer: str
    sources: tuple[Source, ...]
    context_used: tuple[Chunk, ...]
    trace: Trace
    generator: str
    refused: bool = False
    degraded: bool = False
    degradation_reason: str | None = None
    usage: Usage = Usage()
    sufficiency: Sufficiency | None = None  # None: the check is off (settings.sufficiency)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "sources": [s.to_dict() for s in self.sources],
            "context_used": [c.to_dict() for c in self.context_used],
            "trace": self.trace.to_dict(),
            "generator": self.generator,
            "refused": self.refused,
            "degraded": self.degraded,
            "degradation_reason": self.degradation_reason,
            "usage": asdict(self.usage),
            "sufficiency": self.sufficiency.to_dict() if self.sufficiency else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChatResult:
        return cls(
            question=str(d["question"]),
            answer=str(d["answer"]),
            sources=tuple(Source.from_dict(s) for s in d.get("sources", [])),
            context_used=tuple(Chunk.from_dict(c) for c in d.get("context_used", [])),
            trace=Trace.from_dict(d.get("trace", {})),
            generator=str(d.get("generator", "")),
            refused=bool(d.get("refused", False)),
            degraded=bool(d.get("degraded", False)),
            degradation_reason=d.get("degradation_reason"),
            usage=Usage(**(d.get("usage") or {})),
            sufficiency=Sufficiency.from_dict(d["sufficiency"]) if d.get("sufficiency") else None,
        )
