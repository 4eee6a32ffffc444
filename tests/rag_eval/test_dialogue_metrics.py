"""Dialogue metrics on hand-built transcripts: every rate's numerator and denominator written
out as arithmetic; absent (never 0) when nothing is counted; exclusions listed by reason."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval.core.dialogue import DialogueTurn
from rag_eval.dialogue.metrics import (
    HintVerdict,
    clarification_failure,
    compute_all,
    decision_turn,
    false_interception_rate,
    final_leak_rate,
    hint_level_accuracy,
    hint_success,
    intent_accuracy,
    interception_rate,
    judge_hints,
    missed_clarification_rate,
    over_clarification_rate,
    past_limit_rounds,
)
from rag_eval.dialogue.model import ExpectedTurn
from rag_eval.dialogue.rate import Rate
from rag_eval.dialogue.simulator import StudentReply
from rag_eval.dialogue.transcript import Transcript, TurnRecord


def turn(
    n: int,
    expected: str,
    actual: str | None,
    *,
    label: str | None = "solve",
    intent: str | None = "solve",
    level: str | None = None,
    got_level: str | None = None,
    answered: tuple[str, ...] = (),
    leak_candidate: bool = False,
    leak_final: bool = False,
    interception: Any = None,
) -> TurnRecord:
    reply = StudentReply("…", answered=answered)
    system = DialogueTurn(actual, "…", intent, hint_level=got_level, interception=interception) if actual else None  # type: ignore[arg-type]
    return TurnRecord(
        n,
        ExpectedTurn(expected, hint_level=level),
        label,
        "…",
        system,  # type: ignore[arg-type]
        candidate_leaks=leak_candidate,
        final_leaks=leak_final,
        reply=reply,
        error=None if actual else "boom",
    )


def transcript(
    id: str,
    *turns: TurnRecord,
    stop: str = "script_end",
    required: tuple[str, ...] = (),
    unanswered: tuple[str, ...] = (),
    material: bool = True,
    forbidden: bool = False,
    target: str | None = "solve",
    guided: bool = False,
) -> Transcript:
    return Transcript(
        id,
        turns,
        stop,
        3,
        required=required,
        unanswered=unanswered,
        target_intent=target,  # type: ignore[arg-type]
        material_sufficient=material,
        has_forbidden=forbidden,
        needs_clarification=any(t.expected.action == "clarify" for t in turns),
        should_be_guided=guided,
    )


def expect(rate: Rate, numerator: float, denominator: int, value: float | None) -> None:
    assert (rate.numerator, rate.denominator) == (numerator, denominator)
    assert rate.value == value


# d1: asks then answers twice; d2: never asks; d3: asks on an answer turn; d4: broke at turn 2.
D1 = transcript(
    "d1",
    turn(1, "clarify", "clarify", answered=("interval",)),
    turn(2, "answer", "answer", level="reminder", got_level="reminder"),
    turn(3, "answer", "answer", level="approach", got_level="wrong_direction", intent="concept"),
    required=("interval",),
    guided=True,
)
D2 = transcript(
    "d2",
    turn(1, "clarify", "answer", intent=None),
    turn(2, "answer", "answer", label=None, level="reminder", got_level="reminder"),
    required=("book",),
    guided=True,
)
D3 = transcript(
    "d3",
    turn(1, "answer", "clarify", level="reminder"),
    turn(2, "answer", "answer", level="reminder", got_level="reminder"),
)
D4 = transcript("d4", turn(1, "clarify", "clarify"), turn(2, "answer", None), stop="system_error", required=("book",))
ALL = [D1, D2, D3, D4]


def test_intent_accuracy() -> None:
    # labelled turns of finished replays: d1 t1,t2,t3 + d2 t1 + d3 t1,t2 = 6; right: d1 t1,t2 + d3 t1,t2 = 4
    rate = intent_accuracy(ALL)
    expect(rate, 4, 3 + 1 + 2, 4 / 6)
    assert rate.n == 3 and rate.excluded == {"not_finished": ("d4",)}


def test_missed_clarification_rate() -> None:
    # turns labelled clarify: d1 t1, d2 t1 = 2; answered straight away: d2 t1 = 1
    expect(missed_clarification_rate(ALL), 1, 1 + 1, 1 / 2)


def test_over_clarification_rate() -> None:
    # turns labelled answer: d1 t2,t3 + d2 t2 + d3 t1,t2 = 5; asked anyway: d3 t1 = 1
    expect(over_clarification_rate(ALL), 1, 2 + 1 + 2, 1 / 5)


def test_hint_level_accuracy() -> None:
    # labelled turns the system answered: d1 t2,t3 + d2 t2 + d3 t2 = 4 (d3 t1 asked: no level to compare); right: 3
    expect(hint_level_accuracy(ALL), 3, 2 + 1 + 1, 3 / 4)


def test_interception_rates_and_final_leaks() -> None:
    caught = transcript(
        "i1", turn(1, "answer", "answer", leak_candidate=True, interception="rewritten"), forbidden=True
    )
    slipped = transcript("i2", turn(1, "answer", "answer", leak_candidate=True, leak_final=True), forbidden=True)
    rewritten_but_leaks = transcript(
        "i3",
        turn(1, "answer", "answer", leak_candidate=True, interception="rewritten", leak_final=True),
        forbidden=True,
    )
    blocked_hint = transcript("i4", turn(1, "answer", "answer", interception="blocked"), turn(2, "answer", "answer"))
    ts = [caught, slipped, rewritten_but_leaks, blocked_hint]
    # must-intercept candidates: i1, i2, i3 = 3; intercepted and the final reply clean: i1 = 1
    expect(interception_rate(ts), 1, 3, 1 / 3)
    # normal hints (answer turns whose candidate is clean): i4 t1, i4 t2 = 2; blocked: i4 t1 = 1
    expect(false_interception_rate(ts), 1, 2, 1 / 2)
    # final outputs of dialogues with forbidden content: i1, i2, i3 = 3; leaking: i2, i3 = 2
    expect(final_leak_rate(ts), 2, 3, 2 / 3)


def test_a_rate_with_nothing_to_count_is_absent_not_zero() -> None:
    rate = interception_rate(ALL)
    expect(rate, 0, 0, None)
    assert Rate.from_dict(rate.to_dict()) == rate
    assert rate.to_dict()["value"] is None


def test_clarification_failure_within_three_rounds() -> None:
    # judged: d1 (got interval, intent right at turn 2: success), d2 (answered at once without the book: failure),
    # limits (said what is missing: not a failure), wrong_target (all conditions, intent wrong: failure) = 4
    limits = transcript(
        "limits", turn(1, "clarify", "clarify"), turn(2, "state_limits", "state_limits"), required=("book",)
    )
    wrong_target = transcript(
        "wrong_target",
        turn(1, "clarify", "clarify", answered=("book",)),
        turn(2, "answer", "answer", intent="concept"),
        required=("book",),
    )
    no_reply = transcript(
        "no_reply", turn(1, "clarify", "clarify"), turn(2, "answer", "answer"), required=("book",), unanswered=("book",)
    )
    no_material = transcript(
        "no_material",
        turn(1, "clarify", "clarify", answered=("book",)),
        turn(2, "state_limits", "answer"),
        required=("book",),
        material=False,
    )
    concept = transcript("concept", turn(1, "answer", "answer"))
    rate = clarification_failure([D1, D2, D4, limits, wrong_target, no_reply, no_material, concept])
    expect(rate, 1 + 1, 4, 2 / 4)
    assert rate.name == "clarification_failure_3"
    assert rate.excluded == {
        "not_finished": ("d4",),
        "student_did_not_answer": ("no_reply",),
        "material_insufficient": ("no_material",),
    }


def test_the_decision_turn_is_the_first_that_does_not_ask_or_the_one_past_the_limit() -> None:
    four = transcript(
        "four",
        *(turn(i, "clarify", "clarify", answered=("book",) if i == 1 else ()) for i in (1, 2, 3)),
        turn(4, "answer", "clarify"),
        required=("book",),
        stop="past_limit",
    )
    decision = decision_turn(four)
    assert decision is not None and decision.number == 4
    # it got the book in round 1 and its intent is right, so it is not a failure; it is past 3 rounds
    expect(clarification_failure([four]), 0, 1, 0.0)
    assert decision_turn(transcript("empty")) is None


def test_share_past_three_rounds() -> None:
    four = transcript("four", *(turn(i, "clarify", "clarify") for i in (1, 2, 3, 4)), stop="past_limit")
    three = transcript(
        "three", *(turn(i, "clarify", "clarify") for i in (1, 2, 3)), turn(4, "state_limits", "state_limits")
    )
    # dialogues that clarified at least once: d1, d3, four, three = 4 (d2 never asked, d4 did not finish); with a 4th question: four = 1
    rate = past_limit_rounds([D1, D2, D3, D4, four, three])
    expect(rate, 1, 4, 1 / 4)
    assert rate.name == "past_3_rounds"
    assert past_limit_rounds([four], limit=4).name == "past_4_rounds"
    expect(past_limit_rounds([four], limit=4), 0, 1, 0.0)


def test_hint_success_needs_verdicts_and_keeps_judge_errors_in_the_denominator() -> None:
    verdicts = {"d1": HintVerdict(True), "d2": HintVerdict(None, "judge timed out")}
    d5 = transcript("d5", turn(1, "answer", "answer", level="reminder", got_level="reminder"), guided=True)
    rate = hint_success([D1, D2, D3, D4, d5], verdicts)
    # should be guided: d1, d2, d5; judged: d1, d2 = 2 (d5 has no verdict: listed apart); successful: d1 = 1
    expect(rate, 1, 2, 1 / 2)
    assert rate.errors == ("d2",)
    assert rate.excluded == {"not_finished": ("d4",), "not_judged": ("d5",)}
    assert "hint_success" not in compute_all(ALL)
    assert compute_all([D1, D2, D3, D4, d5], hint_verdicts=verdicts)["hint_success"] == rate


def test_judge_hints_turns_a_raising_judge_into_an_error_verdict() -> None:
    def judge(t: Transcript) -> HintVerdict:
        if t.dialogue_id == "d2":
            raise ValueError("unparseable verdict")
        return HintVerdict(True, "fine")

    verdicts = judge_hints(ALL, judge)
    assert verdicts == {
        "d1": HintVerdict(True, "fine"),
        "d2": HintVerdict(None, "judge error: ValueError: unparseable verdict"),
    }


def test_compute_all_names_every_metric() -> None:
    assert list(compute_all(ALL)) == [
        "intent_accuracy",
        "missed_clarification_rate",
        "over_clarification_rate",
        "clarification_failure_3",
        "past_3_rounds",
        "hint_level_accuracy",
        "interception_rate",
        "false_interception_rate",
        "final_leak_rate",
    ]


@pytest.mark.parametrize("limit", [1, 5])
def test_the_limit_is_a_parameter(limit: int) -> None:
    assert f"clarification_failure_{limit}" in compute_all(ALL, limit=limit)
