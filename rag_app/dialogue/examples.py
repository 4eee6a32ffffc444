"""The worked examples of the material: ``### 例N title`` blocks of the parent sections.

Textbook notes number their worked examples within each book (``例13`` exists in several
books), state a problem, then solve it after ``解：`` (or ``证明：``). The tutor needs
three things from them, all read from the index's parent chunks (no extra files):

* which examples a reference such as "例13" or "Example 29" can mean (several books ->
  several plausible targets, so the tutor asks which one);
* the example a retrieved chunk belongs to, and its statement (the conditions the
  problem gives) and sub-questions ``（1）（2）``;
* the worked-solution text, which a hint must never hand over (answer interception).

A corpus without such headings (SQuAD, Wikipedia) simply has no examples.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rag_app.types import Chunk

_HEADING = re.compile(r"^#{2,6}\s*例\s*(\d+)\s*([^\n]*)$", re.MULTILINE)
_ANY_HEADING = re.compile(r"^#{1,6}\s", re.MULTILINE)
#: Where the worked solution starts: "解：", "解:", "证明：" at a line start or after a sentence.
_SOLUTION = re.compile(r"(?:^|(?<=[。．.！？\s]))(?:解|证明|答)\s*[:：]", re.MULTILINE)
_PART = re.compile(r"[（(]\s*(\d{1,2})\s*[)）]")
_QUESTION_LINE = re.compile(r"^[（(]\s*(\d{1,2})\s*[)）][^\n]*[？?]\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Example:
    """One worked example: where it is, what it gives, how it is solved."""

    doc_id: str
    book: str
    section: str
    number: int
    title: str
    statement: str  # the problem as stated, before the solution
    solution: str  # from "解：" on ("" when the example states its result inline)
    parent_id: str
    start: int  # offsets of the block in the document's text (like Chunk.char_start)
    end: int

    @property
    def parts(self) -> tuple[int, ...]:
        """Sub-question numbers (``（1）…（3）`` -> 1, 2, 3), in order: numbered in the statement,
        or lines of the block that start with ``（n）`` and end with a question mark
        (``（2）"…"是"…"的什么条件？``; a case analysis ``（1）若…`` in a solution is no part)."""
        seen: list[int] = []
        found = [int(m.group(1)) for m in _PART.finditer(self.statement)]
        found += [int(m.group(1)) for m in _QUESTION_LINE.finditer(self.solution)]
        for n in found:
            if n not in seen:
                seen.append(n)
        return tuple(seen) if len(seen) > 1 else ()

    @property
    def label(self) -> str:
        """``必修第一册 例22（轴动区间定）``: how the tutor names it to the student."""
        title = f"（{self.title}）" if self.title else ""
        return f"{self.book} 例{self.number}{title}"


class ExampleCatalog:
    """Every worked example of an index, by number and by parent."""

    def __init__(self, examples: Iterable[Example]) -> None:
        self.examples = tuple(examples)
        self._by_parent: dict[str, list[Example]] = {}
        for ex in self.examples:
            self._by_parent.setdefault(ex.parent_id, []).append(ex)

    @classmethod
    def from_chunks(cls, chunks: Mapping[str, Chunk]) -> ExampleCatalog:
        """Parse the parents (sections) of an index; children point into them."""
        found: list[Example] = []
        for chunk in chunks.values():
            if chunk.kind == "parent":
                found.extend(parse_examples(chunk))
        return cls(found)

    def __len__(self) -> int:
        return len(self.examples)

    def numbered(self, number: int, books: Iterable[str] = ()) -> list[Example]:
        """The examples with this number, only in ``books`` when given."""
        wanted = set(books)
        return [e for e in self.examples if e.number == number and (not wanted or e.book in wanted)]

    def containing(self, chunk: Chunk) -> Example | None:
        """The example a chunk overlaps most (document offsets), if any."""
        best, overlap = None, 0
        for ex in self._by_parent.get(chunk.parent_id or chunk.chunk_id, ()):
            shared = min(ex.end, chunk.char_end) - max(ex.start, chunk.char_start)
            if shared > overlap:
                best, overlap = ex, shared
        return best

    def in_parent(self, parent_id: str) -> list[Example]:
        return list(self._by_parent.get(parent_id, ()))

    @property
    def books(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.book for e in self.examples))


def parse_examples(parent: Chunk) -> list[Example]:
    """The ``例N`` blocks of one section: heading to the next heading."""
    text = parent.text
    out: list[Example] = []
    for m in _HEADING.finditer(text):
        body_start = m.end()
        nxt = _ANY_HEADING.search(text, body_start)
        end = nxt.start() if nxt else len(text)
        body = text[body_start:end].strip()
        sol = _SOLUTION.search(body)
        statement, solution = (body[: sol.start()].strip(), body[sol.start() :].strip()) if sol else (body, "")
        out.append(
            Example(
                doc_id=parent.doc_id,
                book=parent.book,
                section=parent.section,
                number=int(m.group(1)),
                title=m.group(2).strip(),
                statement=statement,
                solution=solution,
                parent_id=parent.chunk_id,
                start=parent.char_start + m.start(),
                end=parent.char_start + end,
            )
        )
    return out
