"""Merging decisions into a golden file: a person's lines stay byte for byte, an
equivalent becomes an alternative of the requirement it names (in every layout), every
decision lands in the item's review history, nothing is decided twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_eval.authoring.accept import Merger, add_alternative
from rag_eval.authoring.decisions import parse_decision
from rag_eval.golden.load import parse_item

OWN = '{"id": "q1", "question": "子集有多少个？",   "evidence": [{"doc_id": "a", "quote": "子集"}], "split": "tune"}'
SHARED = '{"id": "q2", "question": "What is a set?", "gold_doc_ids": ["s1", "s2"]}'


def evidence(case: str, decision: str, key: str = "k1", **extra: Any) -> Any:
    raw = {"kind": "evidence", "key": key, "case": case, "decision": decision, "reason": "r", "reviewer": "Ana",
           "time": "2026-12-07T12:00:00Z", "doc_id": "b", "quote": "子集个数", "chunk_id": "b#3", **extra}  # fmt: skip
    return parse_decision(raw, "decisions.jsonl:1")


def test_an_equivalent_becomes_an_alternative_and_other_lines_stay_byte_for_byte() -> None:
    merge = Merger([OWN, SHARED], Path("golden.jsonl"), None, 0.8, "gold").apply([evidence("q1", "equivalent")])
    assert merge.updated == ["q1: equivalent (k1)"] and not merge.refused
    assert merge.lines[1] == SHARED  # untouched, exactly as the person wrote it
    raw = json.loads(merge.lines[0])
    assert raw["evidence"] == [{"any_of": [{"doc_id": "a", "quote": "子集"}, {"doc_id": "b", "quote": "子集个数"}]}]
    assert raw["review"] == [{"decision": "equivalent", "reviewer": "Ana", "time": "2026-12-07T12:00:00Z",
                              "reason": "r", "key": "k1", "doc_id": "b", "quote": "子集个数", "chunk_id": "b#3"}]  # fmt: skip
    item = parse_item(raw, "golden.jsonl:1")
    assert [r.doc_id for r in item.evidence[0].any_of] == ["a", "b"] and item.split == "tune"


def test_partial_and_irrelevant_are_history_only_and_a_decided_candidate_is_skipped() -> None:
    merge = Merger([OWN], Path("g.jsonl"), None, 0.8, "gold").apply(
        [evidence("q1", "partial"), evidence("q1", "irrelevant", key="k2")]
    )
    raw = json.loads(merge.lines[0])
    assert raw["evidence"] == [{"doc_id": "a", "quote": "子集"}]
    assert [h["decision"] for h in raw["review"]] == ["partial", "irrelevant"]
    again = Merger(merge.lines, Path("g.jsonl"), None, 0.8, "gold").apply([evidence("q1", "equivalent")])
    assert again.skipped == ["q1: candidate k1 already decided"] and again.lines == merge.lines


def test_the_shared_layouts_document_group_takes_the_alternative() -> None:
    raw = json.loads(SHARED)
    assert add_alternative(raw, 0, "s3", "a set is a collection") is None
    assert "gold_doc_ids" not in raw
    assert raw["evidence"] == [
        {"any_of": [{"doc_id": "s1"}, {"doc_id": "s2"}, {"doc_id": "s3", "quote": "a set is a collection"}]}
    ]
    assert "requirement 3 does not exist (the item has 1)" in str(add_alternative(json.loads(SHARED), 2, "s3", "x"))


def test_an_unknown_item_is_refused_naming_the_golden_set() -> None:
    merge = Merger([OWN], Path("g.jsonl"), None, 0.8, "gold").apply([evidence("q9", "equivalent")])
    assert merge.refused == ["decisions.jsonl:1: item 'q9' is not in g.jsonl; give the golden set the run used"]
