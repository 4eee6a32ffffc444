"""Deterministic answer checks: one passing and one failing example each, messages asserted."""

from __future__ import annotations

from fractions import Fraction

import pytest

from rag_app.generation import sources as system_sources
from rag_app.types import ChatResult, Chunk, Source, Trace
from rag_eval.metrics import deterministic as det
from rag_eval.metrics.deterministic import (
    AnswerView,
    CheckResult,
    answer_not_empty,
    asks_clarifying_question,
    citations_resolve,
    expected_action,
    must_contain,
    must_not_contain,
    no_duplicate_sources,
    numbers_grounded,
    numbers_in,
    run_all,
    source_pages_within_context,
    sources_present,
)


def chunk(chunk_id: str, text: str = "", pages: tuple[int | None, int | None] = (10, 12)) -> Chunk:
    return Chunk(
        chunk_id=chunk_id,
        doc_id="book1",
        text=text,
        kind="parent",
        parent_id=None,
        book="必修一",
        section="二次函数",
        page_start=pages[0],
        page_end=pages[1],
        char_start=0,
        char_end=len(text),
    )


def source(n: int, chunk_id: str, pages: tuple[int | None, int | None] = (10, 12)) -> Source:
    return Source(
        n=n,
        chunk_id=chunk_id,
        doc_id="book1",
        book="必修一",
        section="二次函数",
        page_start=pages[0],
        page_end=pages[1],
    )


# --------------------------------------------------------------------------- answer and sources


def test_answer_not_empty() -> None:
    assert answer_not_empty("顶点式 [1]") == CheckResult("answer_not_empty", True, "answer has 7 characters")
    assert answer_not_empty(" \n") == CheckResult("answer_not_empty", False, "expected a non-empty answer, got ' \\n'")


def test_sources_present() -> None:
    assert sources_present(False, [source(1, "c1")]) == CheckResult(
        "sources_present", True, "1 source for a non-refusal answer"
    )
    assert sources_present(True, []) == CheckResult("sources_present", True, "refusal: sources not required (0 given)")
    assert sources_present(False, []) == CheckResult(
        "sources_present", False, "expected at least 1 source for a non-refusal answer, got none"
    )


def test_citations_resolve_pass() -> None:
    result = citations_resolve("顶点式 [1]，对称轴 [1, 2]。", 2)
    assert result == CheckResult("citations_resolve", True, "2 citations ([1], [2]) resolve to the 2 context chunks")
    one = citations_resolve("顶点式 [1]。", 1)
    assert one == CheckResult("citations_resolve", True, "1 citation ([1]) resolves to the 1 context chunk")


def test_citations_resolve_fail_names_the_bad_numbers() -> None:
    assert citations_resolve("见 [1][2] 和 [3]", 2) == CheckResult(
        "citations_resolve", False, "[3] does not resolve: the context has 2 chunks"
    )
    assert citations_resolve("见 [3][4]", 2).message == "[3], [4] do not resolve: the context has 2 chunks"
    assert citations_resolve("见 [1]", 0).message == "[1] does not resolve: the context has 0 chunks"


def test_maths_brackets_are_not_citations() -> None:
    answer = "定义域为 $x\\in[0,1]$，值域 $$[2, 5]$$"
    assert citations_resolve(answer, 1) == CheckResult("citations_resolve", True, "no inline [n] citations to resolve")


SAMPLES = [
    "a [2][1] b [1, 3] $[4,5]$",
    "【1】和［2］",
    "[1-3] 与 [0,1]",
    "$x\\in[0,1]$ [2]",
    "[1，2、4]",
    "[1-2000]",
    "无引用",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_default_citation_format_reads_markers_as_rag_app_writes_them(text: str) -> None:
    # rag_eval owns its parser; on rag_app's [n] convention it agrees with rag_app's own
    assert det.cited_numbers(text) == system_sources.cited_numbers(text)


def test_a_systems_own_citation_syntax() -> None:
    from rag_eval.citations import CitationFormat

    fmt = CitationFormat(r"\^(\d+)")  # footnote style: x^1 ... y^2
    assert fmt.cited_numbers("first^1 then^2, again^1") == [1, 2]
    assert det.citations_resolve("a^3", 2, fmt).passed is False


def test_source_pages_within_context_pass() -> None:
    context = [chunk("c1", pages=(10, 12)), chunk("c2", pages=(30, None))]
    sources = [source(1, "c1", (11, 12)), source(2, "c2", (30, 30)), source(3, "c1", (None, None))]
    assert source_pages_within_context(sources, context) == CheckResult(
        "source_pages_within_context", True, "all 3 sources lie within their context chunks' pages"
    )


def test_source_pages_within_context_fail() -> None:
    context = [chunk("c1", pages=(10, 12)), chunk("c3", pages=(None, None))]
    sources = [source(1, "c1", (12, 13)), source(2, "c9"), source(3, "c3", (5, 5))]
    result = source_pages_within_context(sources, context)
    assert not result.passed
    assert result.message == (
        "source [1] (chunk 'c1') claims pages 12-13 but the context chunk covers pages 10-12; "
        "source [2] cites chunk 'c9', which is not in the context; "
        "source [3] (chunk 'c3') claims page 5 but the context chunk covers no pages"
    )


def test_no_duplicate_sources() -> None:
    assert no_duplicate_sources([source(1, "c1"), source(2, "c2")]) == CheckResult(
        "no_duplicate_sources", True, "2 sources, all distinct chunk ids"
    )
    assert no_duplicate_sources([source(1, "c1"), source(2, "c2"), source(3, "c1")]) == CheckResult(
        "no_duplicate_sources", False, "expected distinct chunk ids in sources: chunk 'c1' appears 2 times ([1], [3])"
    )


# --------------------------------------------------------------------------- required / forbidden text


def test_must_contain_ignores_case_width_and_whitespace() -> None:
    answer = "二次函数的顶点式 Vertex  Form [1]"
    assert must_contain(answer, ["vertex form", "顶点 式", "ＶＥＲＴＥＸ"]) == CheckResult(
        "must_contain", True, "all 3 required phrases present"
    )


def test_must_contain_names_the_missing() -> None:
    assert must_contain("二次函数的顶点式 [1]", ["顶点式", "对称轴", "Axis"]) == CheckResult(
        "must_contain", False, "missing 2 of 3 required phrases: '对称轴', 'Axis'"
    )


def test_must_not_contain_catches_reformatted_leak() -> None:
    answer = "所以 $x=2$，$y = 3$ [1]"
    assert must_not_contain(answer, ["x = 2, y = 3", "答案是"]) == CheckResult(
        "must_not_contain", False, "forbidden content in the answer: 'x = 2, y = 3'"
    )


def test_must_not_contain_pass() -> None:
    assert must_not_contain("先求对称轴 [1]", ["x = 2, y = 3"]) == CheckResult(
        "must_not_contain", True, "none of 1 forbidden phrase present"
    )


@pytest.mark.parametrize("check", [must_contain, must_not_contain])
def test_empty_phrase_is_a_golden_set_error(check: object) -> None:
    with pytest.raises(ValueError, match=r"phrase #1 \(' '\) is empty after normalisation"):
        check("answer", ["ok", " "])  # type: ignore[operator]


# --------------------------------------------------------------------------- numbers


def test_numbers_in_skips_citations_and_list_numbering() -> None:
    answer = "1. 令 x=-3 [2]\n(2) 得 y=０.50，即 \\frac{3}{4}，x-1 [1, 3]"
    assert numbers_in(answer, answer=True) == [
        ("-3", Fraction(-3)),
        ("0.50", Fraction(1, 2)),
        ("3/4", Fraction(3, 4)),
        ("1", Fraction(1)),  # "x-1" is x minus 1, not -1
    ]


def test_numbers_grounded_pass() -> None:
    answer = "1. 顶点为 $(-1, 3)$ [1]\n2. 系数 0.50、\\dfrac{3}{4} 与 １２ [2]"
    context = ["顶点 (-1,3)，系数 0.5", "比例 3/4，共 12 个"]
    assert numbers_grounded(answer, context) == CheckResult(
        "numbers_grounded", True, "all 5 numbers of the answer occur in the context"
    )


def test_numbers_grounded_names_hallucinated_numbers() -> None:
    answer = "取 a=7，则 x=-3，再取 a=7 [1]"
    context = ["x-3=0 的解是 x=3"]  # the digits 3 are there, the value -3 is not
    assert numbers_grounded(answer, context) == CheckResult(
        "numbers_grounded",
        False,
        "numbers not in the context: 7, -3 (the answer has 3 numbers; the context has 2 distinct values)",
    )


# --------------------------------------------------------------------------- expected action


def test_asks_clarifying_question_heuristic() -> None:
    assert asks_clarifying_question("你指的是哪一个函数？") is True
    assert asks_clarifying_question("Which function do you mean?") is True
    assert asks_clarifying_question("为什么成立？因为 [1]") is False  # cites: an answer
    assert asks_clarifying_question("顶点式为 $y=a(x-h)^2+k$ [1]") is False


@pytest.mark.parametrize(
    ("expected", "refused", "clarified", "passed", "message"),
    [
        ("answer", False, False, True, "expected 'answer', the system answered"),
        ("answer", True, False, False, "expected 'answer', the system refused"),
        ("answer", False, True, False, "expected 'answer', the system asked a clarifying question"),
        ("refuse", True, False, True, "expected 'refuse', the system refused"),
        ("refuse", False, False, False, "expected 'refuse', the system answered"),
        ("clarify", False, True, True, "expected 'clarify', the system asked a clarifying question"),
        ("clarify", False, False, False, "expected 'clarify', the system answered"),
    ],
)
def test_expected_action(expected: str, refused: bool, clarified: bool, passed: bool, message: str) -> None:
    assert expected_action(expected, refused, clarified) == CheckResult("expected_action", passed, message)


def test_expected_action_unknown() -> None:
    with pytest.raises(ValueError, match=r"unknown action 'reply'; valid actions: answer, refuse, clarify"):
        expected_action("reply", False, False)


# --------------------------------------------------------------------------- run_all

CONTEXT = (chunk("c1", "顶点式 y=a(x-h)^2+k，其中顶点为 (h,k)。"), chunk("c2", "对称轴 x=-b/(2a)。", pages=(13, 13)))


def test_run_all_good_answer_in_fixed_order() -> None:
    view = AnswerView(
        answer="顶点式为 $y=a(x-h)^2+k$ [1]，对称轴为 $x=-b/(2a)$ [2]。见第13页。",
        refused=False,
        sources=(source(1, "c1"), source(2, "c2", (13, 13))),
        context=CONTEXT,
        question="二次函数的顶点式是什么？",
        must_contain=("顶点式",),
        must_not_contain=("完整解答",),
        expected_action="answer",
    )
    results = run_all(view)
    assert tuple(r.name for r in results) == det.CHECK_NAMES
    assert [r.name for r in results] == [
        "answer_not_empty",
        "expected_action",
        "sources_present",
        "citations_resolve",
        "source_pages_within_context",
        "no_duplicate_sources",
        "must_contain",
        "must_not_contain",
        "numbers_grounded",
    ]
    assert all(r.passed for r in results), [r for r in results if not r.passed]


def test_run_all_bad_answer_messages() -> None:
    view = AnswerView(
        answer="答案是 x=5 [3]",
        refused=False,
        sources=(source(1, "c1"), source(2, "c1")),
        context=CONTEXT,
        must_contain=("对称轴",),
        must_not_contain=("答案是",),
        expected_action="refuse",
    )
    failed = {r.name: r.message for r in run_all(view) if not r.passed}
    assert failed == {
        "expected_action": "expected 'refuse', the system answered",
        "citations_resolve": "[3] does not resolve: the context has 2 chunks",
        "no_duplicate_sources": "expected distinct chunk ids in sources: chunk 'c1' appears 2 times ([1], [2])",
        "must_contain": "missing 1 of 1 required phrase: '对称轴'",
        "must_not_contain": "forbidden content in the answer: '答案是'",
        # context values: pages 10, 12 (第10-12页), 13 (第13页) and the exponent 2 -> 4 distinct
        "numbers_grounded": "numbers not in the context: 5 (the answer has 1 number; the context has 4 distinct values)",
    }


def test_run_all_skips_what_does_not_apply() -> None:
    refusal = AnswerView(answer=system_sources.REFUSAL_TEXT, refused=True, sources=(), context=())
    assert [(r.name, r.passed) for r in run_all(refusal)] == [
        ("answer_not_empty", True),
        ("sources_present", True),
        ("citations_resolve", True),
        ("source_pages_within_context", True),
        ("no_duplicate_sources", True),
    ]


def test_run_all_expected_clarification_needs_no_sources() -> None:
    view = AnswerView(
        answer="你指的是哪一个函数？", refused=False, sources=(), context=CONTEXT, expected_action="clarify"
    )
    assert [(r.name, r.passed) for r in run_all(view)] == [
        ("answer_not_empty", True),
        ("expected_action", True),
        ("citations_resolve", True),
        ("source_pages_within_context", True),
        ("no_duplicate_sources", True),
        ("numbers_grounded", True),
    ]


def test_answer_view_from_chat_result_uses_context_used() -> None:
    result = ChatResult(
        question="顶点式？",
        answer="顶点式 [1]",
        sources=(source(1, "c1"),),
        context_used=CONTEXT,
        trace=Trace(),
        generator="fake",
    )
    view = AnswerView.from_chat_result(result, must_contain=["顶点式"], expected_action="answer")
    assert view.context == CONTEXT
    assert view.question == "顶点式？"
    assert view.must_contain == ("顶点式",)
    assert all(r.passed for r in run_all(view))


def test_check_result_round_trips() -> None:
    r = CheckResult("must_contain", False, "missing 1 of 1 required phrase: 'x'")
    assert CheckResult.from_dict(r.to_dict()) == r
