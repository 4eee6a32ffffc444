"""The results schema is assembled from the core and the tiers' fragments; the shipped
``rag_eval/results.schema.json`` is exactly that assembly for the built-in tiers."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval import tiers
from rag_eval.core.errors import ConfigError
from rag_eval.results.schema import SHIPPED_PATH, assemble, core, results_schema, schema_text


def test_the_shipped_file_is_the_assembly_of_the_built_in_tiers() -> None:
    assert tiers.names() == ("retrieval", "deterministic", "judge", "passk", "dialogue")
    assert SHIPPED_PATH.read_text(encoding="utf-8") == schema_text(results_schema()), (
        "rag_eval/results.schema.json is out of date: run python -m rag_eval.results.schema"
    )


def test_each_built_in_tier_brings_its_details_and_the_judge_its_run_block() -> None:
    assembled = results_schema()
    base = core()
    own = {t.name: set(t.schema_fragment().get("$defs", {})) for t in tiers.all_tiers()}
    assert own["passk"] == {"trial", "passkDetails", "dialoguePasskDetails"}
    assert set(assembled["$defs"]) == set(base["$defs"]).union(*own.values())
    assert "judge_blame" in assembled["$defs"]["run"]["properties"]
    assert "judge_blame" not in base["$defs"]["run"]["properties"]
    entries = assembled["$defs"]["case"]["allOf"][0]["else"]["allOf"]
    named = [e["if"]["properties"]["tier"]["const"] for e in entries]
    assert named == ["retrieval", "deterministic", "judge", "judge", "passk", "passk", "passk", "dialogue"]


def _fragment(**more: Any) -> dict[str, Any]:
    return {
        "$defs": {"qlenDetails": {"type": "object", "required": ["limit"]}},
        "details": [
            {
                "if": {"properties": {"tier": {"const": "qlen"}}, "required": ["tier"]},
                "then": {"properties": {"details": {"$ref": "#/$defs/qlenDetails"}}},
            }
        ],
        **more,
    }


def test_a_fragment_adds_defs_details_run_and_top_level_properties() -> None:
    fragment = _fragment(run={"qlen_note": {"type": "string"}}, results={"qlen_table": {"type": "object"}})
    out = assemble(core(), [("qlen", fragment)])
    assert out["$defs"]["qlenDetails"] == {"type": "object", "required": ["limit"]}
    assert out["$defs"]["run"]["properties"]["qlen_note"] == {"type": "string"}
    assert out["properties"]["qlen_table"] == {"type": "object"}
    assert out["$defs"]["case"]["allOf"][0]["else"]["allOf"] == fragment["details"]
    assert "qlenDetails" not in core()["$defs"]  # the core is not changed


def test_a_fragment_that_redefines_a_name_or_has_an_unknown_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="tier 'qlen': its schema fragment's \\$defs 'usage' is already defined"):
        assemble(core(), [("qlen", {"$defs": {"usage": {}}})])
    with pytest.raises(ConfigError, match="tier 'qlen': its schema fragment has 'cases'; a fragment takes"):
        assemble(core(), [("qlen", _fragment(cases=[]))])
