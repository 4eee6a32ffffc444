"""The per-tier Details dataclasses and the results schema's ``$defs`` say the same thing:
every schema property is a field (under its JSON name), every required property is a
field that is always written, and a to_dict/from_dict round trip is exact."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.tiers.passk_case import PasskDetails, TrialOutcome

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "rag_eval" / "results.schema.json").read_text(encoding="utf-8"))
JSON_NAMES = {"cls": "class"}  # a field whose JSON key is a Python keyword
# (dataclass, its $defs entry, the fields to_dict leaves out when unset)
DETAILS: list[tuple[type, str, frozenset[str]]] = [
    (TrialOutcome, "trial", frozenset()),
    (PasskDetails, "passkDetails", frozenset({"usage", "c", "class"})),
]


def _fields(cls: type) -> set[str]:
    return {JSON_NAMES.get(f.name, f.name) for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(("cls", "name", "optional"), DETAILS, ids=[d[1] for d in DETAILS])
def test_fields_match_the_schema(cls: type, name: str, optional: frozenset[str]) -> None:
    schema: dict[str, Any] = SCHEMA["$defs"][name]
    properties, required = set(schema["properties"]), set(schema.get("required", ()))
    fields = _fields(cls)
    assert properties - fields == set(), f"$defs/{name} has properties no {cls.__name__} field writes"
    # usage is common to every tier's details (commonDetails), not repeated in each $defs entry
    assert fields - properties - {"usage"} == set(), f"{cls.__name__} writes fields $defs/{name} does not know"
    assert required <= fields - optional, f"$defs/{name} requires fields {cls.__name__} may leave out"


def test_passk_details_round_trip_and_written_keys() -> None:
    trials = (TrialOutcome(0, "pass", None, "", "2^n"), TrialOutcome(1, "fail", "generation", "no", "n^2"))
    full = PasskDetails(trials, n=2, k=1, trials_run=2, deterministic_generator=False, usage={"calls": 2}, c=1, cls="flaky")
    assert PasskDetails.from_dict(full.to_dict()) == full
    assert list(full.to_dict()) == ["trials", "n", "k", "trials_run", "deterministic_generator", "usage", "c", "class"]
    errored = PasskDetails(trials, n=2, k=1, trials_run=2, deterministic_generator=False)
    assert set(errored.to_dict()) == {"trials", "n", "k", "trials_run", "deterministic_generator"}
    assert PasskDetails.from_dict(errored.to_dict()) == errored
