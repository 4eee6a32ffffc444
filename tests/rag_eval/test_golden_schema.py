"""The JSON Schema in docs/ and the loader agree on every golden set we ship."""

import json
from pathlib import Path

import jsonschema
import pytest

from rag_eval.golden.load import GoldenSetError, parse_item

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "golden-set.schema.json").read_text(encoding="utf-8"))
SHIPPED = sorted(ROOT.glob("golden_sets/*/golden.jsonl")) + sorted(ROOT.glob("golden_sets/*/qa.jsonl"))


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_shipped_item_matches_the_schema_and_loads(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        raw = json.loads(line)
        errors = [e.message for e in validator.iter_errors(raw)]
        assert not errors, f"{path}:{lineno}: {errors}"
        parse_item(raw, f"{path}:{lineno}")


@pytest.mark.parametrize(
    "raw",
    [
        {"id": "x"},
        {"id": "x", "question": "q", "evidence": [{"quote": "no doc"}]},
        {"id": "x", "question": "q", "expected_action": "guess"},
        {"id": "x", "question": "q", "colour": "red"},
    ],
)
def test_schema_and_loader_reject_the_same_bad_items(raw: dict) -> None:
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(raw))
    with pytest.raises(GoldenSetError):
        parse_item(raw, "golden.jsonl:1")
