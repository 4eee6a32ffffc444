"""Citation numbering, citation parsing and the refusal sentence.

The system, not the model, builds the source list: ``[n]`` in an answer refers to the
n-th *distinct* chunk of the context, in context order. The prompt
(:mod:`rag_app.generation.prompt`), the extractive baseline and :func:`build_sources`
all number through :func:`numbered_chunks`, so the three can never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_app.types import Chunk, Source

#: The one sentence every generator uses when the material does not answer the question.
#: Chinese first (the use case), English after it so non-Chinese readers know too.
REFUSAL_TEXT = "资料中没有找到相关内容，无法根据现有材料回答。(No relevant material was found.)"
_REFUSAL_MARKERS: tuple[str, ...] = ("资料中没有找到相关内容", "no relevant material was found")


def numbered_chunks(context: Sequence[Chunk]) -> list[tuple[int, Chunk]]:
    """``(n, chunk)`` for each distinct chunk id, numbered 1.. in first-seen order.

    Duplicates can reach the context (the same parent chosen via two children); numbering
    them twice would make ``[2]`` and ``[3]`` the same source, so later copies are dropped.
    """
    seen: set[str] = set()
    out: list[tuple[int, Chunk]] = []
    for chunk in context:
        if chunk.chunk_id in seen:
            continue
        seen.add(chunk.chunk_id)
        out.append((len(out) + 1, chunk))
    return out


def build_sources(context: Sequence[Chunk]) -> list[Source]:
    """The citation targets of an answer, from chunk metadata, numbered like the prompt."""
    return [
        Source(
            n=n,
            chunk_id=c.chunk_id,
            doc_id=c.doc_id,
            book=c.book,
            section=c.section,
            page_start=c.page_start,
            page_end=c.page_end,
        )
        for n, c in numbered_chunks(context)
    ]


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


# --- citations -----------------------------------------------------------------------
# One bracket group: [1] [1,2] [1, 2] [1，2] [1、2] [1-3], also full-width 【1】 and ［1］,
# which Chinese-writing models often produce.
_GROUP = re.compile(r"[\[【［]\s*(\d+(?:\s*[-–~,，、]\s*\d+)*)\s*[\]】］]")
_ITEM = re.compile(r"(\d+)(?:\s*[-–~]\s*(\d+))?")
_MAX_RANGE = 50  # "[1-3]" expands; "[1-2000]" is not a citation


def cited_numbers(answer: str) -> list[int]:
    """The source numbers an answer cites, distinct, in order of first appearance.

    Rules (chosen so that maths text does not produce false citations):

    * brackets inside ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` are maths, never
      citations: ``$x\\in[0,1]$`` cites nothing;
    * a group containing 0 is an interval, not a citation (numbering starts at 1), so a
      bare ``[0,1]`` outside maths cites nothing either; ``[1,2]`` outside maths *is* read
      as citing 1 and 2 -- put intervals inside ``$...$``;
    * ``[1][2]``, ``[1, 2]``, ``[1，2]``, ``[1-3]`` (= 1, 2, 3) and ``【1】`` are all accepted.
    """
    text = mask_math(answer)
    out: list[int] = []
    seen: set[int] = set()
    for group in _GROUP.finditer(text):
        numbers: list[int] = []
        for item in _ITEM.finditer(group.group(1)):
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


def is_refusal(answer: str) -> bool:
    """True when the answer says the material is not enough (the fixed sentence).

    Matches the Chinese or the English half of :data:`REFUSAL_TEXT`, case- and
    whitespace-insensitively, anywhere in the answer: models often wrap the sentence
    ("抱歉，资料中没有找到相关内容……"), and the system prompt asks for exactly it.
    An empty answer is *not* a refusal: only the explicit sentence earns refusal credit.
    """
    norm = re.sub(r"\s+", " ", answer).strip().lower()
    return any(marker in norm for marker in _REFUSAL_MARKERS)
