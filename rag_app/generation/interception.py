"""Answer interception: a reply must not hand over the worked answer.

Two sources of forbidden content:

* the caller's list (``context["forbidden"]`` of a dialogue call), e.g. the final result
  of the homework problem;
* answers the material states inline (``（答案：$2-\frac{n+2}{2^n}$）``);
* the worked solutions in the retrieved material: for every ``解：`` block of a worked
  example in the context, the final right-hand side of each equation (``…=9000`` ->
  ``9000``, ``…=-10(x-40)(x-100)`` -> ``-10(x-40)(x-100)``; at least 3 characters, and not
  a value the problem statement itself gives) and, from the final sentence of the block
  (``所以…``, ``故…``, ``答：…``), each whole equation and the sentence itself.

Text is compared after NFKC, lower case, and removing whitespace, punctuation, ``$`` and
LaTeX spacing, so a re-punctuated or re-typeset answer is still caught. A reply that
contains forbidden content is rewritten into the hint due at this turn built from clean
material only, or blocked with a fixed guiding sentence when no clean hint exists.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_app.generation.extractive import split_sentences
from rag_app.generation.sources import math_spans

_LATEX_SPACING = re.compile(r"\\[,;:!]|\\q?quad|\\left|\\right")
_EQUATION_SPLIT = re.compile(r"=|≈|\\approx")
_FINAL_SENTENCE = re.compile(r"^\s*(?:所以|故|综上|因此|从而|即|答)")
#: An answer given inline, e.g. an exercise's "（答案：$2-\frac{n+2}{2^n}$）".
_INLINE_ANSWER = re.compile(r"(?:答案|answer)\s*[:：]\s*([^）)\n。]+)", re.IGNORECASE)
MIN_RESULT_CHARS = 3  # "16" or "70" alone would match unrelated text
MIN_EQUATION_CHARS = 6

BLOCKED_TEXT = {
    "zh": "这一步的结果我不能直接告诉你。先按前面的提示自己算一算，把你的过程发给我，我帮你看哪里需要调整。",
    "en": (
        "I can't give you the result of this step. "
        "Work it out with the hints so far and send me your steps; I'll help you check them."
    ),
}


def fold(text: str) -> str:
    """The comparison form: NFKC, lower case, no whitespace, punctuation, ``$`` or LaTeX spacing."""
    text = _LATEX_SPACING.sub("", unicodedata.normalize("NFKC", text)).lower()
    return "".join(ch for ch in text if not ch.isspace() and ch != "$" and not unicodedata.category(ch).startswith("P"))


def solution_fragments(solution: str, statement: str = "") -> tuple[str, ...]:
    """The result-bearing pieces of one worked solution (see the module docstring), folded."""
    given = fold(statement)
    sentences = split_sentences(solution)
    out: list[str] = []

    def add(piece: str, minimum: int) -> None:
        folded = fold(piece)
        if len(folded) >= minimum and folded not in given and folded not in out:
            out.append(folded)

    for i, sentence in enumerate(sentences):
        final = i == len(sentences) - 1 or _FINAL_SENTENCE.match(sentence) is not None
        for start, end in math_spans(sentence):
            span = sentence[start:end].strip("$")
            sides = _EQUATION_SPLIT.split(span)
            if len(sides) > 1:
                add(sides[-1], MIN_RESULT_CHARS)
                if final:
                    add(span, MIN_EQUATION_CHARS)
        if final and _FINAL_SENTENCE.match(sentence):
            add(sentence, 8)
    return tuple(out)


@dataclass(frozen=True)
class LeakGuard:
    """What no reply may contain: folded forbidden phrases from the caller and the material."""

    phrases: tuple[str, ...] = ()

    @classmethod
    def build(
        cls, forbidden: Iterable[str] = (), solutions: Iterable[tuple[str, str]] = (), material: Iterable[str] = ()
    ) -> LeakGuard:
        """``forbidden``: the caller's phrases; ``solutions``: ``(solution, statement)`` pairs of
        the worked examples; ``material``: texts whose inline answers are forbidden too."""
        phrases: list[str] = []

        def add(folded: str) -> None:
            if folded and folded not in phrases:
                phrases.append(folded)

        for phrase in forbidden:
            add(fold(phrase))
        for solution, statement in solutions:
            for piece in solution_fragments(solution, statement):
                add(piece)
        for text in material:
            for m in _INLINE_ANSWER.finditer(text):
                if len(fold(m.group(1))) >= MIN_RESULT_CHARS:
                    add(fold(m.group(1)))
        return cls(tuple(phrases))

    def found(self, text: str) -> list[str]:
        """The forbidden phrases ``text`` contains (folded), in guard order."""
        folded = fold(text)
        return [p for p in self.phrases if p in folded]

    def leaks(self, text: str) -> bool:
        return bool(self.found(text))


@dataclass(frozen=True)
class Intercepted:
    """The outcome of interception: the reply to show and what happened to the candidate."""

    final: str
    interception: str | None  # None (passed), "rewritten" or "blocked"
    found: tuple[str, ...] = ()


def intercept(candidate: str, guard: LeakGuard, rewrites: Sequence[str | None], lang: str) -> Intercepted:
    """Pass a clean candidate; else the first clean rewrite; else the blocking sentence."""
    found = guard.found(candidate)
    if not found:
        return Intercepted(candidate, None)
    for text in rewrites:
        if text and not guard.leaks(text):
            return Intercepted(text, "rewritten", tuple(found))
    return Intercepted(BLOCKED_TEXT["zh" if lang == "zh" else "en"], "blocked", tuple(found))
