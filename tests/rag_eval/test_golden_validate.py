"""Golden set validation: every check with an item that passes and one that fails, and
each problem naming the item and its file:line."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rag_app.corpus import ChunkConfig, chunk_documents, parse_markdown
from rag_app.text import tokenize
from rag_app.types import Document
from rag_eval.golden import validate
from rag_eval.golden.load import parse_item
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup
from rag_eval.tiers import golden_applies

BOOK = """---
book: 测试册
doc_id: testbook
---

# 测试册

## 1.1 集合

一个集合有 n 个元素时，子集个数为 $2^n$，真子集个数为 $2^n-1$。每个元素都面临"选"或"不选"两种可能。

## 1.2 命题

全称量词命题的否定是存在量词命题。通俗地说就是"改量词，否结论"。
"""
ENGLISH = Document(
    doc_id="en", title="calculus", text="The derivative of sine is cosine. The integral of cosine is sine."
)


@pytest.fixture(scope="module")
def lookup() -> ChunkLookup:
    docs = [parse_markdown(BOOK, "testbook.md", "testbook"), ENGLISH]
    return ChunkLookup(docs, chunk_documents(docs, ChunkConfig(chunk_size=40, chunk_overlap=0, parent_max_chars=200)))


def words(text: str) -> list[str]:
    """A tokenizer whose output a reviewer can count by eye."""
    return re.findall(r"\w+", text.lower())


def item(line: int = 1, **raw: Any) -> GoldenItem:
    return parse_item({"id": f"it-{line}", "question": "q", **raw}, f"golden.jsonl:{line}")


def fact(text: str, **source: str) -> dict[str, Any]:
    return {"fact": text, "source": source}


# --------------------------------------------------------------------------- unique ids


def test_unique_ids() -> None:
    assert validate.check_unique_ids([item(1), item(2)]) == []
    dup = [item(1), item(2), item(1), item(1)]
    assert validate.check_unique_ids(dup) == ["duplicate id 'it-1' (3 items); ids must be unique"]


# --------------------------------------------------------------------------- gold exists


def test_gold_exists_passes_for_resolvable_gold(lookup: ChunkLookup) -> None:
    items = [
        item(1, evidence=[{"doc_id": "testbook", "quote": "子集个数为 $2^n$"}]),
        item(2, gold_doc_ids=["en"]),
        item(3),  # a negative has nothing to resolve
    ]
    assert validate.check_gold_exists(items, lookup) == []


def test_gold_exists_reports_an_unknown_quote(lookup: ChunkLookup) -> None:
    problems = validate.check_gold_exists([item(4, evidence=[{"doc_id": "testbook", "quote": "三角函数"}])], lookup)
    assert problems == [
        "golden.jsonl:4 (id 'it-4'): quoted span '三角函数' not found in document 'testbook'; "
        "quote the document text exactly (whitespace may differ)"
    ]


def test_gold_exists_reports_a_span_no_chunk_holds(lookup: ChunkLookup) -> None:
    # '# 测试册' heads an empty section: the chunker drops it, so the text is in the doc but in no chunk
    problems = validate.check_gold_exists([item(5, evidence=[{"doc_id": "testbook", "quote": "测试册"}])], lookup)
    assert problems == ["golden.jsonl:5 (id 'it-5'): a gold requirement resolved to no chunk"]


# --------------------------------------------------------------------------- key facts


def test_key_fact_at_exactly_half_shared_terms_passes(lookup: ChunkLookup) -> None:
    # fact terms {derivative, sine, equals, tangent}; source has derivative, sine: 2/4 = 0.5
    it = item(
        1, key_facts=[fact("derivative sine equals tangent", doc_id="en", quote="The derivative of sine is cosine")]
    )
    assert validate.check_key_facts([it], lookup, words) == []


def test_key_fact_below_half_fails_with_the_counts(lookup: ChunkLookup) -> None:
    # fact terms {derivative, sine, equals, tangent, squared}: 2/5 = 0.4 < 0.5
    it = item(
        2,
        key_facts=[
            fact("derivative sine equals tangent squared", doc_id="en", quote="The derivative of sine is cosine")
        ],
    )
    (problem,) = validate.check_key_facts([it], lookup, words)
    assert problem.startswith(
        "golden.jsonl:2 (id 'it-2'): key fact 'derivative sine equals tangent squared' shares 2/5 key terms"
    )
    assert "(need 50%); point it at the passage that states it" in problem


def test_key_fact_against_a_chunk_or_a_whole_doc(lookup: ChunkLookup) -> None:
    first_child = next(c for c in lookup.by_doc["en"] if c.kind == "child").chunk_id
    ok = item(1, key_facts=[fact("integral of cosine", chunk_id=first_child), fact("integral cosine", doc_id="en")])
    assert validate.check_key_facts([ok], lookup, words) == []


def test_key_fact_without_a_source(lookup: ChunkLookup) -> None:
    (problem,) = validate.check_key_facts([item(3, key_facts=["sine is odd"])], lookup, words)
    assert (
        problem == "golden.jsonl:3 (id 'it-3'): key fact 'sine is odd' has no source (give doc_id + quote or chunk_id)"
    )


@pytest.mark.parametrize(
    "source",
    [
        {"chunk_id": "en::child::99"},
        {"doc_id": "nope"},
        {"doc_id": "en", "quote": "the derivative of cosine is sine"},  # not in the text (fixed: was never checked)
        {"doc_id": "nope", "quote": "The derivative of sine"},
    ],
)
def test_key_fact_pointing_at_nothing(lookup: ChunkLookup, source: dict[str, str]) -> None:
    (problem,) = validate.check_key_facts([item(6, key_facts=[fact("derivative of sine", **source)])], lookup, words)
    assert problem.startswith("golden.jsonl:6 (id 'it-6'): key fact 'derivative of sine' points at ")
    assert "which is not in the corpus" in problem


def test_key_facts_in_chinese_with_the_project_tokenizer(lookup: ChunkLookup) -> None:
    good = item(
        1,
        key_facts=[
            fact("全称量词命题的否定是存在量词命题", doc_id="testbook", quote="全称量词命题的否定是存在量词命题")
        ],
    )
    bad = item(2, key_facts=[fact("三角函数的周期是2π", doc_id="testbook", quote="全称量词命题的否定是存在量词命题")])
    problems = validate.check_key_facts([good, bad], lookup, tokenize)
    assert len(problems) == 1 and problems[0].startswith(
        "golden.jsonl:2 (id 'it-2'): key fact '三角函数的周期是2π' shares 0/"
    )


# --------------------------------------------------------------------------- negatives


def test_negatives_pass() -> None:
    ok = [
        item(1, evidence=[{"doc_id": "en"}]),
        item(2),  # no evidence: refuse by default
        item(3, expected_action="clarify"),
    ]
    assert validate.check_negatives(ok) == []


def test_a_negative_with_gold_fails() -> None:
    bad = item(4, tags={"scenario": "negative"}, evidence=[{"doc_id": "en"}])
    assert validate.check_negatives([bad]) == [
        "golden.jsonl:4 (id 'it-4'): tagged scenario=negative but carries gold evidence; negatives have none"
    ]


def test_an_answer_without_evidence_fails() -> None:
    bad = item(5, tags={"scenario": "standard"}, expected_action="answer")
    (problem,) = validate.check_negatives([bad])
    assert problem.startswith("golden.jsonl:5 (id 'it-5'): no gold evidence but expected_action is 'answer'")


# --------------------------------------------------------------------------- split leak


def test_no_split_leak() -> None:
    items = [item(1, gold_doc_ids=["en"], split="tune"), item(2, gold_doc_ids=["testbook"], split="holdout")]
    assert validate.check_split_leak(items) == []


def test_a_document_in_both_splits_is_a_leak() -> None:
    items = [
        item(1, gold_doc_ids=["en"], split="tune"),
        item(2, gold_doc_ids=["en"], split="holdout"),
        item(3, gold_doc_ids=["en"], split="tune"),
    ]
    assert validate.check_split_leak(items) == [
        "document 'en' is gold in both splits: tune ['it-1', 'it-3'] and holdout ['it-2']; move those items into one split"
    ]


def test_chunk_gold_counts_for_its_document_with_a_lookup(lookup: ChunkLookup) -> None:
    first_child = next(c for c in lookup.by_doc["en"] if c.kind == "child").chunk_id
    items = [item(1, evidence=[first_child], split="tune"), item(2, gold_doc_ids=["en"], split="holdout")]
    assert validate.check_split_leak(items) == []  # without the index a chunk id names no document
    (problem,) = validate.check_split_leak(items, lookup)
    assert problem.startswith("document 'en' is gold in both splits")


# --------------------------------------------------------------------------- coverage table


def test_coverage_table() -> None:
    items = [
        item(1, gold_doc_ids=["en"], split="tune"),
        item(2, gold_doc_ids=["en"], split="holdout", tags={"scenario": "colloquial"}),
        item(3, gold_doc_ids=["en"], split="tune"),
        item(4, split="tune"),  # negative: no judge case
    ]
    rows = [line.split() for line in validate.coverage_table(items, golden_applies()).splitlines()]
    assert rows == [
        ["scenario", "retrieval", "deterministic", "judge", "passk", "tune", "holdout"],
        ["standard", "2", "2", "2", "2", "2", "0"],
        ["colloquial", "1", "1", "1", "1", "0", "1"],
        ["negative", "1", "1", "0", "1", "1", "0"],
        ["total", "4", "4", "3", "4", "3", "1"],
    ]
    lines = validate.coverage_table(items, golden_applies()).splitlines()
    column = lines[0].index("retrieval")  # aligned: every row's second cell starts there
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines)


# --------------------------------------------------------------------------- all checks


def test_validate_all_names_every_check(lookup: ChunkLookup) -> None:
    items = [
        item(
            1,
            evidence=[{"doc_id": "en", "quote": "The integral of cosine is sine"}],
            key_facts=[fact("integral cosine sine", doc_id="en")],
        )
    ]
    result = validate.validate_all(items, lookup, words)
    assert result == {
        "unique ids": [],
        "gold exists": [],
        "key facts traceable": [],
        "negatives carry no gold": [],
        "no document in both splits": [],
    }
