"""Answer interception: forbidden phrases from the caller and the material's worked solutions."""

from __future__ import annotations

from rag_app.generation.interception import BLOCKED_TEXT, LeakGuard, fold, intercept, solution_fragments

SOLUTION = (
    "解：设售价为 $x$ 元，日利润 $y=(x-40)[500-10(x-50)]=-10(x-40)(x-100)$。对称轴 $x=\\frac{40+100}{2}=70$。"
    "所以售价定为 $70$ 元时利润最大，最大日利润为 $30\\times300=9000$ 元。"
)
STATEMENT = "某商品进价 $40$ 元，售价 $50$ 元时每天可卖出 $500$ 件。"


def test_fold_ignores_case_width_spacing_punctuation_and_dollars() -> None:
    assert fold("$-10(x-40)(x-100)$") == fold("－10 (x-40) (x-100)") == "10x40x100"
    assert fold("V(1) = 1\\times 4^2 = 16") == fold("$V(1)=1\\times4^2=16$")


def test_solution_fragments_are_results_not_givens() -> None:
    pieces = solution_fragments(SOLUTION, STATEMENT)
    assert fold("-10(x-40)(x-100)") in pieces and fold("9000") in pieces
    assert fold("70") not in pieces  # two characters would match unrelated text
    assert all(fold("500") != p for p in pieces)  # a given of the statement is no answer
    assert any(p.startswith(fold("所以售价定为")) for p in pieces)  # the final sentence itself


def test_guard_from_caller_material_and_inline_answers() -> None:
    guard = LeakGuard.build(
        ["\\frac13"], [(SOLUTION, STATEMENT)], ["求 $\\sum\\frac{k}{2^k}$。（答案：$2-\\frac{n+2}{2^n}$。）"]
    )
    assert guard.leaks("所以概率是 $\\frac13$") and guard.leaks("最大日利润为 9000 元")
    assert guard.leaks("答案是 2-\\frac{n+2}{2^n}")
    assert not guard.leaks("先写出利润关于售价的函数，再看对称轴。")
    assert not LeakGuard.build().leaks("9000")  # nothing forbidden: nothing leaks


def test_intercept_passes_rewrites_or_blocks() -> None:
    guard = LeakGuard.build(["9000"])
    assert intercept("先看对称轴 [1]", guard, ["x"], "zh").interception is None
    rewritten = intercept("最大利润 9000 元 [1]", guard, [None, "先看对称轴 [1]"], "zh")
    assert (rewritten.final, rewritten.interception) == ("先看对称轴 [1]", "rewritten") and rewritten.found == ("9000",)
    blocked = intercept("最大利润 9000 元", guard, ["还是 9000"], "en")
    assert (blocked.final, blocked.interception) == (BLOCKED_TEXT["en"], "blocked")
