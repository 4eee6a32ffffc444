"""Source numbering, citation parsing (maths-aware) and refusal detection."""

from __future__ import annotations

import pytest

from rag_app.generation.sources import (
    REFUSAL_TEXT,
    build_sources,
    cited_numbers,
    is_refusal,
    mask_math,
    math_spans,
    numbered_chunks,
)
from rag_app.types import Chunk, Source


def _chunk(
    cid: str, *, book: str = "必修一", section: str = "函数", pages: tuple[int | None, int | None] = (1, 2)
) -> Chunk:
    return Chunk(cid, f"doc-{cid}", f"text of {cid}", "child", None, book, section, pages[0], pages[1], 0, 10)


def test_build_sources_dedupes_by_chunk_id_and_numbers_in_context_order() -> None:
    a, b, c = _chunk("a"), _chunk("b", book="必修二", section="数列", pages=(30, 30)), _chunk("c", pages=(None, None))
    sources = build_sources([b, a, b, c, a])
    assert [s.chunk_id for s in sources] == ["b", "a", "c"]  # first-seen order, copies dropped
    assert [s.n for s in sources] == [1, 2, 3]
    assert sources[0] == Source(1, "b", "doc-b", "必修二", "数列", 30, 30)
    assert (sources[2].page_start, sources[2].page_end) == (None, None)
    assert [n for n, _ in numbered_chunks([b, a, b, c, a])] == [1, 2, 3]


def test_build_sources_of_empty_context_is_empty() -> None:
    assert build_sources([]) == []


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("顶点式 [1]，对称轴 [2]。", [1, 2]),
        ("both [1][2] and again [1]", [1, 2]),  # distinct, first-appearance order
        ("see [3, 1]", [3, 1]),
        ("see [1,2]", [1, 2]),
        ("见[2，3]与[4、5]", [2, 3, 4, 5]),  # Chinese comma and enumeration comma
        ("see [1-3]", [1, 2, 3]),  # a range expands: 1, 2, 3
        ("见【2】和［4］", [2, 4]),  # full-width brackets
        ("no citations here", []),
        ("[12] is a two-digit citation", [12]),
    ],
)
def test_cited_numbers_formats(answer: str, expected: list[int]) -> None:
    assert cited_numbers(answer) == expected


@pytest.mark.parametrize(
    "answer",
    [
        "定义域为 $[0,1]$。",
        "区间 $x \\in [1, 2]$ 上单调",
        "$$\\int_{[1,3]} f$$",
        "取 \\(x\\in[2,5]\\) 时",
        "\\[ [1,2] \\]",
        "区间[0,1]上",  # outside maths, but 0 is never a citation number: an interval
        "[3-1]",  # backwards range: not a citation
        "[1-100]",  # a range of 100 numbers is not a citation
    ],
)
def test_brackets_in_maths_and_intervals_are_not_citations(answer: str) -> None:
    assert cited_numbers(answer) == []


def test_maths_and_citations_side_by_side() -> None:
    answer = "在 $[0,1]$ 上 $f(x)$ 递增 [2]；而 $[1,2]$ 上递减 [3]。价格 \\$5 [1]"
    assert cited_numbers(answer) == [2, 3, 1]  # "\$" is a literal dollar, not a maths delimiter


def test_math_spans_and_mask_keep_offsets() -> None:
    text = "设 $a_1=1$，且 $$S_n=\\frac{n(n+1)}{2}$$ 成立"
    spans = math_spans(text)
    assert [text[s:e] for s, e in spans] == ["$a_1=1$", "$$S_n=\\frac{n(n+1)}{2}$$"]
    masked = mask_math(text, fill="_")
    assert len(masked) == len(text) and "$" not in masked and masked.startswith("设 _______，")
    assert math_spans("unclosed $x + 1") == []


def test_is_refusal() -> None:
    assert is_refusal(REFUSAL_TEXT)
    assert is_refusal("抱歉，资料中没有找到相关内容。")
    assert is_refusal("  No relevant   material was found. ")  # case and spacing do not matter
    assert not is_refusal("顶点式是 $y=a(x-h)^2+k$ [1]")
    assert not is_refusal("")  # an empty answer earns no refusal credit
    assert "资料中没有找到相关内容" in REFUSAL_TEXT and "No relevant material was found." in REFUSAL_TEXT
    assert cited_numbers(REFUSAL_TEXT) == []
