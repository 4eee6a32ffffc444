"""Resolving gold against the chunks of the real chunker: quotes find their children and
parents, whitespace does not matter, and the same golden item survives re-chunking."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rag_app.corpus import ChunkConfig, chunk_documents, parse_markdown
from rag_app.types import Chunk, Document
from rag_eval.golden.load import parse_item
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup, ResolvedGold, SpanNotFound, all_gold_ids, doc_map, resolve

BOOK = """---
book: 测试册
doc_id: testbook
---

# 测试册

<!-- page: 3 -->
## 1.1 集合

集合是由确定的对象组成的整体。一个集合有 n 个元素时，子集个数为 $2^n$，真子集个数为 $2^n-1$。每个元素都面临"选"或"不选"两种可能。

空集是任何集合的子集。空集是任何非空集合的真子集。

<!-- page: 4 -->
## 1.2 命题

全称量词命题的否定是存在量词命题。存在量词命题的否定是全称量词命题。通俗地说就是"改量词，否结论"。

充分条件与必要条件：若 p 则 q 为真时，p 是 q 的充分条件，q 是 p 的必要条件。
"""
NOTES = Document(doc_id="notes", title="笔记", text="等差数列的通项公式是 a_n = a_1 + (n-1)d。")

SMALL = ChunkConfig(chunk_size=40, chunk_overlap=0, parent_max_chars=200)  # 4 + 3 children, 2 parents
OVERLAP = ChunkConfig(chunk_size=60, chunk_overlap=20, parent_max_chars=300)  # overlapping children
SPLIT = ChunkConfig(chunk_size=60, chunk_overlap=20, parent_max_chars=80)  # each section in two parents
DEFAULT = ChunkConfig()  # one child per section
CONFIGS = {"small": SMALL, "overlap": OVERLAP, "split-parents": SPLIT, "default": DEFAULT}

P11 = "测试册::1.1集合::parent"
P12 = "测试册::1.2命题::parent"


def documents() -> list[Document]:
    return [parse_markdown(BOOK, "testbook.md", "testbook"), NOTES]


def lookup_for(config: ChunkConfig) -> ChunkLookup:
    docs = documents()
    return ChunkLookup(docs, chunk_documents(docs, config))


def item(*evidence: Any, **extra: Any) -> GoldenItem:
    return parse_item({"id": "it-1", "question": "q", "evidence": list(evidence), **extra}, "golden.jsonl:7")


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def child(lookup: ChunkLookup, cid: str) -> Chunk:
    return lookup.chunks[cid]


# --------------------------------------------------------------------------- the chunks these tests rely on


def test_the_small_config_cuts_the_book_as_expected() -> None:
    lk = lookup_for(SMALL)
    children = [c for c in lk.by_doc["testbook"] if c.kind == "child"]
    assert [c.chunk_id for c in children] == [
        "测试册::1.1集合::p3::child::1",
        "测试册::1.1集合::p3::child::2",
        "测试册::1.1集合::p3::child::3",
        "测试册::1.1集合::p3::child::4",
        "测试册::1.2命题::p4::child::1",
        "测试册::1.2命题::p4::child::2",
        "测试册::1.2命题::p4::child::3",
    ]
    assert child(lk, "测试册::1.1集合::p3::child::3").text == '每个元素都面临"选"或"不选"两种可能。'
    assert child(lk, "测试册::1.1集合::p3::child::4").text == "空集是任何集合的子集。空集是任何非空集合的真子集。"


# --------------------------------------------------------------------------- quotes


def test_a_quote_resolves_to_the_child_containing_it_and_its_parent() -> None:
    lk = lookup_for(SMALL)
    gold = resolve(item({"doc_id": "testbook", "quote": "真子集个数为 $2^n-1$"}), lk)
    assert gold.child_groups == (frozenset({"测试册::1.1集合::p3::child::2"}),)
    assert gold.parent_groups == (frozenset({P11}),)
    assert gold.doc_groups == (frozenset({"testbook"}),)
    assert gold.has_chunk_gold
    assert gold.groups_for("child") == gold.child_groups and gold.groups_for("parent") == gold.parent_groups


def test_matching_ignores_whitespace() -> None:
    lk = lookup_for(SMALL)
    spaced = resolve(item({"doc_id": "testbook", "quote": "真子集 个数为\n$2^n - 1$"}), lk)
    exact = resolve(item({"doc_id": "testbook", "quote": "真子集个数为 $2^n-1$"}), lk)
    assert spaced == exact
    ((start, end),) = lk.locate("testbook", "真子集 个数为\n$2^n - 1$")
    assert lk.docs["testbook"].text[start:end] == "真子集个数为 $2^n-1$"


def test_a_quote_straddling_two_children_resolves_to_both() -> None:
    lk = lookup_for(SMALL)
    # '两种可能。' ends child 3, '空集是任何集合的子集' starts child 4; a blank line between them
    quote = "两种可能。空集是任何集合的子集"
    gold = resolve(item({"doc_id": "testbook", "quote": quote}), lk)
    assert gold.child_groups == (frozenset({"测试册::1.1集合::p3::child::3", "测试册::1.1集合::p3::child::4"}),)
    assert gold.parent_groups == (frozenset({P11}),)
    union = "".join(child(lk, c).text for c in sorted(gold.child_groups[0]))
    assert squash(quote) in squash(union)


def test_a_quote_found_twice_gives_both_children_as_alternatives() -> None:
    lk = lookup_for(SMALL)
    # '量词命题的否定是' occurs in 1.2 child 1 and child 2
    (group,) = resolve(item({"doc_id": "testbook", "quote": "量词命题的否定是"}), lk).child_groups or ()
    assert group == frozenset({"测试册::1.2命题::p4::child::1", "测试册::1.2命题::p4::child::2"})


def test_with_overlap_every_child_holding_the_whole_quote_is_an_alternative() -> None:
    lk = lookup_for(OVERLAP)
    quote = '每个元素都面临"选"'
    (group,) = resolve(item({"doc_id": "testbook", "quote": quote}), lk).child_groups or ()
    assert len(group) == 2
    assert all(quote in child(lk, c).text for c in group)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize(
    "quote",
    [
        "子集个数为 $2^n$，真子集个数为 $2^n-1$",
        "两种可能。空集是任何集合的子集",  # crosses a child boundary in SMALL
        '通俗地说就是"改量词，否结论"',
        "p 是 q 的充分条件",
    ],
)
def test_the_same_item_survives_rechunking(name: str, quote: str) -> None:
    lk = lookup_for(CONFIGS[name])
    gold = resolve(item({"doc_id": "testbook", "quote": quote}), lk)
    assert gold.child_groups is not None and gold.parent_groups is not None
    (children,), (parents,) = gold.child_groups, gold.parent_groups
    assert children and parents
    texts = [child(lk, c).text for c in children]
    if not any(squash(quote) in squash(t) for t in texts):
        # no single child holds it: the overlapping children, in text order, cover it
        ordered = sorted(children, key=lambda c: child(lk, c).char_start)
        covered = lk.docs["testbook"].text[child(lk, ordered[0]).char_start : child(lk, ordered[-1]).char_end]
        assert squash(quote) in squash(covered)
    for p in parents:
        assert lk.chunks[p].kind == "parent"
    # every resolved child hangs under a resolved parent, or the quote spans parents
    assert {child(lk, c).parent_id for c in children} <= set(parents)


def test_a_quote_straddling_two_parents_resolves_to_both() -> None:
    lk = lookup_for(SPLIT)
    gold = resolve(item({"doc_id": "testbook", "quote": "两种可能。空集是任何集合的子集"}), lk)
    assert gold.parent_groups == (frozenset({P11 + "::1", P11 + "::2"}),)
    assert gold.child_groups == (frozenset({"测试册::1.1集合::p3::child::2", "测试册::1.1集合::p3::child::3"}),)


def test_rechunking_changes_the_ids_not_the_meaning() -> None:
    quote = "空集是任何非空集合的真子集"
    resolved = {
        name: resolve(item({"doc_id": "testbook", "quote": quote}), lookup_for(cfg)) for name, cfg in CONFIGS.items()
    }
    assert resolved["small"].child_groups == (frozenset({"测试册::1.1集合::p3::child::4"}),)
    assert resolved["default"].child_groups == (frozenset({"测试册::1.1集合::p3::child::1"}),)
    assert {r.doc_groups for r in resolved.values()} == {(frozenset({"testbook"}),)}


# --------------------------------------------------------------------------- chunk ids and doc ids


def test_a_child_chunk_id_resolves_to_itself_and_its_parent() -> None:
    gold = resolve(item("测试册::1.2命题::p4::child::3"), lookup_for(SMALL))
    assert gold.child_groups == (frozenset({"测试册::1.2命题::p4::child::3"}),)
    assert gold.parent_groups == (frozenset({P12}),)
    assert gold.doc_groups == (frozenset({"testbook"}),)


def test_a_parent_chunk_id_resolves_to_its_children() -> None:
    gold = resolve(item({"chunk_id": P12}), lookup_for(SMALL))
    assert gold.child_groups == (frozenset({f"测试册::1.2命题::p4::child::{i}" for i in (1, 2, 3)}),)
    assert gold.parent_groups == (frozenset({P12}),)


def test_doc_only_gold_has_no_chunk_groups() -> None:
    gold = resolve(item({"doc_id": "notes"}), lookup_for(SMALL))
    assert gold == ResolvedGold(None, None, (frozenset({"notes"}),))
    assert not gold.has_chunk_gold


def test_one_doc_only_requirement_makes_the_whole_item_doc_level() -> None:
    gold = resolve(item({"doc_id": "testbook", "quote": "充分条件"}, {"doc_id": "notes"}), lookup_for(SMALL))
    assert gold.child_groups is None and gold.parent_groups is None
    assert gold.doc_groups == (frozenset({"testbook"}), frozenset({"notes"}))


def test_a_doc_only_alternative_next_to_a_quote_stands_for_any_chunk_of_that_doc() -> None:
    lk = lookup_for(SMALL)
    notes_child = next(c.chunk_id for c in lk.by_doc["notes"] if c.kind == "child")
    notes_parent = next(c.chunk_id for c in lk.by_doc["notes"] if c.kind == "parent")
    gold = resolve(item({"any_of": [{"doc_id": "testbook", "quote": "充分条件"}, {"doc_id": "notes"}]}), lk)
    # before the fix the 'notes' alternative vanished from the chunk-level gold
    assert gold.child_groups == (frozenset({"测试册::1.2命题::p4::child::3", notes_child}),)
    assert gold.parent_groups == (frozenset({P12, notes_parent}),)
    assert gold.doc_groups == (frozenset({"testbook", "notes"}),)


def test_gold_doc_ids_of_the_shared_layout_resolve_to_one_doc_group() -> None:
    raw = {"id": "s-1", "question": "q", "gold_doc_ids": ["testbook", "notes"]}
    gold = resolve(parse_item(raw, "qa.jsonl:1"), lookup_for(SMALL))
    assert gold == ResolvedGold(None, None, (frozenset({"testbook", "notes"}),))


def test_negative_item_resolves_to_nothing() -> None:
    gold = resolve(item(), lookup_for(SMALL))
    assert gold == ResolvedGold((), (), ())


# --------------------------------------------------------------------------- errors name the item


def test_unknown_chunk_id() -> None:
    with pytest.raises(
        SpanNotFound, match=r"^golden\.jsonl:7 \(id 'it-1'\): gold chunk id 'nope::child::1' is not in the index$"
    ):
        resolve(item("nope::child::1"), lookup_for(SMALL))


def test_unknown_doc_id() -> None:
    with pytest.raises(
        SpanNotFound, match=r"^golden\.jsonl:7 \(id 'it-1'\): gold doc id 'bixiu9' is not in the corpus$"
    ):
        resolve(item({"doc_id": "bixiu9", "quote": "x"}), lookup_for(SMALL))


def test_unknown_quote() -> None:
    with pytest.raises(SpanNotFound) as info:
        resolve(item({"doc_id": "testbook", "quote": "三角函数的周期"}), lookup_for(SMALL))
    assert str(info.value) == (
        "golden.jsonl:7 (id 'it-1'): quoted span '三角函数的周期' not found in document 'testbook'; "
        "quote the document text exactly (whitespace may differ)"
    )


def test_a_quote_from_another_document_is_not_found() -> None:
    with pytest.raises(SpanNotFound, match="not found in document 'notes'"):
        resolve(item({"doc_id": "notes", "quote": "充分条件"}), lookup_for(SMALL))


# --------------------------------------------------------------------------- helpers


def test_locate_every_occurrence_and_unknown_doc() -> None:
    lk = lookup_for(SMALL)
    text = lk.docs["testbook"].text
    spans = lk.locate("testbook", "空集是任何")
    assert len(spans) == 2 and all(text[s:e] == "空集是任何" for s, e in spans)
    assert lk.locate("missing", "空集") == []


def test_doc_map_and_all_gold_ids() -> None:
    lk = lookup_for(SMALL)
    dm = doc_map(lk)
    assert dm[P11] == "testbook" and set(dm.values()) == {"testbook", "notes"}
    assert lk.doc_of("测试册::1.1集合::p3::child::1") == "testbook" and lk.doc_of("nope") is None
    assert all_gold_ids([frozenset({"a"}), frozenset({"b", "a"})]) == frozenset({"a", "b"})
