"""Golden items: what a question should retrieve and how its answer should look.

Gold evidence is a list of *requirements*; each requirement is a group of
alternatives (any one suffices). An alternative is a chunk id, a doc id, or a doc id
with a quoted span of its text — spans are located in whatever chunks the current
chunker produced, so a golden set survives re-chunking.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["answer", "refuse", "clarify"]
Split = Literal["tune", "holdout"]

ACTIONS: tuple[str, ...] = ("answer", "refuse", "clarify")
SPLITS: tuple[str, ...] = ("tune", "holdout")
# The demo set's scenarios, in the order its coverage report lists them. Tag values are the
# user's vocabulary: the loader accepts any scenario; a set's own coverage check decides.
SCENARIOS: tuple[str, ...] = (
    "standard",
    "colloquial",
    "no-term",
    "multi-chunk",
    "cross-topic",
    "negative",
    "leak-request",
)


@dataclass(frozen=True)
class EvidenceRef:
    """One alternative: a chunk, a whole doc, or a quoted span of a doc."""

    chunk_id: str | None = None
    doc_id: str | None = None
    quote: str | None = None

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("chunk_id", self.chunk_id), ("doc_id", self.doc_id), ("quote", self.quote)) if v}

    @property
    def label(self) -> str:
        if self.chunk_id:
            return self.chunk_id
        if self.quote:
            short = self.quote if len(self.quote) <= 24 else self.quote[:23] + "…"
            return f"{self.doc_id}: “{short}”"
        return str(self.doc_id)


@dataclass(frozen=True)
class EvidenceGroup:
    """A requirement: satisfied when any of its alternatives is retrieved."""

    any_of: tuple[EvidenceRef, ...]

    def to_dict(self) -> dict[str, Any]:
        if len(self.any_of) == 1:
            return self.any_of[0].to_dict()
        return {"any_of": [r.to_dict() for r in self.any_of]}


@dataclass(frozen=True)
class KeyFact:
    fact: str
    source: EvidenceRef | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"fact": self.fact}
        if self.source is not None:
            d["source"] = self.source.to_dict()
        return d


@dataclass(frozen=True)
class GoldenItem:
    id: str
    question: str
    evidence: tuple[EvidenceGroup, ...] = ()
    history: tuple[Mapping[str, str], ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    key_facts: tuple[KeyFact, ...] = ()
    reference_answer: str = ""
    answers: tuple[str, ...] = ()
    must_contain: tuple[str, ...] = ()
    must_not_contain: tuple[str, ...] = ()
    expected_action: Action = "answer"
    split: Split = "tune"
    corpus_name: str = ""
    corpus_sha256: str = ""
    source: str = ""  # "file:line" the item was read from, for messages
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_negative(self) -> bool:
        """No gold in the corpus: the system should refuse (measured separately)."""
        return not self.evidence

    @property
    def scenario(self) -> str:
        return self.tags.get("scenario", "negative" if self.is_negative else "standard")

    @property
    def gold_doc_ids(self) -> frozenset[str]:
        return frozenset(r.doc_id for g in self.evidence for r in g.any_of if r.doc_id)

    def has_tag(self, key: str, value: str) -> bool:
        return str(self.tags.get(key, "")) == value

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "history": [dict(h) for h in self.history],
            "tags": dict(self.tags),
            "evidence": [g.to_dict() for g in self.evidence],
            "key_facts": [k.to_dict() for k in self.key_facts],
            "reference_answer": self.reference_answer,
            "must_contain": list(self.must_contain),
            "must_not_contain": list(self.must_not_contain),
            "expected_action": self.expected_action,
            "split": self.split,
            "corpus": {"name": self.corpus_name, "sha256": self.corpus_sha256},
        }
