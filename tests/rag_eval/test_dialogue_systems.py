"""Scripted Python tutors over the demo dialogue set: each faulty tutor moves exactly the
metric it should, and its cases fail at the step it gets wrong; the faithful tutor passes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rag_eval.dialogue.metrics import compute_all
from rag_eval.dialogue.model import DialogueItem
from rag_eval.dialogue.rate import Rate
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.transcript import Transcript
from rag_eval.dialogue.verdict import verdict
from tests.rag_eval._dialogue_systems import (
    HintBlocker,
    Interceptor,
    Leaker,
    NeverClarifier,
    OracleTutor,
    OverClarifier,
    Reasker,
    demo_items,
)

ITEMS = demo_items()


def run(tutor: Callable[[list[DialogueItem]], OracleTutor]) -> list[Transcript]:
    system = tutor(ITEMS)
    return [replay(system, item) for item in ITEMS]


def values(transcripts: list[Transcript]) -> dict[str, float | None]:
    return {name: rate.value for name, rate in compute_all(transcripts).items()}


BASELINE = values(run(OracleTutor))


def moved(transcripts: list[Transcript]) -> dict[str, tuple[float | None, float | None]]:
    now = values(transcripts)
    return {k: (BASELINE[k], v) for k, v in now.items() if v != BASELINE[k]}


def scenario_ids(scenario: str) -> set[str]:
    return {i.id for i in ITEMS if i.tags.get("scenario") == scenario}


def test_the_faithful_tutor_scores_perfectly_and_passes_every_case() -> None:
    transcripts = run(OracleTutor)
    rates = compute_all(transcripts)
    # 20 dialogues need clarification and are judged; the 5 cannot-answer ones are listed apart
    assert (rates["clarification_failure_3"].numerator, rates["clarification_failure_3"].denominator) == (0, 20)
    assert rates["clarification_failure_3"].excluded == {
        "student_did_not_answer": tuple(sorted(scenario_ids("cannot-answer")))
    }
    assert BASELINE == {
        "intent_accuracy": 1.0,
        "missed_clarification_rate": 0.0,
        "over_clarification_rate": 0.0,
        "clarification_failure_3": 0.0,
        "past_3_rounds": 0.0,
        "hint_level_accuracy": 1.0,
        "interception_rate": None,  # nothing leaked, so nothing had to be intercepted: absent, not 0
        "false_interception_rate": 0.0,
        "final_leak_rate": 0.0,
    }
    assert [v.message for v in map(verdict, transcripts) if not v.passed] == []


def test_asking_when_the_concept_is_clear_moves_only_over_clarification() -> None:
    transcripts = run(OverClarifier)
    # the first turn of the 10 dialogues that need no clarification (concept + full-answer pushes),
    # out of 51 turns labelled answer
    assert moved(transcripts) == {"over_clarification_rate": (0.0, 10 / 51)}
    failing = {v.dialogue_id: v for v in map(verdict, transcripts) if not v.passed}
    assert set(failing) == scenario_ids("concept-no-id") | scenario_ids("full-answer-push")
    assert (
        failing["dlg-concept-001"].message
        == "clarification failed at turn 1: expected answer, the system asked a clarifying question"
    )


def test_never_asking_moves_missed_clarification_and_clarification_failure() -> None:
    transcripts = run(NeverClarifier)
    assert moved(transcripts) == {
        # every one of the 25 first turns labelled clarify was answered instead
        "missed_clarification_rate": (0.0, 25 / 25),
        # never asked, so no student failed to answer: all 25 are judged, all failed
        "clarification_failure_3": (0.0, 25 / 25),
        # no dialogue with a clarifying question is left: the share is absent, not 0
        "past_3_rounds": (0.0, None),
    }
    v = verdict(transcripts[[i.id for i in ITEMS].index("dlg-missing-001")])
    assert (v.step, v.turn) == ("clarification", 1)
    assert v.message.startswith(
        "clarification failed at turn 1: expected clarify (ask for 'interval'), the system answered"
    )


def test_asking_again_for_what_the_student_gave_moves_only_over_clarification() -> None:
    transcripts = run(Reasker)
    # 19 dialogues with one or two labelled rounds re-ask on the turn after; 51 turns labelled answer
    assert moved(transcripts) == {"over_clarification_rate": (0.0, 19 / 51)}
    t = transcripts[[i.id for i in ITEMS].index("dlg-missing-001")]
    assert t.turns[1].reasked == ("interval",)
    assert verdict(t).message == (
        "clarification failed at turn 2: expected answer, the system asked a clarifying question "
        "(asking again for 'interval', which the student had already given)"
    )


def test_leaking_after_the_second_demand_moves_the_leak_and_interception_rates() -> None:
    transcripts = run(Leaker)
    # 4 pushes with two demands leak at turn 3: 4 of the 16 final outputs of dialogues with forbidden content;
    # those 4 candidates had to be intercepted and none was
    assert moved(transcripts) == {"final_leak_rate": (0.0, 4 / 16), "interception_rate": (None, 0 / 4)}
    v = verdict(transcripts[[i.id for i in ITEMS].index("dlg-push-001")])
    assert (
        v.message
        == "interception failed at turn 3: the candidate reply shows forbidden content and was not intercepted"
    )


def test_intercepting_the_leak_keeps_the_final_replies_clean() -> None:
    transcripts = run(Interceptor)
    assert moved(transcripts) == {"interception_rate": (None, 4 / 4)}
    assert all(map(lambda t: verdict(t).passed, transcripts))


def test_blocking_a_normal_hint_moves_only_false_interception() -> None:
    transcripts = run(HintBlocker)
    # the first hint of each of the 34 dialogues that hint, out of 51 normal hints
    assert moved(transcripts) == {"false_interception_rate": (0.0, 34 / 51)}
    v = verdict(transcripts[[i.id for i in ITEMS].index("dlg-concept-001")])
    assert v.message == "interception failed at turn 1: a normal hint (no forbidden content) was blocked"


@pytest.mark.parametrize("name", list(BASELINE))
def test_every_rate_carries_its_arithmetic(name: str) -> None:
    rate = compute_all(run(OracleTutor))[name]
    assert isinstance(rate, Rate) and rate.n == len(ITEMS)
    assert rate.value == (rate.numerator / rate.denominator if rate.denominator else None)
