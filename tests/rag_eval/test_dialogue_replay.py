"""Replay: the transcript records each turn beside its label, the simulator's reply, retrieval
ids, hint level, candidate vs final and leak flags; failures of the system or the simulator
end the replay as an error outcome; the clarification limit and the script bound the replay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rag_eval.core.contract import ContractError
from rag_eval.dialogue.model import Condition, DialogueItem, ExpectedTurn, KnownFact
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.simulator import LLMStudent
from rag_eval.dialogue.transcript import Transcript

ITEM = DialogueItem(
    id="d-1",
    opening="这个函数的最小值怎么求？",
    expected_turns=(
        ExpectedTurn("clarify", ("interval",)),
        ExpectedTurn("answer", hint_level="reminder"),
        ExpectedTurn("answer", hint_level="approach"),
    ),
    context={"problem": "求 f(x)=x^2-6x+5 的最小值"},
    target_intent="solve_problem",
    known=(KnownFact("function", "f(x)=x^2-6x+5", ("哪个函数",)),),
    conditions=(Condition("interval", ("区间",), "在 [1,4] 上"),),
    follow_ups=("直接告诉我答案",),
    forbidden=("f(3)=-4",),
)


class Scripted:
    """Returns the given replies in order and records what it was called with."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.seen: list[tuple[list[dict[str, str]], dict[str, Any]]] = []

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> Any:
        self.seen.append(([dict(t) for t in turns], dict(context)))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


ASK = {"action": "clarify", "message": "题目给的区间是什么？", "intent": "solve_problem"}
HINT = {
    "action": "answer",
    "message": "先配方，看对称轴。",
    "intent": "solve_problem",
    "hint_level": "reminder",
    "retrieval": {"items": [{"id": "c7"}, {"id": "c2"}]},
}


def test_a_full_replay_is_recorded_turn_by_turn() -> None:
    leak = {
        "action": "answer",
        "message": "看端点。",
        "hint_level": "approach",
        "intent": "solve_problem",
        "candidate": "最小值 f(3) = -4",
        "interception": "rewritten",
    }
    system = Scripted(ASK, HINT, leak)
    t = replay(system, ITEM)
    assert (t.stop, t.finished, t.obtained, t.unanswered, t.required) == (
        "script_end",
        True,
        ("interval",),
        (),
        ("interval",),
    )
    assert [r.number for r in t.turns] == [1, 2, 3]
    first, second, third = t.turns
    assert (first.expected.action, first.action, first.asked, first.student_message) == (
        "clarify",
        "clarify",
        ("interval",),
        ITEM.opening,
    )
    assert first.reply is not None and first.reply.text == "在 [1,4] 上"
    assert (second.action, second.retrieved_ids, second.turn.hint_level if second.turn else None) == (
        "answer",
        ("c7", "c2"),
        "reminder",
    )
    assert second.reply is not None and second.reply.text == "直接告诉我答案"
    assert (third.candidate_leaks, third.final_leaks, third.reply) == (True, False, None)
    assert system.seen[0] == ([{"role": "user", "content": ITEM.opening}], {"problem": "求 f(x)=x^2-6x+5 的最小值"})
    assert [m["role"] for m in system.seen[2][0]] == ["user", "assistant", "user", "assistant", "user"]
    assert system.seen[2][0][-1]["content"] == "直接告诉我答案"
    assert Transcript.from_dict(t.to_dict()) == t


def test_asking_again_for_a_known_fact_is_recorded_as_reasked() -> None:
    t = replay(Scripted({**ASK, "message": "哪个函数？区间呢？"}, HINT, HINT), ITEM)
    assert (t.turns[0].asked, t.turns[0].reasked) == (("function", "interval"), ("function",))
    t = replay(Scripted(ASK, {**ASK, "asked_conditions": ["interval"]}, HINT), ITEM)
    assert t.turns[1].reasked == ("interval",)
    assert t.turns[1].expected.action == "answer"


def test_a_labelled_clarification_already_answered_is_skipped() -> None:
    item = DialogueItem(
        "d-2",
        "有道题不会",
        (ExpectedTurn("clarify", ("book",)), ExpectedTurn("clarify", ("problem",)), ExpectedTurn("answer")),
        conditions=(Condition("book", ("哪一册",), "必修一"), Condition("problem", ("哪道",), "例5")),
    )
    t = replay(
        Scripted({"action": "clarify", "message": "哪一册哪道题？"}, {"action": "answer", "message": "提示"}), item
    )
    assert [(r.expected.action, r.action) for r in t.turns] == [("clarify", "clarify"), ("answer", "answer")]
    assert t.obtained == ("book", "problem")


def test_a_clarifying_question_past_the_limit_ends_the_replay() -> None:
    item = DialogueItem(
        "d-3",
        "有道题不会",
        (ExpectedTurn("clarify", ("book",)), ExpectedTurn("answer"), ExpectedTurn("answer")),
        conditions=(Condition("book", ("哪一册",), None),),
        follow_ups=("然后呢",),
        clarification_limit=1,
    )
    t = replay(Scripted(ASK, ASK, ASK), item)
    assert (t.stop, len(t.turns), t.unanswered, t.limit) == ("past_limit", 2, (), 1)
    t = replay(Scripted(ASK, ASK, ASK), item, limit=2)  # the third question is past a limit of 2
    assert (t.stop, len(t.turns), t.limit) == ("past_limit", 3, 2)
    t = replay(Scripted(ASK, ASK, ASK), item, limit=3)
    assert (t.stop, len(t.turns), t.limit) == ("script_end", 3, 3)


def test_the_student_having_nothing_more_to_say_ends_the_replay() -> None:
    item = DialogueItem(
        "d-4", "什么是顶点式？", (ExpectedTurn("answer"), ExpectedTurn("answer")), follow_ups=("再说说",)
    )
    t = replay(Scripted({**ASK, "action": "state_limits"}, {**ASK, "action": "state_limits"}), item)
    assert (t.stop, len(t.turns)) == ("script_end", 2)
    item = DialogueItem(
        "d-5", "什么是顶点式？", (ExpectedTurn("clarify"), ExpectedTurn("answer"), ExpectedTurn("answer"))
    )
    t = replay(Scripted(HINT, HINT, HINT), item)
    assert (t.stop, len(t.turns)) == ("student_done", 1)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (RuntimeError("index not loaded"), "turn 2: the system raised RuntimeError: index not loaded"),
        ("plain text", "turn 2: the system raised ContractError: dialogue() turn 2 returned str 'plain text'"),
        ({"action": "hint", "message": "m"}, "'action' is 'hint', expected one of clarify, answer, state_limits"),
    ],
)
def test_what_the_system_raises_or_returns_out_of_shape_is_an_error_outcome(reply: Any, message: str) -> None:
    t = replay(Scripted(ASK, reply), ITEM)
    assert (t.stop, t.finished, len(t.turns)) == ("system_error", False, 2)
    assert t.turns[1].turn is None and t.turns[1].error == t.error
    assert t.error is not None and message in t.error


def test_a_failing_simulator_is_an_error_outcome() -> None:
    def broken(messages: Sequence[Mapping[str, str]]) -> str:
        raise ConnectionError("refused")

    t = replay(Scripted(ASK), ITEM, LLMStudent(broken))
    assert (t.stop, t.finished, len(t.turns)) == ("simulator_error", False, 1)
    assert t.error == "turn 1: the LLM student's completion failed: ConnectionError: refused"


def test_an_object_without_a_dialogue_call_is_a_configuration_error() -> None:
    with pytest.raises(ContractError, match="has no dialogue call; implement `def dialogue"):
        replay(object(), ITEM)
