"""Evidence candidates from results files: ranked above gold or in context, not gold,
one per item, document and text across cases and runs; decided ones left out."""

from __future__ import annotations

from typing import Any

from rag_eval.authoring.evidence import ABOVE_GOLD_KEPT, candidate_key, find_candidates
from rag_eval.core.records import Document
from rag_eval.golden.load import parse_item
from rag_eval.golden.resolve import ChunkLookup

DOCS = [Document("a", "", "甲书：等差数列的通项公式。"), Document("b", "", "乙书：通项公式也写在这里。")]
TEXTS = {"a1": "等差数列的通项公式。", "b1": "通项公式也写在这里。"}


def retrieval(item: str, ranked: list[str], gold: list[str]) -> dict[str, Any]:
    details = {"final_stage": "final", "stages": {"final": [[c, 1.0] for c in ranked]}, "gold": {"chunks": [gold]}}
    return {"id": item, "tier": "retrieval", "negative": False, "details": details}


def answer(item: str, context: list[str]) -> dict[str, Any]:
    return {
        "id": item,
        "tier": "deterministic",
        "details": {"context": [{"chunk_id": c, "text": TEXTS[c]} for c in context]},
    }


ITEM = parse_item({"id": "q", "question": "通项公式？", "evidence": [{"doc_id": "a", "quote": "通项公式"}]}, "g:1")


def test_one_candidate_per_item_document_and_text_across_cases_and_runs() -> None:
    run = {"cases": [retrieval("q", ["b1", "a1"], ["a1"]), answer("q", ["b1", "a1"])]}
    found = find_candidates([("r1.json", run), ("r2.json", run)], {"q": ITEM}, ChunkLookup(DOCS, []))
    (c,) = found.candidates
    assert (c.case, c.chunk_id, c.doc_id, c.quote) == ("q", "b1", "b", TEXTS["b1"])  # the document that holds the text
    assert c.runs == ["r1.json", "r2.json"]
    assert c.to_dict(ITEM)["why"] == ["in the deterministic context as [1]", "rank 1 in final (gold first at rank 2)"]
    assert c.key == candidate_key("q", "b", " 通项公式也 写在这里。")  # whitespace does not change the key


def test_a_decided_candidate_is_not_listed_and_a_textless_chunk_is_counted() -> None:
    decided = parse_item(
        {**ITEM.to_dict(), "review": [{"decision": "irrelevant", "key": candidate_key("q", "b", TEXTS["b1"])}]}, "g:1"
    )
    run = {"cases": [retrieval("q", ["b1", "x9", "a1"], ["a1"]), answer("q", ["b1"])]}
    found = find_candidates([("r.json", run)], {"q": decided}, ChunkLookup(DOCS, []))
    assert found.candidates == [] and found.decided == 1
    assert found.without_text == 1  # x9: ranked only, no file holds its text


def test_without_gold_in_the_list_the_top_chunks_are_candidates() -> None:
    ranked = [f"c{n}" for n in range(ABOVE_GOLD_KEPT + 3)]
    run = {"cases": [retrieval("q", ranked, [])]}
    found = find_candidates([("r.json", run)], {"q": ITEM}, ChunkLookup(DOCS, []))
    assert found.without_text == ABOVE_GOLD_KEPT  # the first 5 are shown; none has a known text here
