"""The record of one replay: each system turn beside its label, the student's reply, and how it ended.

A transcript carries the item's labels that the metrics need (target intent, required
conditions, material, forbidden content present), so every metric is a pure function of
transcripts, and ``to_dict``/``from_dict`` let it cross from an xdist worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rag_eval.core.dialogue import DialogueTurn
from rag_eval.dialogue.model import ExpectedTurn
from rag_eval.dialogue.simulator import StudentReply

StopReason = Literal["script_end", "past_limit", "student_done", "system_error", "simulator_error"]
ERROR_STOPS: tuple[str, ...] = ("system_error", "simulator_error")


@dataclass(frozen=True)
class TurnRecord:
    """One system turn. ``turn`` is None when the system raised (``error`` says what).

    ``asked``: conditions/known facts the turn asked for; ``reasked``: those of them the
    student had already given (in the opening, the context or an earlier reply);
    ``candidate_leaks`` / ``final_leaks``: forbidden content in the reply before / after
    interception; ``reply``: the student's answer to this turn (None: the replay ended here).
    """

    number: int
    expected: ExpectedTurn
    intent_label: str | None
    student_message: str
    turn: DialogueTurn | None = None
    asked: tuple[str, ...] = ()
    reasked: tuple[str, ...] = ()
    candidate_leaks: bool = False
    final_leaks: bool = False
    reply: StudentReply | None = None
    error: str | None = None

    @property
    def action(self) -> str | None:
        return self.turn.action if self.turn else None

    @property
    def retrieved_ids(self) -> tuple[str, ...]:
        return tuple(i.id for i in self.turn.retrieval.items) if self.turn and self.turn.retrieval else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "expected": self.expected.to_dict(),
            "intent_label": self.intent_label,
            "student_message": self.student_message,
            "turn": self.turn.to_dict() if self.turn else None,
            "asked": list(self.asked),
            "reasked": list(self.reasked),
            "candidate_leaks": self.candidate_leaks,
            "final_leaks": self.final_leaks,
            "reply": self.reply.to_dict() if self.reply else None,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TurnRecord:
        return cls(
            number=int(d["number"]),
            expected=ExpectedTurn.from_dict(d["expected"]),
            intent_label=d.get("intent_label"),
            student_message=d.get("student_message", ""),
            turn=DialogueTurn.from_dict(d["turn"]) if d.get("turn") else None,
            asked=tuple(d.get("asked", ())),
            reasked=tuple(d.get("reasked", ())),
            candidate_leaks=bool(d.get("candidate_leaks")),
            final_leaks=bool(d.get("final_leaks")),
            reply=StudentReply.from_dict(d["reply"]) if d.get("reply") else None,
            error=d.get("error"),
        )


@dataclass(frozen=True)
class Transcript:
    """One replay of one dialogue item."""

    dialogue_id: str
    turns: tuple[TurnRecord, ...]
    stop: StopReason
    limit: int
    required: tuple[str, ...] = ()
    obtained: tuple[str, ...] = ()
    unanswered: tuple[str, ...] = ()
    target_intent: str | None = None
    material_sufficient: bool = True
    has_forbidden: bool = False
    needs_clarification: bool = False
    should_be_guided: bool = False
    error: str | None = None

    @property
    def finished(self) -> bool:
        """False when the system or the simulator failed: an error outcome, never a pass."""
        return self.stop not in ERROR_STOPS

    @property
    def answered_turns(self) -> tuple[TurnRecord, ...]:
        """Turns the system replied to (an errored turn has no reply)."""
        return tuple(t for t in self.turns if t.turn is not None)

    @property
    def clarifying_turns(self) -> tuple[TurnRecord, ...]:
        return tuple(t for t in self.turns if t.action == "clarify")

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialogue_id": self.dialogue_id,
            "turns": [t.to_dict() for t in self.turns],
            "stop": self.stop,
            "limit": self.limit,
            "required": list(self.required),
            "obtained": list(self.obtained),
            "unanswered": list(self.unanswered),
            "target_intent": self.target_intent,
            "material_sufficient": self.material_sufficient,
            "has_forbidden": self.has_forbidden,
            "needs_clarification": self.needs_clarification,
            "should_be_guided": self.should_be_guided,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Transcript:
        return cls(
            dialogue_id=d["dialogue_id"],
            turns=tuple(TurnRecord.from_dict(t) for t in d.get("turns", ())),
            stop=d["stop"],
            limit=int(d["limit"]),
            required=tuple(d.get("required", ())),
            obtained=tuple(d.get("obtained", ())),
            unanswered=tuple(d.get("unanswered", ())),
            target_intent=d.get("target_intent"),
            material_sufficient=bool(d.get("material_sufficient", True)),
            has_forbidden=bool(d.get("has_forbidden")),
            needs_clarification=bool(d.get("needs_clarification")),
            should_be_guided=bool(d.get("should_be_guided")),
            error=d.get("error"),
        )
