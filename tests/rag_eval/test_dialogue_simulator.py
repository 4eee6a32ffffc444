"""The student simulator: scripted replies to clarifying questions (by name or by keyword,
Chinese and English), known facts repeated, the cannot-answer line, follow-ups in order;
the LLM student words the same decisions through a callable; sessions share no memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from rag_eval.core.dialogue import DialogueTurn
from rag_eval.dialogue.model import Condition, DialogueItem, ExpectedTurn, KnownFact
from rag_eval.dialogue.simulator import LLMStudent, ScriptedStudent, SimulatorError, StudentReply

ITEM = DialogueItem(
    id="d-1",
    opening="例13 怎么做？",
    expected_turns=(
        ExpectedTurn("clarify", ("book",)),
        ExpectedTurn("answer", hint_level="reminder"),
        ExpectedTurn("answer", hint_level="approach"),
        ExpectedTurn("answer"),
    ),
    context={"problem": "…"},
    known=(KnownFact("number", "例13", ("第几题", "which example")),),
    conditions=(
        Condition("book", ("哪一册", "which book"), "选择性必修第二册"),
        Condition("part", ("哪一问", "which part"), None),
    ),
    follow_ups=("再具体一点", "直接给答案"),
)


def clarify(message: str, *names: str) -> DialogueTurn:
    return DialogueTurn("clarify", message, asked_conditions=names)


def test_a_named_condition_gets_its_scripted_reply() -> None:
    session = ScriptedStudent().start(ITEM)
    assert session.reply(clarify("能再说说吗？", "book")) == StudentReply("选择性必修第二册", ("book",), ("book",))


@pytest.mark.parametrize("message", ["这是哪一册的例13？", "Which BOOK is it from?", "哪 一册"])
def test_without_names_the_message_is_matched_against_keywords(message: str) -> None:
    reply = ScriptedStudent().start(ITEM).reply(DialogueTurn("clarify", message))
    assert (reply.text, reply.asked, reply.answered) == ("选择性必修第二册", ("book",), ("book",))


def test_structural_names_win_over_the_message_text() -> None:
    reply = ScriptedStudent().start(ITEM).reply(clarify("哪一册？", "part"))
    assert (reply.asked, reply.unanswerable, reply.text) == (("part",), ("part",), "我不记得了")


def test_what_the_student_cannot_answer_or_does_not_recognise_gets_the_cannot_answer_line() -> None:
    session = ScriptedStudent().start(ITEM)
    assert session.reply(clarify("哪一问？")).text == "我不记得了"
    assert session.reply(clarify("你今天心情如何？")) == StudentReply("我不记得了")
    both = session.reply(clarify("哪一册哪一问？"))
    assert (both.text, both.answered, both.unanswerable) == ("选择性必修第二册 我不记得了", ("book",), ("part",))
    english = DialogueItem("d-2", "Which rule do I use?", ITEM.expected_turns, conditions=ITEM.conditions)
    assert ScriptedStudent().start(english).reply(clarify("which part?")).text == "I don't remember"
    custom = DialogueItem("d-3", "例13？", ITEM.expected_turns, conditions=ITEM.conditions, cannot_answer="想不起来了")
    assert ScriptedStudent().start(custom).reply(clarify("哪一问？")).text == "想不起来了"


def test_asked_again_the_student_repeats_itself_and_it_is_marked_repeated() -> None:
    session = ScriptedStudent().start(ITEM)
    session.reply(clarify("哪一册？"))
    again = session.reply(clarify("第几题，哪一册来着？"))
    assert (again.text, again.answered, again.repeated) == ("例13 选择性必修第二册", (), ("number", "book"))


def test_after_an_answer_the_follow_ups_come_in_order_then_nothing() -> None:
    session = ScriptedStudent().start(ITEM)
    answer = DialogueTurn("answer", "先想想公比。")
    assert session.reply(answer) == StudentReply("再具体一点", follow_up=0)
    assert session.reply(DialogueTurn("state_limits", "没有材料。")) == StudentReply("直接给答案", follow_up=1)
    assert session.reply(answer) == StudentReply(None)


def test_sessions_share_no_memory() -> None:
    student = ScriptedStudent()
    first = student.start(ITEM)
    first.reply(DialogueTurn("answer", "提示"))
    first.reply(clarify("哪一册？"))
    second = student.start(ITEM)
    assert second.reply(DialogueTurn("answer", "提示")).follow_up == 0
    assert second.reply(clarify("哪一册？")).answered == ("book",)


class FakeCompletion:
    """Records what it was sent; answers from a queue."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[list[dict[str, str]]] = []

    def __call__(self, messages: Sequence[Mapping[str, str]]) -> str:
        self.calls.append([dict(m) for m in messages])
        return self.answers.pop(0)


def test_the_llm_student_words_the_scripted_decision() -> None:
    complete = FakeCompletion("哦，是选择性必修第二册上的。", "还是不太懂，能再讲细点吗")
    session = LLMStudent(complete).start(ITEM)
    reply = session.reply(clarify("哪一册？", "book"))
    assert reply == StudentReply("哦，是选择性必修第二册上的。", ("book",), ("book",))
    system, opening, tutor = complete.calls[0]
    assert (
        system["role"] == "system" and "CONTENT to convey in your next message: 选择性必修第二册" in system["content"]
    )
    assert "problem: …" in system["content"]
    assert (opening, tutor) == (
        {"role": "assistant", "content": "例13 怎么做？"},
        {"role": "user", "content": "哪一册？"},
    )
    second = session.reply(DialogueTurn("answer", "先想想公比。"))
    assert (second.text, second.follow_up) == ("还是不太懂，能再讲细点吗", 0)
    assert [m["role"] for m in complete.calls[1]] == ["system", "assistant", "user", "assistant", "user"]


def test_the_llm_student_is_not_called_when_there_is_nothing_to_say() -> None:
    complete = FakeCompletion()
    session = LLMStudent(complete).start(DialogueItem("d-4", "hi", (ExpectedTurn("answer"),)))
    assert session.reply(DialogueTurn("answer", "hint")) == StudentReply(None)
    assert complete.calls == []


def test_llm_sessions_share_no_memory() -> None:
    complete = FakeCompletion("一", "二")
    student = LLMStudent(complete)
    student.start(ITEM).reply(clarify("哪一册？", "book"))
    student.start(ITEM).reply(clarify("哪一册？", "book"))
    assert len(complete.calls[1]) == len(complete.calls[0]) == 3


@pytest.mark.parametrize("answer", ["", "   "])
def test_an_empty_completion_is_a_simulator_error(answer: str) -> None:
    with pytest.raises(SimulatorError, match="returned no text"):
        LLMStudent(FakeCompletion(answer)).start(ITEM).reply(clarify("哪一册？", "book"))


def test_a_failing_completion_is_a_simulator_error() -> None:
    def broken(messages: Sequence[Mapping[str, str]]) -> str:
        raise TimeoutError("read timed out")

    with pytest.raises(SimulatorError, match="completion failed: TimeoutError: read timed out"):
        LLMStudent(broken).start(ITEM).reply(clarify("哪一册？", "book"))
