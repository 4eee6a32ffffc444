"""Dialogue golden items: a scripted student, the learning context and what each system turn should do.

One item describes one tutoring conversation. The student opens with a message while a
learning context is on screen (e.g. the problem). The item labels, per system turn, the
expected action (``clarify`` / ``answer`` / ``state_limits``), the intent the system should
recognise and, for answer turns, the fitting hint layer. It scripts the student: what they
already said (``known``), the conditions the system must obtain and the student's reply
for each when asked (or none: the student cannot answer), and the follow-up messages that
push for the full answer. ``forbidden`` is content that must never be shown; ``evidence``
is gold evidence in the golden items' format (``rag_eval.golden.model``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_eval.core.dialogue import DialogueAction, HintLevel
from rag_eval.golden.model import Action, EvidenceGroup, EvidenceRef, GoldenItem, Split

DEFAULT_CLARIFICATION_LIMIT = 3
#: ``[dialogue.case]`` choices: how an answer turn's retrieval is checked against gold, and who plays the student.
RETRIEVAL_CHECKS: tuple[str, ...] = ("chunk", "doc", "off")
SIMULATORS: tuple[str, ...] = ("scripted", "llm")
CANNOT_ANSWER_ZH = "我不记得了"
CANNOT_ANSWER_EN = "I don't remember"


@dataclass(frozen=True)
class Condition:
    """A piece of information the system must obtain by asking.

    ``keywords`` (Chinese and English, any case) recognise a question asking for it in
    the system's message; ``reply`` is what the student says when asked, ``None`` when
    the student cannot answer (they reply with the item's cannot-answer line).
    """

    name: str
    keywords: tuple[str, ...]
    reply: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "keywords": list(self.keywords), "reply": self.reply}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Condition:
        return cls(str(d["name"]), tuple(d.get("keywords", ())), d.get("reply"))


@dataclass(frozen=True)
class KnownFact:
    """Something the student already said (or the context shows): asking for it again is
    re-asking known information. ``value`` is what the student repeats when asked."""

    name: str
    value: str
    keywords: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "keywords": list(self.keywords)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> KnownFact:
        return cls(str(d["name"]), str(d["value"]), tuple(d.get("keywords", ())))


@dataclass(frozen=True)
class ExpectedTurn:
    """The label of one system turn: its action, the conditions a clarifying turn should
    ask for, the fitting hint level of an answer turn, and the intent (when labelled)."""

    action: DialogueAction
    asks: tuple[str, ...] = ()
    hint_level: HintLevel | None = None
    intent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "asks": list(self.asks), "hint_level": self.hint_level, "intent": self.intent}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExpectedTurn:
        return cls(d["action"], tuple(d.get("asks", ())), d.get("hint_level"), d.get("intent"))


@dataclass(frozen=True)
class DialogueItem:
    id: str
    opening: str
    expected_turns: tuple[ExpectedTurn, ...]
    context: Mapping[str, Any] = field(default_factory=dict)
    target_intent: str | None = None
    known: tuple[KnownFact, ...] = ()
    conditions: tuple[Condition, ...] = ()
    follow_ups: tuple[str, ...] = ()
    cannot_answer: str = ""
    forbidden: tuple[str, ...] = ()
    evidence: tuple[EvidenceGroup, ...] = ()
    material_sufficient: bool = True
    clarification_limit: int = DEFAULT_CLARIFICATION_LIMIT
    split: Split = "tune"
    tags: Mapping[str, str] = field(default_factory=dict)
    corpus_name: str = ""
    corpus_sha256: str = ""
    source: str = ""  # "file:line" the item was read from, for messages

    @property
    def cannot_answer_line(self) -> str:
        """The student's reply to a question they cannot answer (default by the opening's language)."""
        if self.cannot_answer:
            return self.cannot_answer
        return CANNOT_ANSWER_ZH if any("\u4e00" <= ch <= "\u9fff" for ch in self.opening) else CANNOT_ANSWER_EN

    @property
    def needs_clarification(self) -> bool:
        """The script expects at least one clarifying turn."""
        return any(t.action == "clarify" for t in self.expected_turns)

    @property
    def should_be_guided(self) -> bool:
        """The script expects at least one answer turn with a labelled hint level."""
        return any(t.action == "answer" and t.hint_level for t in self.expected_turns)

    def condition(self, name: str) -> Condition | None:
        return next((c for c in self.conditions if c.name == name), None)

    def intent_label(self, turn: ExpectedTurn) -> str | None:
        """The intent label of a turn: its own, else the dialogue's target intent."""
        return turn.intent or self.target_intent

    def to_golden_item(self) -> GoldenItem:
        """The opening as a single question with the same gold: for gold resolution
        (``rag_eval.golden.resolve`` / the adapters' gold space), which take golden items."""
        first = self.expected_turns[0].action if self.expected_turns else "answer"
        actions: dict[str, Action] = {"clarify": "clarify", "answer": "answer", "state_limits": "refuse"}
        return GoldenItem(
            id=self.id,
            question=self.opening,
            evidence=self.evidence,
            tags=dict(self.tags),
            must_not_contain=self.forbidden,
            expected_action=actions[first],
            split=self.split,
            corpus_name=self.corpus_name,
            corpus_sha256=self.corpus_sha256,
            source=self.source,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "opening": self.opening,
            "context": dict(self.context),
            "target_intent": self.target_intent,
            "known": [k.to_dict() for k in self.known],
            "conditions": [c.to_dict() for c in self.conditions],
            "expected_turns": [t.to_dict() for t in self.expected_turns],
            "follow_ups": list(self.follow_ups),
            "cannot_answer": self.cannot_answer,
            "forbidden": list(self.forbidden),
            "evidence": [g.to_dict() for g in self.evidence],
            "material": "sufficient" if self.material_sufficient else "insufficient",
            "clarification_limit": self.clarification_limit,
            "split": self.split,
            "tags": dict(self.tags),
            "corpus": {"name": self.corpus_name, "sha256": self.corpus_sha256},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DialogueItem:
        """The inverse of ``to_dict`` (trusted input, e.g. across xdist workers); files go
        through ``rag_eval.dialogue.load``, which checks every field."""
        corpus = d.get("corpus") or {}
        return cls(
            id=d["id"],
            opening=d["opening"],
            expected_turns=tuple(ExpectedTurn.from_dict(t) for t in d["expected_turns"]),
            context=dict(d.get("context") or {}),
            target_intent=d.get("target_intent"),
            known=tuple(KnownFact.from_dict(k) for k in d.get("known", ())),
            conditions=tuple(Condition.from_dict(c) for c in d.get("conditions", ())),
            follow_ups=tuple(d.get("follow_ups", ())),
            cannot_answer=d.get("cannot_answer", ""),
            forbidden=tuple(d.get("forbidden", ())),
            evidence=tuple(_group(g) for g in d.get("evidence", ())),
            material_sufficient=d.get("material", "sufficient") == "sufficient",
            clarification_limit=int(d.get("clarification_limit", DEFAULT_CLARIFICATION_LIMIT)),
            split=d.get("split", "tune"),
            tags=dict(d.get("tags") or {}),
            corpus_name=str(corpus.get("name", "")),
            corpus_sha256=str(corpus.get("sha256", "")),
        )


def _group(d: Mapping[str, Any]) -> EvidenceGroup:
    refs = d["any_of"] if "any_of" in d else [d]
    return EvidenceGroup(tuple(EvidenceRef(r.get("chunk_id"), r.get("doc_id"), r.get("quote")) for r in refs))
