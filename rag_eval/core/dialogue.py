"""The dialogue call of the contract: what a system receives for one turn and what it returns.

``dialogue(turns, context) -> DialogueTurn``   (optional, like ``chat``)
    ``turns`` is the conversation so far, oldest first, as ``{"role": "user"|"assistant",
    "content": str}`` mappings ending with the student's latest message; ``context`` is
    the learning context (e.g. ``{"problem": "...", "book": "..."}``). The system answers
    with its action, its message and, where it has them, the recognised intent, the
    conditions it asked for, the hint level it chose, the retrieval behind the turn and,
    where it intercepts, the candidate reply before interception and what happened to it.

A system may return the mapping form (``DialogueTurn.to_dict()``'s shape) instead, so that
it needs no import from this package; ``as_dialogue_turn`` accepts both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from rag_eval.core.contract import ContractError, Retrieval, _show, as_retrieval

DialogueAction = Literal["clarify", "answer", "state_limits"]
HintLevel = Literal["reminder", "approach", "wrong_direction"]

DIALOGUE_ACTIONS: tuple[str, ...] = ("clarify", "answer", "state_limits")
#: Hint layers from least to most revealing (docs/dialogue.md).
HINT_LEVELS: tuple[str, ...] = ("reminder", "approach", "wrong_direction")

Interception = Literal["blocked", "rewritten"]
INTERCEPTIONS: tuple[str, ...] = ("blocked", "rewritten")
ROLES: tuple[str, ...] = ("user", "assistant")

DIALOGUE_SIGNATURE = (
    "def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> DialogueTurn"
)
DIALOGUE_SHAPE = (
    "DialogueTurn(action, message, intent, asked_conditions, hint_level, retrieval, candidate, interception) "
    'or {"action": "clarify"|"answer"|"state_limits", "message": str, "intent": str, "asked_conditions": [str], '
    '"hint_level": "reminder"|"approach"|"wrong_direction", "retrieval": {"items": [...]}, '
    '"candidate": str, "interception": "blocked"|"rewritten"|null}'
)


@dataclass(frozen=True)
class DialogueRequest:
    """What the dialogue call receives: the conversation so far and the learning context."""

    turns: tuple[Mapping[str, str], ...]
    context: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"turns": [dict(t) for t in self.turns], "context": dict(self.context)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "dialogue request") -> DialogueRequest:
        turns = d.get("turns")
        if not isinstance(turns, (list, tuple)) or any(
            not isinstance(t, Mapping) or t.get("role") not in ROLES or not isinstance(t.get("content"), str)
            for t in turns
        ):
            raise ContractError(f'{where}: \'turns\' must be a list of {{"role": "user"|"assistant", "content": str}}')
        context = d.get("context") or {}
        if not isinstance(context, Mapping):
            raise ContractError(f"{where}: 'context' must be a mapping, got {_show(context)}")
        return cls(tuple({"role": t["role"], "content": t["content"]} for t in turns), dict(context))


@dataclass(frozen=True)
class DialogueTurn:
    """What the dialogue call returns for one system turn.

    ``message`` is the final reply the student sees. ``candidate`` is the reply before
    answer interception (``None``: the system has no interception stage, the candidate is
    the message); ``interception`` says whether that candidate was ``blocked`` or
    ``rewritten`` (``None``: passed through).
    """

    action: DialogueAction
    message: str
    intent: str | None = None
    asked_conditions: tuple[str, ...] = ()
    hint_level: HintLevel | None = None
    retrieval: Retrieval | None = None
    candidate: str | None = None
    interception: Interception | None = None

    @property
    def candidate_text(self) -> str:
        """The reply before interception: the candidate, or the message when there is none."""
        return self.message if self.candidate is None else self.candidate

    def to_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "message": self.message,
            "intent": self.intent,
            "asked_conditions": list(self.asked_conditions),
            "hint_level": self.hint_level,
            "retrieval": self.retrieval.to_dict() if self.retrieval else None,
            "candidate": self.candidate,
            "interception": self.interception,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "dialogue()") -> DialogueTurn:
        action = d.get("action")
        if action not in DIALOGUE_ACTIONS:
            raise ContractError(
                f"{where}: 'action' is {action!r}, expected one of {', '.join(DIALOGUE_ACTIONS)} "
                f"(got keys {sorted(d)}); expected {DIALOGUE_SHAPE}"
            )
        if not isinstance(d.get("message"), str):
            raise ContractError(
                f"{where}: mapping has no string 'message' (got keys {sorted(d)}); expected {DIALOGUE_SHAPE}"
            )
        asked = d.get("asked_conditions") or ()
        if not isinstance(asked, (list, tuple)) or not all(isinstance(a, str) for a in asked):
            raise ContractError(f"{where}: 'asked_conditions' must be a list of condition names, got {_show(asked)}")
        level = d.get("hint_level")
        if level is not None and level not in HINT_LEVELS:
            raise ContractError(f"{where}: 'hint_level' is {level!r}, expected one of {', '.join(HINT_LEVELS)} or null")
        interception = d.get("interception")
        if interception is not None and interception not in INTERCEPTIONS:
            raise ContractError(
                f"{where}: 'interception' is {interception!r}, expected one of {', '.join(INTERCEPTIONS)} or null"
            )
        candidate = d.get("candidate")
        if candidate is not None and not isinstance(candidate, str):
            raise ContractError(
                f"{where}: 'candidate' must be the reply before interception (a string) or null, got {_show(candidate)}"
            )
        intent = d.get("intent")
        retrieval = d.get("retrieval")
        return cls(
            action=cast(DialogueAction, action),
            message=d["message"],
            intent=None if intent in (None, "") else str(intent),
            asked_conditions=tuple(asked),
            hint_level=cast("HintLevel | None", level),
            retrieval=as_retrieval(retrieval, f"{where} retrieval") if retrieval is not None else None,
            candidate=candidate,
            interception=cast("Interception | None", interception),
        )


class DialogueSystem(Protocol):
    """A system under test that can hold a tutoring conversation."""

    def dialogue(
        self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]
    ) -> DialogueTurn | Mapping[str, Any]: ...


def as_dialogue_turn(obj: Any, where: str = "dialogue()") -> DialogueTurn:
    """Accept a ``DialogueTurn`` or its mapping form; else ``ContractError``."""
    if isinstance(obj, DialogueTurn):
        return obj
    if isinstance(obj, Mapping):
        return DialogueTurn.from_dict(obj, where)
    raise ContractError(f"{where} returned {_show(obj)}; expected {DIALOGUE_SHAPE}")
