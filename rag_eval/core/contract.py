"""The contract between the evaluation gate and any RAG system under test.

A system is evaluated through two calls:

``retrieve(question, top_k) -> Retrieval``
    the final ranked items (id, text, score, metadata with at least ``doc_id`` where
    known) and, if the system has them, the ranked list of each stage on the way
    (names are free; the gate diagnoses losses at rag_app's names ``vector``,
    ``bm25``, ``fused``, ``reranked``, ``context``).
``chat(question, top_k, history) -> Answer``   (optional: a retrieval-only system omits it)
    the answer, its sources, the context it was given, degradation flags and, if
    the system exposes it, the retrieval behind the answer.

Everything is a frozen dataclass with ``to_dict``/``from_dict``; a system may return
the mapping form instead (``{"items": [{"id": ..., "text": ..., "score": ...}]}``) so
that it needs no import from this package. ``rag_app`` is one implementation (see
``rag_eval.adapters.rag_app``); the evaluation code never sees which one it measured,
because ``rag_eval.adapters.gold`` turns these records into the structures the tiers
score, in one place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

RETRIEVE_SIGNATURE = "def retrieve(self, question: str, top_k: int | None = None) -> Retrieval"
CHAT_SIGNATURE = "def chat(self, question: str, top_k: int | None = None, history: Sequence[dict] = ()) -> Answer"
RETRIEVAL_SHAPE = (
    'Retrieval(items=[RetrievedItem(id, text, score, metadata={"doc_id": ...})], stages={name: [RetrievedItem]}) '
    'or {"items": [{"id": str, "text": str, "score": float, "metadata": {"doc_id": str}}], "stages": {...}} '
    "or a list of such items"
)
ANSWER_SHAPE = (
    "Answer(answer, sources=[RetrievedItem], context=[RetrievedItem], refused, degraded, degradation_reason) "
    'or {"answer": str, "sources": [{"id": ...}], "context": [{"id": ..., "text": ...}], "refused": bool}'
)


class ContractError(TypeError):
    """A system returned something that is not a ``Retrieval`` / ``Answer``; the message
    shows what came back and the expected shape."""


@dataclass(frozen=True)
class RetrievedItem:
    """One ranked item. ``metadata`` carries ``doc_id`` and whatever else the system knows
    (``book``, ``section``, ``page_start``, ``page_end``, ``kind``, ``parent_id``, ``n``)."""

    id: str
    text: str = ""
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def doc_id(self) -> str | None:
        value = self.metadata.get("doc_id")
        return str(value) if value not in (None, "") else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "score": self.score, "metadata": dict(self.metadata)}

    @classmethod
    def from_dict(cls, d: Any, where: str = "item") -> RetrievedItem:
        if isinstance(d, RetrievedItem):
            return d
        if not isinstance(d, Mapping):
            raise ContractError(f"{where}: expected an item mapping with an 'id', got {_show(d)}")
        raw_id = d.get("id", d.get("chunk_id"))
        if raw_id is None or raw_id == "" or isinstance(raw_id, (bool, list, dict)):
            raise ContractError(f"{where}: item has no 'id' (got keys {sorted(d)})")
        metadata = dict(d.get("metadata") or {})
        if d.get("doc_id") is not None:
            metadata.setdefault("doc_id", d["doc_id"])
        text = d.get("text", "")
        return cls(str(raw_id), "" if text is None else str(text), _score(d.get("score"), where), metadata)


@dataclass(frozen=True)
class Retrieval:
    """What ``retrieve`` returns: the final ranked items plus optional per-stage lists."""

    items: tuple[RetrievedItem, ...]
    stages: Mapping[str, tuple[RetrievedItem, ...]] = field(default_factory=dict)
    degraded: bool = False
    degradation_reason: str | None = None
    #: optional: how long each stage took, in milliseconds, as the system measured it
    #: (names are the system's own; a stage it did not time is simply absent)
    stage_ms: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [i.to_dict() for i in self.items],
            "stages": {name: [i.to_dict() for i in hits] for name, hits in self.stages.items()},
            "degraded": self.degraded,
            "degradation_reason": self.degradation_reason,
            "stage_ms": dict(self.stage_ms),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "retrieve()") -> Retrieval:
        if not isinstance(d.get("items"), (list, tuple)):
            raise ContractError(
                f"{where}: mapping has no 'items' list (got keys {sorted(d)}); expected {RETRIEVAL_SHAPE}"
            )
        stages = d.get("stages") or {}
        if not isinstance(stages, Mapping):
            raise ContractError(f"{where}: 'stages' must map a stage name to a ranked list, got {_show(stages)}")
        return cls(
            items=_items(d["items"], f"{where} items"),
            stages={str(k): _items(v, f"{where} stages[{k!r}]") for k, v in stages.items()},
            degraded=bool(d.get("degraded", False)),
            degradation_reason=d.get("degradation_reason"),
            stage_ms=stage_timings(d.get("stage_ms"), where),
        )


@dataclass(frozen=True)
class Answer:
    """What ``chat`` returns. ``refused``: the system said it has no material."""

    answer: str
    sources: tuple[RetrievedItem, ...] = ()
    context: tuple[RetrievedItem, ...] = ()
    refused: bool = False
    degraded: bool = False
    degradation_reason: str | None = None
    retrieval: Retrieval | None = None
    generator: str = ""
    usage: Mapping[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens
    stage_ms: Mapping[str, float] = field(default_factory=dict)  # optional, as in Retrieval (e.g. generation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "sources": [s.to_dict() for s in self.sources],
            "context": [c.to_dict() for c in self.context],
            "refused": self.refused,
            "degraded": self.degraded,
            "degradation_reason": self.degradation_reason,
            "retrieval": self.retrieval.to_dict() if self.retrieval else None,
            "generator": self.generator,
            "usage": dict(self.usage),
            "stage_ms": dict(self.stage_ms),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "chat()") -> Answer:
        if not isinstance(d.get("answer"), str):
            raise ContractError(
                f"{where}: mapping has no string 'answer' (got keys {sorted(d)}); expected {ANSWER_SHAPE}"
            )
        retrieval = d.get("retrieval")
        usage = d.get("usage") or {}
        return cls(
            answer=d["answer"],
            sources=_items(d.get("sources") or (), f"{where} sources"),
            context=_items(d.get("context") or (), f"{where} context"),
            refused=bool(d.get("refused", False)),
            degraded=bool(d.get("degraded", False)),
            degradation_reason=d.get("degradation_reason"),
            retrieval=as_retrieval(retrieval, f"{where} retrieval") if retrieval is not None else None,
            generator=str(d.get("generator") or ""),
            usage={
                k: int(v) for k, v in dict(usage).items() if isinstance(v, (int, float)) and not isinstance(v, bool)
            },
            stage_ms=stage_timings(d.get("stage_ms"), where),
        )


class SystemUnderTest(Protocol):
    """What the gate calls. ``chat`` is optional (``answers`` false: retrieval only)."""

    answers: bool

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval: ...

    def chat(self, question: str, top_k: int | None = None, history: Sequence[Mapping[str, str]] = ()) -> Answer: ...

    def describe(self) -> dict[str, Any]:
        """Adapter, endpoint (no secrets), index fingerprint, models: shown in results."""
        ...


def describe_scalars(info: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A ``describe()`` as flat scalars: nested mappings as dotted keys
    (``bm25.top_k``), lists of scalars joined with ", ", other objects left out."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(describe_scalars(value, f"{name}."))
        elif isinstance(value, (str, int, float, bool)):
            out[name] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value):
            out[name] = ", ".join(str(v) for v in value)
    return out


def as_retrieval(obj: Any, where: str = "retrieve()") -> Retrieval:
    """Accept a ``Retrieval``, its mapping form, or a bare ranked list; else ``ContractError``."""
    if isinstance(obj, Retrieval):
        return obj
    if isinstance(obj, Mapping):
        return Retrieval.from_dict(obj, where)
    if isinstance(obj, (list, tuple)):
        return Retrieval(items=_items(obj, where))
    raise ContractError(f"{where} returned {_show(obj)}; expected {RETRIEVAL_SHAPE}")


def as_answer(obj: Any, where: str = "chat()") -> Answer:
    """Accept an ``Answer`` or its mapping form; else ``ContractError``."""
    if isinstance(obj, Answer):
        return obj
    if isinstance(obj, Mapping):
        return Answer.from_dict(obj, where)
    raise ContractError(f"{where} returned {_show(obj)}; expected {ANSWER_SHAPE}")


def stage_timings(value: Any, where: str) -> dict[str, float]:
    """``stage_ms``: stage name → milliseconds, each a finite number >= 0 (absent: ``{}``)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ContractError(f"{where}: 'stage_ms' must map a stage name to milliseconds, got {_show(value)}")
    out: dict[str, float] = {}
    for name, ms in value.items():
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms < 0:
            raise ContractError(
                f"{where}: stage_ms[{str(name)!r}] must be a finite number of milliseconds >= 0, got {_show(ms)}"
            )
        out[str(name)] = float(ms)
    return out


def _items(seq: Any, where: str) -> tuple[RetrievedItem, ...]:
    if not isinstance(seq, (list, tuple)):
        raise ContractError(f"{where}: expected a list of items, got {_show(seq)}")
    return tuple(RetrievedItem.from_dict(x, f"{where}[{i}]") for i, x in enumerate(seq))


def _score(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ContractError(f"{where}: 'score' must be a finite number or null, got {value!r}")
    return float(value)


def _show(obj: Any) -> str:
    text = repr(obj)
    return f"{type(obj).__name__} {text[:120]}{'…' if len(text) > 120 else ''}"
