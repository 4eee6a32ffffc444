"""Read a conversation back: what the student said, what the tutor asked, what was answered.

The dialogue call is stateless (the whole conversation comes with every call), so the
state is rebuilt each time from the turns: the tutor's earlier messages carry their tag
and the phrases of the slots they asked for (rag_app/dialogue/messages.py); the student
message after a clarifying turn answers the slots that turn asked for.

A slot is **given** when a detector finds it in the student's words (a book title, 例N,
（2）, an interval ...) or the student answered a question for it with something other than
"I don't remember"; it is **unavailable** when the student said they cannot give it --
in reply to the question, or up front ("区间我忘抄了"; "I forgot the numbers" makes every
condition of the statement unavailable). Neither is ever asked again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_app.dialogue.conditions import CONDITION_KINDS, book_in, kinds_in, number_in, part_in
from rag_app.dialogue.cues import DONT_KNOW, Language, has_any, language, topic_text
from rag_app.dialogue.messages import read_slots, read_tag
from rag_app.types import HINT_LEVELS

#: Words that name a slot in a student's "I forgot ..." clause.
SLOT_WORDS: dict[str, tuple[str, ...]] = {
    "interval": ("区间", "interval"),
    "range": ("范围", "range"),
    "point": ("点", "point"),
    "angle": ("角", "angle"),
    "probability": ("概率", "命中率", "probabilit"),
    "statement": ("条件", "数据", "数字", "坐标", "题目", "原题", "numbers", "coordinates", "given", "conditions"),
}
_CLAUSE = re.compile(r"[，,。.；;！!？?\n]")


@dataclass
class Conversation:
    """The state of one conversation, rebuilt from its turns and learning context."""

    turns: tuple[Mapping[str, str], ...]
    context: Mapping[str, Any]
    books: tuple[str, ...] = ()
    given: dict[str, str] = field(default_factory=dict)
    unavailable: set[str] = field(default_factory=set)
    asked: list[str] = field(default_factory=list)  # every slot asked so far, in order
    clarify_rounds: int = 0
    levels: list[str] = field(default_factory=list)  # hint levels of earlier answers
    limits_stated: bool = False

    def __post_init__(self) -> None:
        self._read()

    @property
    def user_messages(self) -> list[str]:
        return [t["content"] for t in self.turns if t["role"] == "user"]

    @property
    def opening(self) -> str:
        return self.user_messages[0]

    @property
    def latest(self) -> str:
        return self.user_messages[-1]

    @property
    def language(self) -> Language:
        return language(self.opening)

    @property
    def problem(self) -> str:
        """The problem of the learning context (``context["problem"]``), if any."""
        value = self.context.get("problem")
        return value.strip() if isinstance(value, str) else ""

    @property
    def student_text(self) -> str:
        """Everything the student and the context said about the problem, one text."""
        return "\n".join([self.problem, *self.user_messages])

    @property
    def since_last_answer(self) -> list[str]:
        """The student's messages after the tutor's last hint or limits (this request)."""
        out: list[str] = []
        for t in self.turns:
            if t["role"] == "assistant" and read_tag(t["content"]) not in (None, "clarify"):
                out = []
            elif t["role"] == "user":
                out.append(t["content"])
        return out

    def has(self, slot: str) -> bool:
        return slot in self.given or slot in self.unavailable

    def _read(self) -> None:
        context_book = self.context.get("book")
        found_book = book_in(
            self.student_text + "\n" + (context_book if isinstance(context_book, str) else ""), self.books
        )
        if found_book:
            self.given["book"] = found_book
        number = number_in(self.student_text)
        if number is not None:
            self.given["problem"] = f"例{number}"
        part = part_in("\n".join(self.user_messages))
        if part is not None:
            self.given["part"] = str(part)
        for kind in kinds_in(self.student_text):
            self.given[kind] = kind
        self.unavailable |= declared_unavailable(self.opening) - set(self.given)

        pending: tuple[str, ...] = ()
        for t in self.turns:
            if t["role"] == "assistant":
                said = read_tag(t["content"])
                pending = ()
                if said == "clarify":
                    self.clarify_rounds += 1
                    pending = read_slots(t["content"])
                    self.asked.extend(pending)
                elif said in HINT_LEVELS:
                    self.levels.append(str(said))
                elif said == "state_limits":
                    self.limits_stated = True
                continue
            if pending:
                self._answer(pending, t["content"])
                pending = ()

    def _answer(self, slots: Sequence[str], reply: str) -> None:
        """The student's reply to a clarifying turn that asked for ``slots``."""
        cannot = has_any(reply, DONT_KNOW)
        book = book_in(reply, self.books)
        detected: dict[str, Any] = {"book": book, "problem": number_in(reply), "part": part_in(reply)}
        kinds = kinds_in(reply)
        residue = _residue(reply, book)
        for slot in slots:
            value: Any = detected.get(slot) if slot in detected else (slot if slot in kinds else None)
            if value is not None:
                self.given[slot] = str(value) if slot != "problem" else f"例{value}"
            elif slot in self.given:
                continue
            elif cannot:
                self.unavailable.add(slot)
            elif residue:
                self.given[slot] = residue  # answered in words the detectors do not know


def _residue(reply: str, book: str | None) -> str:
    """What a reply says besides a book title, 例N and a part: words that may answer a slot
    no detector knows ("上次是求 y=x^3 在点 (1,1) 处的切线"); "" when nothing is left."""
    rest = reply.replace(book, " ") if book else reply
    rest = re.sub(r"例\s*\d+|第\s*[（(]?\s*\d+\s*[)）]?\s*(?:问|题|小题|小问)|[（(]\s*\d+\s*[)）]", " ", rest)
    rest = topic_text(rest)
    return rest if len(re.findall(r"[\u4e00-\u9fff]|[a-zA-Z]{2,}|[=<>\d]", rest)) >= 2 else ""


def declared_unavailable(text: str) -> set[str]:
    """Slots the student says up front they do not have: the slot words of a clause that also
    says "forgot"/"不记得" (``区间我忘抄了`` -> interval; ``I forgot the numbers`` -> problem)."""
    out: set[str] = set()
    for clause in _CLAUSE.split(text):
        if not has_any(clause, DONT_KNOW):
            continue
        low = clause.lower()
        out |= {slot for slot, words in SLOT_WORDS.items() if any(w in low for w in words)}
    if "statement" in out:  # the givens as a whole: no condition can be asked for
        out |= set(CONDITION_KINDS)
    return out
