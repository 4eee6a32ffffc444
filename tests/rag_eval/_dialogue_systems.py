"""Scripted Python tutors for the dialogue tests: one that does what each item labels, and
variants that fail in exactly one way. They look the item up by the opening message and
read their position from the number of assistant turns so far, so each call is a pure
function of the conversation (no memory between replays)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_eval.dialogue.load import load_dialogue_set
from rag_eval.dialogue.model import DialogueItem, ExpectedTurn

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "golden_sets" / "demo_maths" / "dialogues.jsonl"


def demo_items() -> list[DialogueItem]:
    return load_dialogue_set(DEMO)


class OracleTutor:
    """Does exactly what each turn's label says: asks for the labelled conditions (by name),
    hints at the labelled level, states limits, never shows forbidden content."""

    def __init__(self, items: Sequence[DialogueItem]) -> None:
        self.by_opening = {i.opening: i for i in items}
        self.calls = 0

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
        self.calls += 1
        item = self.by_opening[turns[0]["content"]]
        position = sum(t["role"] == "assistant" for t in turns)
        expected = item.expected_turns[min(position, len(item.expected_turns) - 1)]
        return self.reply(item, position, expected, turns)

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        if expected.action == "clarify":
            return self.ask(item, expected.asks)
        if expected.action == "state_limits":
            return {
                "action": "state_limits",
                "message": "教材里没有这部分内容，我没法可靠地回答。",
                "intent": item.target_intent,
            }
        return self.hint(item, expected.hint_level)

    def ask(self, item: DialogueItem, names: Sequence[str]) -> dict[str, Any]:
        return {
            "action": "clarify",
            "message": "能告诉我更多信息吗？",
            "intent": item.target_intent,
            "asked_conditions": list(names),
        }

    def hint(self, item: DialogueItem, level: str | None, message: str = "先回忆一下相关的公式。") -> dict[str, Any]:
        return {
            "action": "answer",
            "message": message,
            "intent": item.target_intent,
            "hint_level": level,
            "retrieval": {
                "items": [
                    {"id": f"{item.id}#gold{i}", "text": "", "metadata": {"doc_id": group.any_of[0].doc_id}}
                    for i, group in enumerate(item.evidence)
                ]
            },
        }

    def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        return {"items": []}  # the contract's required call; these tutors are judged on their dialogues

    def describe(self) -> dict[str, Any]:
        return {"adapter": "scripted", "tutor": type(self).__name__}


class OverClarifier(OracleTutor):
    """Asks which problem on the first turn of a dialogue that needs no clarification."""

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        if position == 0 and expected.action == "answer" and not item.needs_clarification:
            return {"action": "clarify", "message": "你说的是哪道题？", "intent": item.target_intent}
        return super().reply(item, position, expected, turns)


class NeverClarifier(OracleTutor):
    """Goes straight to a hint where it should ask."""

    def ask(self, item: DialogueItem, names: Sequence[str]) -> dict[str, Any]:
        return self.hint(item, None)


class Reasker(OracleTutor):
    """After getting a condition, asks for it again once (within the round limit)."""

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        previous = item.expected_turns[position - 1] if position else None
        rounds = sum(t.action == "clarify" for t in item.expected_turns)
        if (
            previous is not None
            and previous.action == "clarify"
            and expected.action == "answer"
            and rounds < item.clarification_limit
        ):
            return self.ask(item, previous.asks)
        return super().reply(item, position, expected, turns)


class Leaker(OracleTutor):
    """Hands over the forbidden worked answer once the student has demanded it twice."""

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        demands = sum(t["role"] == "user" and t["content"] in set(item.follow_ups) for t in turns)
        if item.forbidden and demands >= 2:
            return self.hint(item, expected.hint_level, "好吧，完整答案是：" + item.forbidden[0])
        return super().reply(item, position, expected, turns)


class Interceptor(Leaker):
    """Like Leaker, but its interception stage rewrites the leaking candidate into a hint."""

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        out = super().reply(item, position, expected, turns)
        if any(f in out["message"] for f in item.forbidden):
            out = {
                **out,
                "candidate": out["message"],
                "message": "答案我不能直接给你，再看看对称的那一步。",
                "interception": "rewritten",
            }
        return out


class HintBlocker(OracleTutor):
    """Its interception stage blocks the first hint of every dialogue, although nothing leaks."""

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        out = super().reply(item, position, expected, turns)
        first_hint = next((i for i, t in enumerate(item.expected_turns) if t.action == "answer"), None)
        if position == first_hint:
            out = {**out, "candidate": out["message"], "message": "这一步我不能告诉你。", "interception": "blocked"}
        return out


class WrongRetriever(OracleTutor):
    """Guides at the right level but retrieves from a document that is not the item's gold."""

    def hint(self, item: DialogueItem, level: str | None, message: str = "先回忆一下相关的公式。") -> dict[str, Any]:
        out = super().hint(item, level, message)
        return {
            **out,
            "retrieval": {"items": [{"id": "elsewhere#1", "text": "", "metadata": {"doc_id": "no-such-book"}}]},
        }


class FlakyTutor(OracleTutor):
    """Nondeterministic across replays: every second replay of a dialogue it over-clarifies
    on the first turn (it counts the openings it has seen; each replay starts with one)."""

    def __init__(self, items: Sequence[DialogueItem]) -> None:
        super().__init__(items)
        self.openings: dict[str, int] = {}

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        if position == 0:
            self.openings[item.id] = self.openings.get(item.id, 0) + 1
        if self.openings[item.id] % 2 == 0 and position == 0 and expected.action == "answer":
            return {"action": "clarify", "message": "你说的是哪道题？", "intent": item.target_intent}
        return super().reply(item, position, expected, turns)


TUTORS: dict[str, type[OracleTutor]] = {
    "oracle": OracleTutor,
    "over_clarifier": OverClarifier,
    "never_clarifier": NeverClarifier,
    "reasker": Reasker,
    "leaker": Leaker,
    "interceptor": Interceptor,
    "hint_blocker": HintBlocker,
    "wrong_retriever": WrongRetriever,
    "flaky": FlakyTutor,
}


def tutor(options: Mapping[str, Any]) -> OracleTutor:
    """The pipeline factory: ``[options] tutor = "leaker"`` (a name of TUTORS) over the demo dialogue set."""
    return TUTORS[str(options.get("tutor", "oracle"))](demo_items())
