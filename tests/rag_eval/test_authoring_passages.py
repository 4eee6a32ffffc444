"""Passages: paragraphs with their document offsets, the documented skip rule, and the
seeded sample stratified by document."""

from __future__ import annotations

from rag_eval.authoring.passages import (
    MIN_CONTENT_CHARS,
    SKIP_NO_CONTENT,
    SKIP_TOO_SHORT,
    Passage,
    is_chinese,
    passage_pool,
    skip_reason,
    split_passages,
)
from rag_eval.core.records import Document

LONG = "集合中的元素有三个特征：确定性、互异性、无序性。像我们班个子高的同学就不能构成集合，因为高没有明确的标准。"


def test_passages_are_paragraphs_at_their_offsets() -> None:
    text = "# 标题\n\n" + LONG + "\n\n  \n第二段。\n"
    doc = Document("d", "", text)
    ps = split_passages(doc)
    assert [p.text for p in ps] == ["# 标题", LONG, "第二段。"]
    assert all(text[p.start : p.end] == p.text for p in ps)


def test_the_skip_rule() -> None:
    def reason(text: str) -> str | None:
        return skip_reason(Passage("d", 0, len(text), text))

    assert reason("## 1.1 集合的概念") == SKIP_NO_CONTENT  # a heading only
    assert reason("<!-- page: 2 -->") == SKIP_NO_CONTENT
    assert reason("$$\\cos(\\alpha-\\beta)=\\cos\\alpha\\cos\\beta$$") == SKIP_NO_CONTENT  # math only
    assert reason("第二段。") == SKIP_TOO_SHORT  # 3 content characters < MIN_CONTENT_CHARS
    assert len([c for c in LONG if c.isalnum()]) >= MIN_CONTENT_CHARS and reason(LONG) is None


def test_the_sample_is_seeded_and_takes_every_document_in_turn() -> None:
    docs = [Document(d, "", "\n\n".join(f"{d} {n} " + LONG for n in range(4))) for d in ("b", "a", "c")]
    pool = passage_pool(docs, seed=7)
    first = [p.doc_id for p in pool.round_robin()][:6]
    assert first == ["a", "b", "c", "a", "b", "c"]
    assert [p.key for p in pool.round_robin()] == [p.key for p in passage_pool(docs, seed=7).round_robin()]
    assert [p.key for p in pool.round_robin()] != [p.key for p in passage_pool(docs, seed=8).round_robin()]
    assert all(a.doc_id != b.doc_id for a, b in pool.pairs_across())
    assert all(a.doc_id == b.doc_id and a.end < b.start for a, b in pool.adjacent(docs))


def test_language_detection() -> None:
    assert is_chinese(LONG) and not is_chinese("The derivative of sine is cosine.")
