"""Context truncation at the budget edges."""

from __future__ import annotations

from rag_app.retrieval import truncate_context
from rag_app.types import Chunk


def _chunk(chunk_id: str, length: int) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        doc_id="d",
        text="数" * length,
        kind="child",
        parent_id=None,
        book="必修一",
        section="1.1",
        page_start=1,
        page_end=1,
        char_start=0,
        char_end=length,
    )


def _ids(chunks: list[Chunk]) -> list[str]:
    return [c.chunk_id for c in chunks]


def test_empty_input_gives_empty_list() -> None:
    assert truncate_context([], 100) == []


def test_total_exactly_at_budget_keeps_everything() -> None:
    chunks = [_chunk("a", 40), _chunk("b", 35), _chunk("c", 25)]  # 40 + 35 + 25 = 100
    assert _ids(truncate_context(chunks, 100)) == ["a", "b", "c"]


def test_one_char_over_budget_drops_the_last() -> None:
    chunks = [_chunk("a", 40), _chunk("b", 35), _chunk("c", 26)]  # 40 + 35 + 26 = 101
    assert _ids(truncate_context(chunks, 100)) == ["a", "b"]


def test_stops_at_first_misfit_without_skipping_ahead() -> None:
    # a=60 fits; b=50 would make 110 > 100 -> stop, even though c=10 would fit.
    chunks = [_chunk("a", 60), _chunk("b", 50), _chunk("c", 10)]
    assert _ids(truncate_context(chunks, 100)) == ["a"]


def test_first_chunk_is_kept_whole_even_over_budget() -> None:
    chunks = [_chunk("big", 500), _chunk("small", 1)]
    kept = truncate_context(chunks, 100)
    assert _ids(kept) == ["big"]
    assert len(kept[0].text) == 500
    assert _ids(truncate_context([_chunk("a", 5)], 0)) == ["a"]


def test_duplicates_are_kept_once_and_cost_nothing() -> None:
    a = _chunk("a", 50)
    chunks = [a, a, _chunk("b", 50), a]  # 50 + 50 = 100: the repeats must not count
    assert _ids(truncate_context(chunks, 100)) == ["a", "b"]


def test_input_is_not_modified() -> None:
    chunks = [_chunk("a", 60), _chunk("b", 60)]
    truncate_context(chunks, 60)
    assert _ids(chunks) == ["a", "b"]
