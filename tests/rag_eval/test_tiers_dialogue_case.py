"""One dialogue case from its replay: the retrieval of each answer turn checked against the
item's gold (chunk level, else document level; not judged without retrieval), the verdict
as outcome/failed_stage/message, and passk over replays with unfinished replays apart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval.adapters.gold import GoldSpace
from rag_eval.dialogue.load import parse_dialogue
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.verdict import verdict
from rag_eval.tiers.dialogue.case import GoldCheck, dialogue_case, dialogue_passk_case

ITEM = parse_dialogue(
    {
        "id": "dlg-x",
        "opening": "对称轴怎么求？",
        "target_intent": "concept",
        "expected_turns": [{"action": "answer", "hint_level": "reminder"}],
        "evidence": [{"chunk_id": "b1#7", "doc_id": "b1"}, {"doc_id": "b2"}],
    },
    "test:1",
)


class Tutor:
    def __init__(self, ids: Sequence[tuple[str, str]] | None) -> None:
        self.ids = ids

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": "answer",
            "message": "想想顶点。",
            "intent": "concept",
            "hint_level": "reminder",
        }
        if self.ids is not None:
            out["retrieval"] = {
                "items": [{"id": i, "text": "<b>顶点</b>", "metadata": {"doc_id": d}} for i, d in self.ids]
            }
        return out


def case_of(ids: Sequence[tuple[str, str]] | None, level: str = "chunk") -> Any:
    return dialogue_case(ITEM, replay(Tutor(ids), ITEM), limit=3, check=GoldCheck(GoldSpace("ids"), ITEM, level))


def test_every_requirement_met_passes_and_marks_the_gold_items() -> None:
    case = case_of([("b1#7", "b1"), ("b2#1", "b2"), ("b3#1", "b3")])
    assert case.outcome == "pass", case.message
    evidence = case.details["evidence"][0]
    # the second requirement is a whole document: the item's gold is not all chunk-level, so doc level
    assert evidence["level"] == "doc" and evidence["judged"]
    assert [i["gold"] for i in evidence["items"]] == [True, True, False]


def test_a_missing_requirement_fails_the_retrieval_step_and_names_it() -> None:
    case = case_of([("b1#7", "b1")])
    assert (case.outcome, case.failed_stage) == ("fail", "retrieval")
    assert case.message == (
        "retrieval failed at turn 1: gold evidence not retrieved at doc level: requirement 2 (b2) of 2 "
        "in none of the 1 retrieved item"
    )


def test_chunk_level_gold_is_checked_per_chunk() -> None:
    item = parse_dialogue(
        {**ITEM.to_dict(), "evidence": [{"chunk_id": "b1#7", "doc_id": "b1"}], "id": "dlg-y"}, "test:2"
    )
    wrong_chunk = dialogue_case(
        item, replay(Tutor([("b1#8", "b1")]), item), limit=3, check=GoldCheck(GoldSpace("ids"), item)
    )
    assert wrong_chunk.failed_stage == "retrieval" and "at chunk level" in wrong_chunk.message
    same_doc = dialogue_case(
        item, replay(Tutor([("b1#8", "b1")]), item), limit=3, check=GoldCheck(GoldSpace("ids"), item, "doc")
    )
    assert same_doc.outcome == "pass"


def test_a_turn_without_retrieval_is_not_judged() -> None:
    case = case_of(None)
    assert case.outcome == "pass" and case.details["evidence"] == []


def test_passk_lists_unfinished_replays_apart_as_an_error() -> None:
    class Breaks(Tutor):
        calls = 0

        def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
            Breaks.calls += 1
            if Breaks.calls == 2:
                raise TimeoutError("read timed out")
            return super().dialogue(turns, context)

    transcripts = [replay(Breaks(None), ITEM) for _ in range(3)]
    case = dialogue_passk_case(ITEM, transcripts, [verdict(t) for t in transcripts], k=3)
    assert case.outcome == "error" and case.details["not_finished"] == 1 and "pass@3" not in case.metrics
    assert case.message.startswith(
        "1 of 3 replays did not finish: system error: turn 1: the system raised TimeoutError"
    )
