"""How the evaluation reads citations in an answer, and numbers the context it cites.

The convention scored by default is the common one (and rag_app's): ``[n]`` in an answer
refers to the n-th *distinct* item of the context the system says it gave the
generator, in context order. The bracket forms accepted are ``[1]``, ``[1][2]``,
``[1, 2]``, ``[1，2]``, ``[1、2]``, ``[1-3]`` and the full-width ``【1】`` / ``［1］`` that
Chinese-writing models produce. A system with another marker syntax sets
``citation_pattern`` (a regular expression whose first group holds the number list) in
its pipeline configuration; :class:`CitationFormat` carries it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from rag_eval.core.records import Chunk

T = TypeVar("T", bound=Chunk)

# --- maths spans ---------------------------------------------------------------------
# $$...$$ first so that "$$x$$" is not read as two empty "$...$" spans; "\$" is a literal
# dollar sign, not a delimiter. \( \) and \[ \] are the other LaTeX inline/display forms.
_MATH = re.compile(
    r"(?<!\\)\$\$.+?(?<!\\)\$\$"
    r"|(?<!\\)\$(?!\$).+?(?<!\\)\$"
    r"|\\\(.+?\\\)"
    r"|\\\[.+?\\\]",
    re.DOTALL,
)
DEFAULT_PATTERN = r"[\[【［]\s*(\d+(?:\s*[-–~,，、]\s*\d+)*)\s*[\]】］]"
_ITEM = re.compile(r"(\d+)(?:\s*[-–~]\s*(\d+))?")
_MAX_RANGE = 50  # "[1-3]" expands; "[1-2000]" is not a citation


def math_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of LaTeX maths in ``text``; an unclosed ``$`` opens nothing."""
    return [m.span() for m in _MATH.finditer(text)]


def mask_math(text: str, fill: str = " ") -> str:
    """``text`` with every maths span replaced by ``fill`` characters (offsets kept)."""
    spans = math_spans(text)
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(fill * (end - start))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


@dataclass(frozen=True)
class CitationFormat:
    """The marker syntax of a system's inline citations (``pattern``: group 1 = numbers)."""

    pattern: str = DEFAULT_PATTERN
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = re.compile(self.pattern)
        if compiled.groups < 1:
            raise ValueError(
                f"citation_pattern {self.pattern!r} needs a group holding the number(s), e.g. \\[(\\d+)\\]"
            )
        object.__setattr__(self, "_compiled", compiled)

    def cited_numbers(self, answer: str) -> list[int]:
        """The source numbers an answer cites, distinct, in order of first appearance.

        Rules (chosen so that maths text does not produce false citations):

        * markers inside ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` are maths, never
          citations: ``$x\\in[0,1]$`` cites nothing;
        * a group containing 0 is an interval, not a citation (numbering starts at 1), so a
          bare ``[0,1]`` outside maths cites nothing either; ``[1,2]`` outside maths *is*
          read as citing 1 and 2 -- put intervals inside ``$...$``;
        * ``[1][2]``, ``[1, 2]``, ``[1，2]``, ``[1-3]`` (= 1, 2, 3) and ``【1】`` are accepted.
        """
        text = mask_math(answer)
        out: list[int] = []
        seen: set[int] = set()
        for group in self._compiled.finditer(text):
            numbers: list[int] = []
            for item in _ITEM.finditer(group.group(1) or ""):
                lo = int(item.group(1))
                hi = int(item.group(2)) if item.group(2) else lo
                if hi < lo or hi - lo > _MAX_RANGE:
                    numbers = []
                    break
                numbers.extend(range(lo, hi + 1))
            if not numbers or 0 in numbers:
                continue
            for n in numbers:
                if n not in seen:
                    seen.add(n)
                    out.append(n)
        return out


DEFAULT_FORMAT = CitationFormat()


def cited_numbers(answer: str) -> list[int]:
    """:meth:`CitationFormat.cited_numbers` with the default ``[n]`` format."""
    return DEFAULT_FORMAT.cited_numbers(answer)


def numbered_chunks(context: Sequence[T]) -> list[tuple[int, T]]:
    """``(n, item)`` for each distinct item id, numbered 1.. in first-seen order.

    Duplicates can reach a context (the same parent chosen via two children); numbering
    them twice would make ``[2]`` and ``[3]`` the same source, so later copies are dropped.
    """
    seen: set[str] = set()
    out: list[tuple[int, T]] = []
    for chunk in context:
        if chunk.chunk_id in seen:
            continue
        seen.add(chunk.chunk_id)
        out.append((len(out) + 1, chunk))
    return out


def chunk_label(n: int, chunk: Chunk) -> str:
    """``[n] (book - section, 第a-b页)`` for prompts and reports; parts left out when unknown."""
    where = " - ".join(part for part in (chunk.book, chunk.section) if part)
    pages = chunk.pages_label
    inner = ", ".join(part for part in (where, pages) if part)
    return f"[{n}] ({inner})" if inner else f"[{n}]"
