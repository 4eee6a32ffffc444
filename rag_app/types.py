"""Records that cross pipeline stages: documents, chunks, ranked hits, traces, answers.

Everything here is a frozen dataclass with ``to_dict``/``from_dict`` so that it can
cross a process boundary (xdist workers, results files, the HTTP API).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

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
        return cls(
            **{**d, "key_terms": tuple(d.get("key_terms") or ()), "missing_terms": tuple(d.get("missing_terms") or ())}
        )


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


# --- dialogue -------------------------------------------------------------------------------

DialogueAction = Literal["clarify", "answer", "state_limits"]
HintLevel = Literal["reminder", "approach", "wrong_direction"]
Interception = Literal["blocked", "rewritten"]
DIALOGUE_ACTIONS: tuple[str, ...] = ("clarify", "answer", "state_limits")
#: Least to most revealing; each follow-up goes one layer deeper (rag_app/dialogue/levels.py).
HINT_LEVELS: tuple[str, ...] = ("reminder", "approach", "wrong_direction")
DIALOGUE_ROLES: tuple[str, ...] = ("user", "assistant")


@dataclass(frozen=True)
class DialogueRequest:
    """One call of ``RagPipeline.dialogue``: the conversation so far (oldest first, ending with
    the student's message) and the learning context (``problem``, ``book``, ``forbidden``...)."""

    turns: tuple[Mapping[str, str], ...]
    context: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"turns": [dict(t) for t in self.turns], "context": dict(self.context)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "dialogue request") -> DialogueRequest:
        """Checked input (HTTP bodies, CLI): a ValueError names the key and the expected shape."""
        turns = d.get("turns")
        if not isinstance(turns, (list, tuple)) or not turns:
            raise ValueError(
                f'{where}: \'turns\' must be a non-empty list of {{"role": "user"|"assistant", "content": str}}'
            )
        for i, t in enumerate(turns):
            if (
                not isinstance(t, Mapping)
                or t.get("role") not in DIALOGUE_ROLES
                or not isinstance(t.get("content"), str)
            ):
                raise ValueError(
                    f'{where}: turns[{i}] must be {{"role": "user"|"assistant", "content": str}}, got {t!r:.80}'
                )
        if turns[-1]["role"] != "user" or not str(turns[-1]["content"]).strip():
            raise ValueError(f"{where}: the last turn must be the student's message (role 'user', non-empty content)")
        context = d.get("context") or {}
        if not isinstance(context, Mapping):
            raise ValueError(f'{where}: \'context\' must be an object like {{"problem": "..."}}, got {context!r:.80}')
        return cls(tuple({"role": str(t["role"]), "content": str(t["content"])} for t in turns), dict(context))


@dataclass(frozen=True)
class DialogueTurn:
    """What ``RagPipeline.dialogue`` returns for one tutor turn (the dialogue call's shape).

    ``message`` is the reply the student sees; ``candidate`` the reply before answer
    interception and ``interception`` what happened to it (None: passed through).
    ``asked_conditions`` is for names in the *caller's* vocabulary and stays empty: rag_app
    names what it asks in its own words, in ``asking`` and in the message (an evaluator
    matches the message against its keywords). ``missing`` is what is still missing when
    the tutor states its limits; ``sources`` are the citation targets of ``[n]``.
    """

    action: DialogueAction
    message: str
    intent: str | None = None
    asked_conditions: tuple[str, ...] = ()
    hint_level: HintLevel | None = None
    retrieval: RetrievalResult | None = None
    candidate: str | None = None
    interception: Interception | None = None
    asking: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    sufficiency: Sufficiency | None = None
    reason: str = ""  # one line: which rule decided the action, with its numbers
    usage: Usage = Usage()

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "message": self.message,
            "intent": self.intent,
            "asked_conditions": list(self.asked_conditions),
            "hint_level": self.hint_level,
            "retrieval": retrieval_items(self.retrieval) if self.retrieval is not None else None,
            "candidate": self.candidate,
            "interception": self.interception,
            "asking": list(self.asking),
            "missing": list(self.missing),
            "sources": [s.to_dict() for s in self.sources],
            "sufficiency": self.sufficiency.to_dict() if self.sufficiency else None,
            "reason": self.reason,
            "usage": asdict(self.usage),
        }


def retrieval_items(result: RetrievalResult) -> dict[str, Any]:
    """A retrieval as ``{"items": [{"id", "text", "score", "metadata"}], "stages", ...}``: the
    ranked-list shape evaluators read. Context chunks are in rank order and carry no score
    of their own (``None``); the stages keep every stage's scores."""
    return {
        "items": [
            {
                "id": c.chunk_id,
                "text": c.text,
                "score": None,
                "metadata": {
                    k: getattr(c, k)
                    for k in ("doc_id", "kind", "parent_id", "book", "section", "page_start", "page_end")
                },
            }
            for c in result.context
        ],
        "stages": {s.name: [{"id": h.chunk_id, "score": h.score} for h in s.hits] for s in result.trace.stages},
        "degraded": result.degraded,
        "degradation_reason": result.degradation_reason,
    }
