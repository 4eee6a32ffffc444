"""Conditions a problem gives, recognised in problem text (the material's or the student's).

A missing condition is one the matched worked example states and the student's problem
does not: the example "求 f(x)=x^2-6x+5 在 [1,4] 上的最值" gives an interval, the
student's "求 f(x)=x^2-6x+5 的最值" does not, so the tutor asks for the interval. The
kinds are the ones that change how a school maths problem is solved:

==================  =========================================  ===========================
kind                recognised in text as                      example
==================  =========================================  ===========================
``interval``        a closed or half-open interval             ``[1,4]``, ``在 (0,2] 上``
``range``           a bound on a variable                      ``x>1``, ``a\\ge 0``
``point``           a point with coordinates                   ``点 (1,1)``, ``point (1,0)``
``angle``           an angle with its size                     ``B=45°``, ``B=45^\\circ``
``probability``     a rate or probability with a value         ``命中率分别为 0.8``, ``5%``
==================  =========================================  ===========================

Besides these, three identification slots locate a problem in the material: ``book``
(a book title of the corpus), ``problem`` (例N / Example N) and ``part`` (（2）, 第2问).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

CONDITION_KINDS: tuple[str, ...] = ("interval", "range", "point", "angle", "probability")

_NUM = r"-?(?:\d+(?:\.\d+)?|\\?[a-z]|\\frac\{?\d+\}?\{?\d+\}?|\\sqrt\{?\d+\}?)"
_PATTERNS: dict[str, re.Pattern[str]] = {
    "interval": re.compile(
        rf"\[\s*{_NUM}[^\[\],]*,\s*[^\[\],]+[\])]|\(\s*{_NUM}\s*,\s*[^()]+\]|在\s*\(\s*{_NUM}\s*,\s*[^()]+\)\s*(?:上|内)",
        re.IGNORECASE,
    ),
    "range": re.compile(
        r"(?<![a-z\\])[a-z]\s*(?:>|<|≥|≤|\\geq?(?![a-z])|\\leq?(?![a-z])|\\geqslant|\\leqslant|\\gt|\\lt)\s*-?\d",
        re.IGNORECASE,
    ),
    "point": re.compile(rf"(?:点|point)\s*[a-z]?\s*\(\s*{_NUM}\s*,\s*{_NUM}\s*\)", re.IGNORECASE),
    "angle": re.compile(r"(?<![a-z])([a-z])\s*=\s*\d+(?:\.\d+)?\s*(?:°|\^?\\circ|\^\{\\circ\}|度)", re.IGNORECASE),
    "probability": re.compile(
        r"(?:概率|率|probabilit|rate|chance)[^。；;\n]{0,12}?(?:0\.\d+|\d+(?:\.\d+)?\s*(?:%|\\%))"
        r"|(?:0\.\d+|\d+(?:\.\d+)?\s*(?:%|\\%))[^。；;\n]{0,4}(?:的概率|probability)",
        re.IGNORECASE,
    ),
}
_RATE_WORD = re.compile(r"([\u4e00-\u9fff]{1,3}(?:率|的概率))")
_PART = re.compile(
    r"第\s*[（(]?\s*(\d{1,2})\s*[)）]?\s*(?:问|小题|小问)|[（(]\s*(\d{1,2})\s*[)）]|\bpart\s*\(?(\d{1,2})\)?",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"例\s*(\d+)|第\s*(\d+)\s*题|\b(?:example|exercise|problem)\s+(\d+)", re.IGNORECASE)


def normalise(text: str) -> str:
    """NFKC, ``$`` dropped, lower case: what every detector reads."""
    return unicodedata.normalize("NFKC", text).replace("$", "").lower()


def kinds_in(text: str) -> set[str]:
    """The condition kinds a problem text gives."""
    flat = normalise(text)
    return {kind for kind, pattern in _PATTERNS.items() if pattern.search(flat)}


@dataclass(frozen=True)
class ConditionAsk:
    """One condition to ask for: its kind and the words the material uses for it."""

    kind: str
    detail: str = ""  # e.g. the angle's letter "B" or the rate's word "命中率"


def describe(kind: str, example_statement: str) -> ConditionAsk:
    """The words of the matched example for ``kind``, so the question names the right thing."""
    flat = normalise(example_statement)
    if kind == "angle":
        m = _PATTERNS["angle"].search(flat)
        return ConditionAsk(kind, m.group(1).upper() if m else "")
    if kind == "probability":
        m = _RATE_WORD.search(unicodedata.normalize("NFKC", example_statement))
        return ConditionAsk(kind, m.group(1) if m else "")
    if kind == "range":
        m = _PATTERNS["range"].search(flat)
        return ConditionAsk(kind, m.group(0).strip()[0] if m else "")
    return ConditionAsk(kind)


def book_in(text: str, books: Iterable[str]) -> str | None:
    """The corpus book a text names; the longest title wins ("选择性必修第二册" over "必修第二册")."""
    flat = unicodedata.normalize("NFKC", text).replace(" ", "")
    for book in sorted(books, key=len, reverse=True):
        if book and book.replace(" ", "") in flat:
            return book
    return None


def number_in(text: str) -> int | None:
    """The example number a text refers to: 例13, 第13题, Example 13."""
    m = _NUMBER.search(unicodedata.normalize("NFKC", text))
    if not m:
        return None
    return int(next(g for g in m.groups() if g))


def part_in(text: str) -> int | None:
    """The sub-question a text names: 第（3）问, （3）, part 3."""
    m = _PART.search(unicodedata.normalize("NFKC", text))
    if not m:
        return None
    return int(next(g for g in m.groups() if g))
