"""The records the evaluation scores: documents, returned items, ranked stage lists,
answers, sources, usage.

``rag_eval`` owns these. A system under test returns the contract's shapes
(:mod:`rag_eval.core.contract`); :mod:`rag_eval.adapters.gold` turns them into these records
in the gold's id space, and the tiers score nothing else. Nothing here knows which
system produced a record: stage names, id schemes and metadata keys are data.

Every record is a frozen dataclass with ``to_dict``/``from_dict`` so that it can cross
a process boundary (xdist workers, results files).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Document:
    """One source document of a local corpus (optional: gold can be given without one)."""

    doc_id: str
    title: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""  # file the document came from, for error messages

    @property
    def id(self) -> str:
        """The doc id, under the name the one JSONL reader (``golden.load.read_items``) keys on."""
        return self.doc_id


@dataclass(frozen=True)
class Chunk:
    """One unit a system retrieves (a chunk, a segment, a whole document).

    ``kind`` is free (``child`` / ``parent`` where a system distinguishes them);
    ``char_start``/``char_end`` are offsets into ``Document.text`` when the unit comes
    from a known local corpus, so quoted gold can be located in it. ``book``, ``section``
    and ``pages_label`` are display labels, data the system's adapter supplies (item
    metadata ``book``/``title``, ``section``, ``pages_label``): prompts and checks show
    them as given, and the framework builds none of its own.
    """

    chunk_id: str
    doc_id: str
    text: str
    kind: str = "child"
    parent_id: str | None = None
    book: str = ""
    section: str = ""
    page_start: int | None = None
    page_end: int | None = None
    char_start: int = 0
    char_end: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    pages_label: str = ""  # the pages as the system labels them (rag_app: 第3-4页); shown as given

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["metadata"] = dict(self.metadata)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Chunk:
        return cls(**{**d, "metadata": dict(d.get("metadata") or {})})


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
    """The ranked output of one of the system's stages (its own name)."""

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
    """Every stage's ranked ids with scores, in the system's order."""

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
    """A citation target as the system built it (number, item id and where it points)."""

    n: int
    chunk_id: str
    doc_id: str
    book: str = ""
    section: str = ""
    page_start: int | None = None
    page_end: int | None = None

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
    """Token use of one or more model calls; ``reported`` is false when the server gave none."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class RetrievalRecord:
    """One retrieval as scored: the final list's items and the trace of every stage."""

    question: str
    context: tuple[Chunk, ...]
    trace: Trace
    degraded: bool = False
    degradation_reason: str | None = None
    stage_ms: Mapping[str, float] = field(default_factory=dict)  # the system's own per-stage times, if any


@dataclass(frozen=True)
class AnswerRecord:
    """One answer as scored. ``refused``: the system said it has no material."""

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
    stage_ms: Mapping[str, float] = field(default_factory=dict)
