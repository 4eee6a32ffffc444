"""The per-tier Details dataclasses and the results schema's ``$defs`` say the same thing:
every schema property is a field (under its JSON name), every required property is a
field that is always written, and a to_dict/from_dict round trip is exact."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.metrics.deterministic import CheckResult
from rag_eval.tiers.deterministic.details import ContextShown, DeterministicDetails
from rag_eval.tiers.dialogue.details import DialogueDetails, DialoguePasskDetails
from rag_eval.tiers.judge.details import JudgeDetails
from rag_eval.tiers.passk.details import PasskDetails, TrialOutcome
from rag_eval.tiers.retrieval.details import GoldView, RetrievalDetails

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "rag_eval" / "results.schema.json").read_text(encoding="utf-8")
)
JSON_NAMES = {"cls": "class"}  # a field whose JSON key is a Python keyword
NOT_WRITTEN = {"judged"}  # fields that only say whether another one is written
# (dataclass, its $defs entry, the fields to_dict leaves out when unset)
DETAILS: list[tuple[type, str, frozenset[str]]] = [
    (TrialOutcome, "trial", frozenset()),
    (PasskDetails, "passkDetails", frozenset({"usage", "c", "class"})),
    (RetrievalDetails, "retrievalDetails", frozenset({"absent", "gold_ranks", "measured_only"})),
    (DeterministicDetails, "deterministicDetails", frozenset()),
    (
        JudgeDetails,
        "judgeDetails",
        frozenset({"generator", "judge", "judge_calls", "judge_mode", "usage", "usage_note"}),
    ),
    (DialogueDetails, "dialogueDetails", frozenset({"usage", "hint_verdict"})),
    (
        DialoguePasskDetails,
        "dialoguePasskDetails",
        frozenset({"simulator", "clarification_limit", "usage", "c", "class"}),
    ),
]
# every tier's details may carry these (schema $defs/commonDetails), so no $defs entry repeats them
COMMON = frozenset(SCHEMA["$defs"]["commonDetails"]["properties"])


def _properties(name: str) -> tuple[set[str], set[str]]:
    """A $defs entry's properties and required ones, with those of the entries it extends (allOf)."""
    schema: dict[str, Any] = SCHEMA["$defs"][name]
    properties, required = set(schema["properties"]), set(schema.get("required", ()))
    for part in schema.get("allOf", ()):
        more, more_required = _properties(part["$ref"].rsplit("/", 1)[1])
        properties |= more
        required |= more_required
    return properties, required


def _fields(cls: type) -> set[str]:
    return {JSON_NAMES.get(f.name, f.name) for f in dataclasses.fields(cls) if f.name not in NOT_WRITTEN}


@pytest.mark.parametrize(("cls", "name", "optional"), DETAILS, ids=[d[1] for d in DETAILS])
def test_fields_match_the_schema(cls: type, name: str, optional: frozenset[str]) -> None:
    properties, required = _properties(name)
    fields = _fields(cls)
    assert properties - fields == set(), f"$defs/{name} has properties no {cls.__name__} field writes"
    assert fields - properties - COMMON == set(), f"{cls.__name__} writes fields $defs/{name} does not know"
    assert required <= fields - optional, f"$defs/{name} requires fields {cls.__name__} may leave out"


def test_passk_details_round_trip_and_written_keys() -> None:
    trials = (TrialOutcome(0, "pass", None, "", "2^n"), TrialOutcome(1, "fail", "generation", "no", "n^2"))
    full = PasskDetails(
        trials, n=2, k=1, trials_run=2, deterministic_generator=False, usage={"calls": 2}, c=1, cls="flaky"
    )
    assert PasskDetails.from_dict(full.to_dict()) == full
    assert list(full.to_dict()) == ["trials", "n", "k", "trials_run", "deterministic_generator", "usage", "c", "class"]
    errored = PasskDetails(trials, n=2, k=1, trials_run=2, deterministic_generator=False)
    assert set(errored.to_dict()) == {"trials", "n", "k", "trials_run", "deterministic_generator"}
    assert PasskDetails.from_dict(errored.to_dict()) == errored


def test_retrieval_details_round_trip_and_written_keys() -> None:
    gold = GoldView((("c1", "c2"),), None, (("d1",),))
    full = RetrievalDetails(
        {"dense": (("c1", 0.5),), "final": (("c1", 0.25),)},
        (("dense",), ("final",)),
        "final",
        False,
        None,
        gold,
        absent=("doc-level metrics: unknown",),
        gold_ranks=({"dense": 1, "final": None},),
    )
    assert RetrievalDetails.from_dict(json.loads(json.dumps(full.to_dict()))) == full
    assert list(full.to_dict()) == [
        "stages",
        "stage_levels",
        "final_stage",
        "degraded",
        "degradation_reason",
        "gold",
        "absent",
        "gold_ranks",
    ]
    assert full.to_dict()["stages"] == {"dense": [["c1", 0.5]], "final": [["c1", 0.25]]}
    assert full.to_dict()["gold"] == {"chunks": [["c1", "c2"]], "parents": None, "docs": [["d1"]]}
    negative = RetrievalDetails(
        {}, (("final",),), "final", True, "reranker down", GoldView(None, None, ()), measured_only=True
    )
    assert set(negative.to_dict()) == {
        "stages",
        "stage_levels",
        "final_stage",
        "degraded",
        "degradation_reason",
        "gold",
        "measured_only",
    }
    assert RetrievalDetails.from_dict(negative.to_dict()) == negative


def test_deterministic_details_round_trip() -> None:
    details = DeterministicDetails(
        "答案 [1]",
        False,
        "llm",
        ({"n": 1, "chunk_id": "c1"},),
        (ContextShown("c1", "书 - 第一章 第3页", "正文"),),
        (CheckResult("citations_resolve", True, ""), CheckResult("must_contain", False, "missing 'x'")),
        False,
        None,
        {"prompt_tokens": 3, "completion_tokens": 4},
    )
    assert DeterministicDetails.from_dict(json.loads(json.dumps(details.to_dict()))) == details
    assert details.to_dict()["checks"][1] == {"name": "must_contain", "passed": False, "message": "missing 'x'"}


def test_judge_details_verdict_and_failure_keys() -> None:
    verdict = JudgeDetails("m", "native", "a", "llm", {"claims": []}, 2, "json_schema", {"calls": 2})
    assert list(verdict.to_dict()) == [
        "answer",
        "generator",
        "judge_model",
        "engine",
        "judge",
        "judge_calls",
        "judge_mode",
        "usage",
    ]
    assert JudgeDetails.from_dict(verdict.to_dict()) == verdict
    failure = JudgeDetails("m", "deepeval", "a", usage={"calls": 0}, usage_note="no usage")
    assert set(failure.to_dict()) == {"answer", "judge_model", "engine", "usage", "usage_note"}
    assert JudgeDetails.from_dict(failure.to_dict()) == failure


def test_dialogue_details_round_trip_and_the_hint_verdict_only_when_judged() -> None:
    base = dict(
        transcript={"dialogue_id": "d1", "turns": []},
        verdict={"outcome": "pass", "findings": []},
        evidence=({"chunk_id": "c1"},),
        clarification_limit=3,
        simulator="scripted",
        calls={"turns": 2, "system_calls": 2, "student_replies": 1},
        dialogue_rates={"hint_success": [1, 1]},
    )
    unjudged = DialogueDetails(**base)  # type: ignore[arg-type]
    assert "hint_verdict" not in unjudged.to_dict() and "usage" not in unjudged.to_dict()
    assert DialogueDetails.from_dict(unjudged.to_dict()) == unjudged
    no_verdict = DialogueDetails(**base, usage={"calls": 1}, judged=True)  # type: ignore[arg-type]
    assert no_verdict.to_dict()["hint_verdict"] is None
    assert DialogueDetails.from_dict(json.loads(json.dumps(no_verdict.to_dict()))) == no_verdict
    verdict = DialogueDetails(**base, hint_verdict={"success": True, "reason": "提示不泄露答案"}, judged=True)  # type: ignore[arg-type]
    assert list(verdict.to_dict())[-1] == "hint_verdict" and DialogueDetails.from_dict(verdict.to_dict()) == verdict


def test_dialogue_passk_details_round_trip_and_written_keys() -> None:
    trials = (
        TrialOutcome(0, "pass", None, "", "hint → answer"),
        TrialOutcome(1, "error", "retrieval", "timeout", "error"),
    )
    errored = DialoguePasskDetails(trials, 2, 2, 2, 1, {"turns": 3, "system_calls": 3, "student_replies": 1})
    assert list(errored.to_dict()) == [
        "dialogue",
        "trials",
        "n",
        "k",
        "trials_run",
        "deterministic_generator",
        "not_finished",
        "calls",
    ]
    assert DialoguePasskDetails.from_dict(errored.to_dict()) == errored
    full = DialoguePasskDetails(trials, 2, 2, 2, 0, {"turns": 3}, "llm", 2, {"calls": 4}, 1, "flaky")
    assert list(full.to_dict())[-5:] == ["simulator", "clarification_limit", "usage", "c", "class"]
    assert DialoguePasskDetails.from_dict(json.loads(json.dumps(full.to_dict()))) == full
