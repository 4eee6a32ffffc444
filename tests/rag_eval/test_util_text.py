"""rag_eval.util.text.terms: the model-free terms of the framework's own checks."""

from __future__ import annotations

import pytest

from rag_eval.util.text import terms


def test_han_runs_give_characters_then_bigrams_and_latin_runs_one_folded_term() -> None:
    assert terms("Hello, ÉTÉ! 数列") == ["hello", "été", "数", "列", "数列"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a Latin variable written against Chinese: once one term "x上每一点…", sharing nothing
        ("x上每一", ["x", "上", "每", "一", "上每", "每一"]),
        ("an是", ["an", "是"]),
        ("a²+b²", ["a", "2", "b", "2"]),  # NFKC makes ² a 2 next to the letter
        ("sin45°", ["sin", "45"]),
    ],
)
def test_a_letter_run_stops_where_han_characters_or_digits_start(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


@pytest.mark.parametrize(
    ("unicode", "latex"),
    [
        ("β=α+k·360°", r"\beta=\alpha+k\cdot360^\circ"),
        ("P(μ-3σ)≈0.9973", r"P(\mu-3\sigma)\approx0.9973"),
        ("√(a²+b²) sin(x+φ)", r"\sqrt{a^2+b^2}\sin(x+\varphi)"),
        ("Δ=b²-4ac", r"\Delta=b^2-4ac"),
    ],
)
def test_a_fact_in_unicode_has_the_terms_of_its_latex_source(unicode: str, latex: str) -> None:
    assert terms(unicode) == terms(latex)


def test_unknown_commands_are_markup_and_split_what_they_join() -> None:
    assert terms(r"S_n=\frac{n(a_1+a_n)}{2}") == ["s", "n", "n", "a", "1", "a", "n", "2"]
    assert terms(r"\mathrm{d}x") == ["d", "x"]
