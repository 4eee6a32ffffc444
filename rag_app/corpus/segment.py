"""Where a document's text may be cut: protected spans, headings, atomic blocks, sentences.

Every function here works on offsets into one string (the document text), never on
copies, so that the chunker can cut chunks as exact slices ``text[start:end]``; gold
evidence given as quoted spans is later located in chunks through those offsets.

The rules, in order of strength:

* a *protected span* (fenced code, ``$$...$$``, inline ``$...$``, inline code) is never
  cut, and no heading or block boundary is recognised inside one;
* a *block* (paragraph, fenced code, table, display formula, heading line) is the unit
  chunks are normally built from;
* a paragraph longer than the size limit is split into *sentences* (Chinese 。！？；,
  ASCII ``. ! ? ;`` followed by whitespace or the end, and line breaks).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

# An opening code fence: up to three spaces, then ``` or ~~~ (three or more).
_FENCE_OPEN = re.compile(r"[ ]{0,3}(`{3,}|~{3,})[^\n]*")
# The characters the protected-span scanner has to look at; everything else is skipped.
_SPECIAL = re.compile(r"[\\$`\n]")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_UNESCAPED_DOLLAR = re.compile(r"\\.|\$", re.DOTALL)
_UNESCAPED_DOUBLE_DOLLAR = re.compile(r"\\.|\$\$", re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(\S[^\n]*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_TABLE_LINE = re.compile(r"[ ]{0,3}\|")
_CLOSERS = "”’」』）)\\]\"'"
# Sentence ends: Chinese terminators always; ASCII ones only before whitespace or the
# end (so 3.14 and a.b stay whole); closing quotes/brackets stay with their sentence.
_SENTENCE_END = re.compile(rf"[。！？；]+[{_CLOSERS}]*|[.!?;]+[{_CLOSERS}]*(?=\s|$)|\n")


@dataclass(frozen=True)
class Span:
    """A protected region ``[start, end)``; ``kind`` is code, inline_code, display_math, math."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class Piece:
    """A unit the packer may not cut: a block, or a sentence of a long paragraph.

    ``kind`` is heading, paragraph, code, table, math or sentence (a heading merged
    into the piece that follows it takes that piece's kind).
    """

    start: int
    end: int
    kind: str

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Heading:
    """An ATX heading line ``start..end`` (end excludes the newline)."""

    start: int
    end: int
    level: int
    title: str


class Protected:
    """The protected spans of one text, sorted and non-overlapping, with fast lookup."""

    def __init__(self, spans: Sequence[Span]) -> None:
        self.spans: tuple[Span, ...] = tuple(spans)
        self._starts = [s.start for s in self.spans]

    @classmethod
    def of(cls, text: str) -> Protected:
        return cls(find_protected(text))

    def containing(self, pos: int) -> Span | None:
        """The span that ``pos`` lies strictly inside (a cut at ``pos`` would split it)."""
        i = bisect.bisect_left(self._starts, pos) - 1
        if i >= 0 and self.spans[i].start < pos < self.spans[i].end:
            return self.spans[i]
        return None

    def starting_at(self, pos: int) -> Span | None:
        i = bisect.bisect_left(self._starts, pos)
        if i < len(self.spans) and self.spans[i].start == pos:
            return self.spans[i]
        return None

    def can_cut(self, pos: int) -> bool:
        return self.containing(pos) is None


def find_protected(text: str) -> list[Span]:
    """Scan ``text`` once for fenced code, inline code, ``$$...$$`` and ``$...$``.

    Backslash escapes (``\\$``, and TeX's ``\\\\``) are skipped. An inline ``$`` or
    backtick run without a partner before the next blank line is literal (prices,
    stray symbols), so a single typo cannot glue a whole document together.
    """
    spans: list[Span] = []
    n = len(text)
    i = 0
    while i < n:
        if i == 0 or text[i - 1] == "\n":
            fence = _FENCE_OPEN.match(text, i)
            if fence:
                end = _fence_end(text, fence.end(), fence.group(1))
                spans.append(Span(i, end, "code"))
                i = end
                continue
        m = _SPECIAL.search(text, i)
        if m is None:
            break
        j = m.start()
        c = text[j]
        if c == "\n":
            i = j + 1
        elif c == "\\":
            # skip the escaped character, but never a newline: the next line may open a fence
            i = j + 1 if text.startswith("\n", j + 1) else j + 2
        elif c == "`":
            run = _run_length(text, j, "`")
            close = _find_backticks(text, j + run, run, _paragraph_end(text, j))
            if close is None:
                i = j + run
            else:
                spans.append(Span(j, close, "inline_code"))
                i = close
        elif text.startswith("$$", j):
            close = _find_token(text, _UNESCAPED_DOUBLE_DOLLAR, "$$", j + 2, n)
            if close is None:
                i = j + 2
            else:
                spans.append(Span(j, close + 2, "display_math"))
                i = close + 2
        else:  # a single $
            close = _find_token(text, _UNESCAPED_DOLLAR, "$", j + 1, _paragraph_end(text, j))
            if close is None:
                i = j + 1
            else:
                spans.append(Span(j, close + 1, "math"))
                i = close + 1
    return spans


def _run_length(text: str, pos: int, char: str) -> int:
    k = pos
    while k < len(text) and text[k] == char:
        k += 1
    return k - pos


def _paragraph_end(text: str, pos: int) -> int:
    m = _BLANK_LINE.search(text, pos)
    return m.start() if m else len(text)


def _find_token(text: str, pattern: re.Pattern[str], token: str, start: int, limit: int) -> int | None:
    """Offset of the first unescaped ``token`` in ``text[start:limit]``."""
    for m in pattern.finditer(text, start, limit):
        if m.group() == token:
            return m.start()
    return None


def _find_backticks(text: str, start: int, run: int, limit: int) -> int | None:
    """End offset of a closing backtick run of exactly ``run`` characters."""
    k = text.find("`", start, limit)
    while k != -1:
        length = _run_length(text, k, "`")
        if length == run:
            return k + run
        k = text.find("`", k + length, limit)
    return None


def _fence_end(text: str, pos: int, fence: str) -> int:
    """End of the line closing a fence opened by ``fence`` (or the end of the text)."""
    closing = re.compile(rf"^[ ]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
    m = closing.search(text, pos + 1) if pos < len(text) else None
    return m.end() if m else len(text)


def find_headings(text: str, protected: Protected) -> list[Heading]:
    """ATX headings (``# x`` .. ``###### x``) at line starts outside protected spans."""
    out: list[Heading] = []
    for m in _HEADING.finditer(text):
        start = m.start()
        if start and text[start - 1] != "\n":
            continue
        if protected.containing(start) is not None or _inside_code(protected, start):
            continue
        out.append(Heading(start, m.end(), len(m.group(1)), m.group(2).strip()))
    return out


def _inside_code(protected: Protected, pos: int) -> bool:
    span = protected.starting_at(pos)
    return span is not None and span.kind == "code"


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Move ``start``/``end`` inwards past whitespace; ``start == end`` if nothing is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _line_end(text: str, pos: int, limit: int) -> int:
    k = text.find("\n", pos, limit)
    return limit if k == -1 else k


def _classify(text: str, pos: int, line_end: int, protected: Protected) -> str:
    line = text[pos:line_end]
    span = protected.starting_at(pos)
    if span is not None and span.kind == "code":
        return "code"
    stripped = line.lstrip()
    if stripped.startswith("$$"):
        math = protected.starting_at(pos + len(line) - len(stripped))
        if math is not None and math.kind == "display_math":
            return "math"
    if _TABLE_LINE.match(line):
        return "table"
    if _HEADING.match(line):
        return "heading"
    return "paragraph"


def split_blocks(text: str, start: int, end: int, protected: Protected) -> list[Piece]:
    """The atomic blocks of ``text[start:end]``, trimmed, in order.

    A block never ends inside a protected span: if it would, it is extended to the end
    of the line on which the span closes (so a formula spanning lines stays whole).
    """
    blocks: list[Piece] = []
    pos = start
    while pos < end:
        line_end = _line_end(text, pos, end)
        if not text[pos:line_end].strip():
            pos = line_end + 1
            continue
        kind = _classify(text, pos, line_end, protected)
        if kind == "table":
            stop = line_end
            while stop < end:
                nxt_end = _line_end(text, stop + 1, end)
                if not _TABLE_LINE.match(text, stop + 1, nxt_end) or not protected.can_cut(stop + 1):
                    break
                stop = nxt_end
        elif kind == "paragraph":
            stop = line_end
            while stop < end:
                nxt = stop + 1
                nxt_end = _line_end(text, nxt, end)
                if protected.can_cut(nxt):
                    if not text[nxt:nxt_end].strip():
                        break
                    if _classify(text, nxt, nxt_end, protected) != "paragraph":
                        break
                stop = nxt_end
        else:  # code, math, heading: the extension below takes code and math to their end
            stop = line_end
        stop = _extend_past_protected(text, stop, end, protected)
        s, e = trim(text, pos, stop)
        if s < e:
            blocks.append(Piece(s, e, kind))
        pos = stop + 1
    return blocks


def _extend_past_protected(text: str, stop: int, limit: int, protected: Protected) -> int:
    while stop < limit:
        span = protected.containing(stop)
        if span is None:
            break
        stop = _line_end(text, min(span.end, limit), limit)
    return stop


def split_sentences(text: str, start: int, end: int, protected: Protected) -> list[Piece]:
    """Sentences of ``text[start:end]``, trimmed; cuts inside protected spans are skipped."""
    cuts = [start]
    for m in _SENTENCE_END.finditer(text, start, end):
        cut = m.end()
        if start < cut < end and protected.can_cut(cut):
            cuts.append(cut)
    cuts.append(end)
    out: list[Piece] = []
    for a, b in zip(cuts, cuts[1:]):
        s, e = trim(text, a, b)
        if s < e:
            out.append(Piece(s, e, "sentence"))
    return out


def split_pieces(text: str, start: int, end: int, max_len: int, protected: Protected) -> list[Piece]:
    """Blocks of ``text[start:end]``, paragraphs longer than ``max_len`` cut into sentences.

    A heading is merged into the piece that follows it, so that it never ends a chunk
    on its own and always travels with the content it names.
    """
    pieces: list[Piece] = []
    for block in split_blocks(text, start, end, protected):
        if block.kind == "paragraph" and len(block) > max_len:
            pieces.extend(split_sentences(text, block.start, block.end, protected))
        else:
            pieces.append(block)
    merged: list[Piece] = []
    heading_start: int | None = None
    for piece in pieces:
        if piece.kind == "heading":
            if heading_start is None:
                heading_start = piece.start
            continue
        if heading_start is not None:
            piece = Piece(heading_start, piece.end, piece.kind)
            heading_start = None
        merged.append(piece)
    if heading_start is not None:
        merged.append(Piece(heading_start, pieces[-1].end, "heading"))
    return merged


def pack(pieces: Sequence[Piece], max_len: int, overlap: int) -> list[tuple[int, int]]:
    """Group consecutive pieces into chunks of at most ``max_len`` characters.

    Returns index ranges ``[a, b)`` into ``pieces``. A chunk's length is measured from its
    first piece's start to its last piece's end. Each chunk after the first starts with the
    trailing whole pieces of the previous chunk spanning at most ``overlap`` characters
    (none if the last piece alone is longer), shortened further if the overlap and the new
    piece would not fit together. A piece longer than ``max_len`` is a chunk of its own.
    """
    if not pieces:
        return []
    groups: list[tuple[int, int]] = []
    a = 0
    for i in range(1, len(pieces)):
        if pieces[i].end - pieces[a].start <= max_len:
            continue
        groups.append((a, i))
        k = i
        while k - 1 >= a and pieces[i - 1].end - pieces[k - 1].start <= overlap:
            k -= 1
        while k < i and pieces[i].end - pieces[k].start > max_len:
            k += 1
        a = k
    groups.append((a, len(pieces)))
    return groups
