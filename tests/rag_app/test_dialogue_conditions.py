"""Condition kinds and identification slots recognised in material and student text."""

from __future__ import annotations

import pytest

from rag_app.dialogue.conditions import book_in, describe, kinds_in, number_in, part_in

BOOKS = ("必修第一册", "必修第二册", "选择性必修第二册", "选择性必修第三册")


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("求 $f(x)=x^2-6x+5$ 在 $[1,4]$ 上的最大值和最小值。", {"interval"}),
        ("题目说的是在 [1,4] 上", {"interval"}),
        ("求 f(x)=x^2-2ax+1 在某闭区间上的最小值。", set()),  # an interval is named, not given
        ("已知 $x>1$，求 $y=x+\\frac{1}{x-1}$ 的最小值", {"range"}),
        ("求 $y=x^3$ 在点 $(1,1)$ 处的切线方程。", {"point"}),
        ("在 $\\triangle ABC$ 中，$a=\\sqrt3$，$b=\\sqrt2$，$B=45^\\circ$，求 $A$。", {"angle"}),
        ("还有 B=45°，我刚才漏抄了", {"angle"}),
        ("甲、乙两人独立射击同一目标，命中率分别为 $0.8$ 和 $0.7$。", {"probability"}),
        ("在△ABC 中，a=√3，b=√2，求角 A。", set()),
    ],
)
def test_kinds_in(text: str, kinds: set[str]) -> None:
    assert kinds_in(text) == kinds


def test_describe_uses_the_examples_words() -> None:
    assert describe("angle", "$a=\\sqrt3$，$B=45^\\circ$").detail == "B"
    assert describe("probability", "命中率分别为 $0.8$ 和 $0.7$").detail == "命中率"
    assert describe("range", "已知 $x>1$").detail == "x"


def test_book_number_and_part() -> None:
    assert book_in("选择性必修第二册，数列那一章的", BOOKS) == "选择性必修第二册"  # not 必修第二册
    assert book_in("数列那一章", BOOKS) is None
    assert (
        number_in("例13 我不会") == 13 and number_in("Example 29, the open box") == 29 and number_in("那道题") is None
    )
    assert part_in("第（3）问，求 a1+a3+a5") == 3 and part_in("how to set up the volume") is None
