"""Case verdicts: the earliest failing step in the order clarification → retrieval → hint →
interception, with the turn and a message that reads on its own; errors are never passes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval.dialogue.metrics import HintVerdict
from rag_eval.dialogue.model import Condition, DialogueItem, ExpectedTurn
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.transcript import Transcript, TurnRecord
from rag_eval.dialogue.verdict import CaseVerdict, verdict

ITEM = DialogueItem(
    id="d-1",
    opening="例13 怎么做？",
    expected_turns=(
        ExpectedTurn("clarify", ("book",)),
        ExpectedTurn("answer", hint_level="reminder"),
        ExpectedTurn("answer", hint_level="approach"),
    ),
    target_intent="solve_problem",
    conditions=(Condition("book", ("哪一册",), "选择性必修第二册"),),
    follow_ups=("直接给答案",),
    forbidden=("q=-\\frac12",),
)


class Tutor:
    def __init__(self, *replies: dict[str, Any]) -> None:
        self.replies = list(replies)

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
        return self.replies.pop(0)


ASK = {"action": "clarify", "message": "哪一册的例13？", "intent": "solve_problem"}


def hint(level: str, message: str = "先分 q=1 和 q≠1 讨论。", **extra: Any) -> dict[str, Any]:
    return {
        "action": "answer",
        "message": message,
        "intent": "solve_problem",
        "hint_level": level,
        "retrieval": {"items": [{"id": "x2#13"}]},
        **extra,
    }


def gold_in(ids: set[str]) -> Any:
    def check(t: Transcript, r: TurnRecord) -> str | None:
        return (
            None if ids & set(r.retrieved_ids) else f"gold chunk x2#13 not in the {len(r.retrieved_ids)} items returned"
        )

    return check


def test_a_good_dialogue_passes() -> None:
    v = verdict(replay(Tutor(ASK, hint("reminder"), hint("approach")), ITEM), retrieval_check=gold_in({"x2#13"}))
    assert v == CaseVerdict("d-1", "pass", "all 3 turns as expected")
    assert CaseVerdict.from_dict(v.to_dict()) == v


def test_the_earliest_step_wins_over_the_earliest_turn() -> None:
    # turn 2 leaks (interception), turn 3 chooses the wrong level (hint): hint comes first in the chain
    t = replay(Tutor(ASK, hint("reminder", "q=-1/2 对吗？其实 q = -\\frac12"), hint("wrong_direction")), ITEM)
    v = verdict(t)
    assert (v.outcome, v.step, v.turn) == ("fail", "hint", 3)
    assert (
        v.message
        == "hint failed at turn 3: hint level expected 'approach', the system chose 'wrong_direction' (+1 more finding)"
    )
    assert [(f.step, f.turn) for f in v.findings] == [("hint", 3), ("interception", 2)]


def test_retrieval_is_checked_by_the_callers_gold_check() -> None:
    t = replay(Tutor(ASK, hint("reminder"), hint("approach")), ITEM)
    v = verdict(t, retrieval_check=gold_in({"x2#99"}))
    assert v.message == "retrieval failed at turn 2: gold chunk x2#13 not in the 1 items returned (+1 more finding)"
    assert verdict(t).passed  # without a check the retrieval step is not judged


def test_clarification_findings() -> None:
    wrong_intent = verdict(replay(Tutor({**ASK, "intent": "concept"}, hint("reminder"), hint("approach")), ITEM))
    assert (
        wrong_intent.message
        == "clarification failed at turn 1: intent expected 'solve_problem', the system recognised 'concept'"
    )
    off_target = verdict(replay(Tutor({**ASK, "message": "你喜欢数学吗？"}, hint("reminder"), hint("approach")), ITEM))
    assert off_target.message.startswith(
        "clarification failed at turn 1: asked for nothing the item knows, not for what is missing ('book')"
    )
    no_intent = verdict(replay(Tutor({**ASK, "intent": None}, hint("reminder"), hint("approach")), ITEM))
    assert no_intent.message.endswith("the system recognised no intent")


def test_past_the_limit_is_a_clarification_failure() -> None:
    item = DialogueItem(
        "d-2",
        "有道题",
        (ExpectedTurn("clarify", ("book",)), ExpectedTurn("state_limits")),
        conditions=(Condition("book", ("哪一册",), None),),
        clarification_limit=1,
    )
    v = verdict(replay(Tutor(ASK, ASK), item))
    assert [f.message for f in v.findings] == [
        "expected state_limits, the system asked a clarifying question",
        "a clarifying question after 1 rounds (the limit); say what is missing instead",
    ]


def test_the_hint_judge_counts_when_given() -> None:
    t = replay(Tutor(ASK, hint("reminder"), hint("approach")), ITEM)
    assert verdict(t, hint=HintVerdict(True)).passed
    v = verdict(t, hint=HintVerdict(False, "the hint gave the answer away"))
    assert v.message == "hint failed: the hint judge found the hints unsuccessful: the hint gave the answer away"
    assert verdict(t, hint=HintVerdict(None)).message == "hint failed: the hint judge failed"


def test_an_unfinished_replay_is_an_error_never_a_pass() -> None:
    class Broken:
        def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> Any:
            raise TimeoutError("no answer in 30 s")

    v = verdict(replay(Broken(), ITEM))
    assert (v.outcome, v.step, v.turn, v.passed) == ("error", "system", 1, False)
    assert v.message == "system error: turn 1: the system raised TimeoutError: no answer in 30 s"
