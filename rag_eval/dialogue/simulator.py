"""The student simulator: plays the student of a dialogue item, one fresh session per replay.

The scripted student (the default) is deterministic. To a clarifying turn it answers
each condition asked for with the item's scripted reply, repeats what it already said
when asked again, and says the item's cannot-answer line ("我不记得了" / "I don't
remember") to anything it cannot answer or does not recognise. After any other turn it
sends the next scripted follow-up; when none is left it has nothing more to say.

The LLM student keeps those decisions (so what was asked, given and not given stays
deterministic and measurable) and lets a chat-completion callable word the reply in the
conversation's own voice. ``start`` returns a new session every time: replays share no
memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from rag_eval.core.dialogue import DialogueTurn
from rag_eval.dialogue.asking import asked_names
from rag_eval.dialogue.model import DialogueItem

#: ``complete(messages) -> text``: any OpenAI-compatible chat completion (the shared client plugs in here).
ChatCompletion = Callable[[Sequence[Mapping[str, str]]], str]


class SimulatorError(RuntimeError):
    """The simulator could not produce a reply (e.g. its model call failed): the replay did not finish."""


@dataclass(frozen=True)
class StudentReply:
    """The student's next message and what it gave. ``text`` None: nothing more to say.

    ``asked``: names the student took the system's turn to ask for; ``answered``: required
    conditions given in this reply; ``unanswerable``: required conditions asked for that
    the student cannot give; ``repeated``: things asked again that the student had already
    given; ``follow_up``: index of the scripted follow-up sent, if any.
    """

    text: str | None
    asked: tuple[str, ...] = ()
    answered: tuple[str, ...] = ()
    unanswerable: tuple[str, ...] = ()
    repeated: tuple[str, ...] = ()
    follow_up: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "asked": list(self.asked),
            "answered": list(self.answered),
            "unanswerable": list(self.unanswerable),
            "repeated": list(self.repeated),
            "follow_up": self.follow_up,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StudentReply:
        return cls(
            d.get("text"),
            tuple(d.get("asked", ())),
            tuple(d.get("answered", ())),
            tuple(d.get("unanswerable", ())),
            tuple(d.get("repeated", ())),
            d.get("follow_up"),
        )


class StudentSession(Protocol):
    def reply(self, turn: DialogueTurn) -> StudentReply: ...


class Simulator(Protocol):
    """Starts one independent student session per replay of a dialogue item."""

    def start(self, item: DialogueItem) -> StudentSession: ...


@dataclass
class ScriptedSession:
    """The deterministic student of one replay (state: what it gave, which follow-up is next)."""

    item: DialogueItem
    given: set[str] = field(default_factory=set)
    next_follow_up: int = 0

    def reply(self, turn: DialogueTurn) -> StudentReply:
        if turn.action == "clarify":
            return self._answer_question(turn)
        if self.next_follow_up >= len(self.item.follow_ups):
            return StudentReply(None)
        index = self.next_follow_up
        self.next_follow_up += 1
        return StudentReply(self.item.follow_ups[index], follow_up=index)

    def _answer_question(self, turn: DialogueTurn) -> StudentReply:
        asked = asked_names(turn, self.item)
        known = {k.name: k.value for k in self.item.known}
        parts: list[str] = []
        answered: list[str] = []
        unanswerable: list[str] = []
        repeated: list[str] = []
        for name in asked:
            condition = self.item.condition(name)
            if name in known or name in self.given:
                repeated.append(name)
            if name in known:
                parts.append(known[name])
            elif condition is not None and condition.reply is not None:
                parts.append(condition.reply)
                if name not in self.given:
                    answered.append(name)
            elif condition is not None:
                unanswerable.append(name)
        if unanswerable or not parts:
            parts.append(self.item.cannot_answer_line)
        self.given.update(answered)
        return StudentReply(" ".join(parts), tuple(asked), tuple(answered), tuple(unanswerable), tuple(repeated))


class ScriptedStudent:
    """The default simulator: deterministic, from the item alone."""

    def start(self, item: DialogueItem) -> ScriptedSession:
        return ScriptedSession(item)


PERSONA = (
    "You are playing a secondary-school student talking to a maths tutor. Stay in character and reply "
    "in the language of your opening message, in one or two short sentences. Say only what the CONTENT "
    "line tells you to convey: never add facts, numbers or conditions of your own, and never solve the problem."
)


@dataclass
class LLMSession:
    """One replay's LLM student: the scripted decision, worded by ``complete``."""

    complete: ChatCompletion
    script: ScriptedSession
    history: list[dict[str, str]] = field(default_factory=list)

    def reply(self, turn: DialogueTurn) -> StudentReply:
        plan = self.script.reply(turn)
        self.history.append({"role": "user", "content": turn.message})  # the tutor speaks to the student
        if plan.text is None:
            return plan
        messages = [{"role": "system", "content": self._system_prompt(plan.text)}, *self.history]
        try:
            text = self.complete(messages)
        except Exception as exc:  # any failure of the model call: the replay did not finish
            raise SimulatorError(f"the LLM student's completion failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(text, str) or not text.strip():
            raise SimulatorError(
                f"the LLM student's completion returned no text ({text!r}); check the model and endpoint"
            )
        self.history.append({"role": "assistant", "content": text})
        return replace(plan, text=text)

    def _system_prompt(self, content: str) -> str:
        item = self.script.item
        context = "; ".join(f"{k}: {v}" for k, v in item.context.items())
        return (
            f"{PERSONA}\nYour opening message was: {item.opening}\n"
            + (f"On your screen: {context}\n" if context else "")
            + f"CONTENT to convey in your next message: {content}"
        )


class LLMStudent:
    """A simulator whose replies a chat-completion callable words (same decisions as the scripted student)."""

    def __init__(self, complete: ChatCompletion) -> None:
        self.complete = complete

    def start(self, item: DialogueItem) -> LLMSession:
        session = LLMSession(self.complete, ScriptedSession(item))
        session.history.append({"role": "assistant", "content": item.opening})
        return session
