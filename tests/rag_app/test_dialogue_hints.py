"""Layered hints from the material: pools, ranking, [n] citations, focus and fallback."""

from __future__ import annotations

from rag_app.generation.hints import compose, material_sentences, pools, setup_clause
from rag_app.text import tokenize
from rag_app.types import Chunk

QUAD = """## 3.5 二次函数的最值

在闭区间 $[m,n]$ 上求最值，关键是看对称轴和区间的位置关系。

对称轴在区间外时，函数在区间上单调，最值在端点处取得。

注意：不要忘记比较两个端点的函数值。

```python
print("最小值为 -4")
```

### 例21 闭区间上的最值

求 $f(x)=x^2-6x+5$ 在 $[1,4]$ 上的最大值和最小值。

解：设 $t=x-3$，则 $f(x)=t^2-4$。所以最小值为 $f(3)=-4$。
"""
SEQ = "## 4.5 等比数列\n\n等比数列求和公式必须区分公比是否为 $1$ 两种情况。\n"


def _chunks() -> list[Chunk]:
    return [
        Chunk("q", "b1", QUAD, "parent", None, "必修第一册", "3.5 二次函数的最值", 17, 18, 0, len(QUAD)),
        Chunk("s", "b2", SEQ, "parent", None, "选择性必修第二册", "4.5 等比数列", 6, 7, 0, len(SEQ)),
    ]


TERMS = ["二次函数", "闭区间", "最值"]


def test_sentences_are_labelled_and_code_is_left_out() -> None:
    kinds = {(s.n, s.kind) for s in material_sentences(_chunks())}
    assert kinds == {(1, "explanation"), (1, "statement"), (1, "solution"), (2, "explanation")}
    assert not any("print" in s.text for s in material_sentences(_chunks()))
    by_level = pools(material_sentences(_chunks()))
    assert all(s.kind == "explanation" for s in by_level["reminder"] + by_level["approach"])
    assert any(s.text.startswith("注意") for s in by_level["wrong_direction"])
    assert not any(s.text.startswith("注意") for s in by_level["reminder"])


def test_each_layer_cites_its_chunk() -> None:
    reminder = compose("reminder", material_sentences(_chunks()), TERMS, tokenize, "zh")
    assert reminder is not None and reminder.level == "reminder"
    assert reminder.text.startswith("【知识提醒】") and "[1]" in reminder.text and "关键是看对称轴" in reminder.text
    caution = compose("wrong_direction", material_sentences(_chunks()), TERMS, tokenize, "en")
    assert caution is not None and caution.text.startswith("[Watch out] ") and "注意：不要忘记" in caution.text


def test_approach_offers_the_setup_clause_of_the_solution() -> None:
    assert setup_clause("解：设售价为 $x$ 元，日利润 $y=(x-40)(500-10x)$。") == "设售价为 $x$ 元"
    assert setup_clause("解：$f(x)=(x-3)^2-4$，对称轴…") is None  # it already computes
    assert setup_clause("解：设 $t=x-3$，则 $f(x)=t^2-4$。") is None  # "设 t=x-3" computes too
    hint = compose(
        "approach", material_sentences(_chunks()), TERMS, tokenize, "zh", setup="设售价为 $x$ 元", demand=True
    )
    assert (
        hint is not None
        and "第一步可以这样开始：设售价为 $x$ 元" in hint.text
        and "完整答案我不能直接给你" in hint.text
    )


def test_focus_prefers_the_target_section_and_layers_fall_back_deeper_first() -> None:
    sentences = material_sentences(list(reversed(_chunks())))  # the quadratic section is now [2]
    focused = compose("wrong_direction", sentences, ["公比"], tokenize, "zh", focus=2)
    assert focused is not None and all(s.n == 2 for s in focused.sentences)
    only_seq = [s for s in sentences if s.n == 1]  # 4.5 has no method sentence: approach falls to wrong_direction
    deeper = compose("approach", only_seq, ["公比"], tokenize, "zh")
    assert deeper is not None and deeper.level == "wrong_direction"


def test_allowed_filters_every_quoted_sentence() -> None:
    nothing = compose("reminder", material_sentences(_chunks()), TERMS, tokenize, "zh", allowed=lambda t: False)
    assert nothing is None
