"""The quote check and the near-duplicate guard (character bigrams, no tokenizer)."""

from __future__ import annotations

import pytest

from rag_eval.authoring.quote import Sourced, bigrams, check_threshold, find_quote, near_duplicate, similarity
from rag_eval.core.records import Document
from rag_eval.golden.resolve import ChunkLookup

DOC = Document("d", "", "子集个数为 $2^n$，\n真子集个数为 $2^n-1$。每个元素都有两种可能。")


def test_a_quote_is_found_whitespace_insensitively_and_only_verbatim() -> None:
    lookup = ChunkLookup([DOC], [])
    span = find_quote(lookup, "d", "$2^n$，真子集个数")
    assert span is not None and DOC.text[span[0] : span[1]] == "$2^n$，\n真子集个数"
    assert find_quote(lookup, "d", "真子集的个数") is None  # one character more: not verbatim
    assert find_quote(lookup, "other", "子集") is None and find_quote(lookup, "d", "  ") is None


def test_similarity_is_the_jaccard_index_of_character_bigrams() -> None:
    assert bigrams("集合 的，子集") == frozenset({"集合", "合的", "的子", "子集"})
    # {ab, bc, cd} vs {ab, bc, ce}: 2 shared of 4
    assert similarity("abcd", "abce") == 2 / 4
    assert similarity("子集有多少个？", "子集有多少个?") == 1.0  # punctuation is dropped
    assert similarity("Set Theory", "set theory") == 1.0


def test_a_near_duplicate_needs_the_same_source() -> None:
    a = Sourced("a", "一个集合有n个元素，子集有多少个？", (("d", (0, 10)),))
    same = Sourced("b", "一个集合有n个元素，子集有多少个", (("d", (5, 20)),))
    elsewhere = Sourced("c", "一个集合有n个元素，子集有多少个", (("d", (30, 40)),))
    whole_doc = Sourced("e", "一个集合有n个元素，子集有多少个", (("d", None),))
    assert near_duplicate(a, [elsewhere], 0.8) is None  # another span of the document
    found = near_duplicate(a, [elsewhere, same, whole_doc], 0.8)
    assert found is not None and found[0].id == "b" and found[1] == 1.0
    assert near_duplicate(a, [Sourced("f", "等差数列的通项公式是什么", (("d", (0, 10)),))], 0.8) is None


def test_the_threshold_is_checked() -> None:
    assert check_threshold(0.5, "--near-dup") == 0.5
    with pytest.raises(ValueError, match="--near-dup 1.5"):
        check_threshold(1.5, "--near-dup")
