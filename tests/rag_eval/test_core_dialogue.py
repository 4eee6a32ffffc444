"""The dialogue call's records: the mapping form is accepted, a wrong shape is a ContractError
that shows what came back and the expected shape, and records round-trip through to_dict."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval.core.contract import ContractError, Retrieval, RetrievedItem
from rag_eval.core.dialogue import DialogueRequest, DialogueTurn, as_dialogue_turn


def test_the_mapping_form_becomes_a_dialogue_turn() -> None:
    turn = as_dialogue_turn(
        {
            "action": "answer",
            "message": "先回忆顶点式。",
            "intent": "solve_problem",
            "hint_level": "reminder",
            "retrieval": {"items": [{"id": "c1", "text": "顶点式", "score": 0.5, "metadata": {"doc_id": "bixiu1"}}]},
            "candidate": "答案是 -4",
            "interception": "rewritten",
            "extra": "ignored",
        }
    )
    assert turn == DialogueTurn(
        "answer",
        "先回忆顶点式。",
        "solve_problem",
        (),
        "reminder",
        Retrieval((RetrievedItem("c1", "顶点式", 0.5, {"doc_id": "bixiu1"}),)),
        "答案是 -4",
        "rewritten",
    )
    assert turn.candidate_text == "答案是 -4"
    assert DialogueTurn("clarify", "哪道题？").candidate_text == "哪道题？"


def test_a_dialogue_turn_round_trips() -> None:
    turn = DialogueTurn("clarify", "区间是什么？", "solve_problem", ("interval",))
    assert as_dialogue_turn(turn) is turn
    assert DialogueTurn.from_dict(turn.to_dict()) == turn


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("just text", "returned str 'just text'; expected DialogueTurn("),
        ({"message": "hi"}, "'action' is None, expected one of clarify, answer, state_limits"),
        ({"action": "answer"}, "mapping has no string 'message'"),
        (
            {"action": "answer", "message": "m", "hint_level": "full"},
            "'hint_level' is 'full', expected one of reminder, approach, wrong_direction",
        ),
        (
            {"action": "answer", "message": "m", "interception": True},
            "'interception' is True, expected one of blocked, rewritten",
        ),
        (
            {"action": "clarify", "message": "m", "asked_conditions": "book"},
            "'asked_conditions' must be a list of condition names",
        ),
        ({"action": "answer", "message": "m", "candidate": 3}, "'candidate' must be the reply before interception"),
        ({"action": "answer", "message": "m", "retrieval": {"hits": []}}, "mapping has no 'items' list"),
    ],
)
def test_a_wrong_shape_names_what_came_back_and_the_fix(raw: Any, message: str) -> None:
    with pytest.raises(ContractError) as info:
        as_dialogue_turn(raw, "tutor.dialogue() turn 2")
    assert str(info.value).startswith("tutor.dialogue() turn 2")
    assert message in str(info.value)


def test_a_request_round_trips_and_checks_its_turns() -> None:
    request = DialogueRequest(({"role": "user", "content": "例13 怎么做"},), {"problem": "…"})
    assert DialogueRequest.from_dict(request.to_dict()) == request
    with pytest.raises(ContractError, match="'turns' must be a list of"):
        DialogueRequest.from_dict({"turns": [{"role": "tutor", "content": "x"}]})
