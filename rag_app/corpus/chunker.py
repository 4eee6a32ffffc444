"""Structure-aware parent/child chunking.

A Markdown book is cut into *sections* at level-1/2 headings; each section becomes one
*parent* (several if it is longer than ``parent_max_chars``), and each parent is packed
into *children* of at most ``chunk_size`` characters built from whole blocks and
sentences (see ``segment``), overlapping by whole trailing pieces. Children are what
retrieval matches; parents are what the context may show instead.

Invariants the rest of the project relies on:

* ``chunk.text == doc.text[chunk.char_start:chunk.char_end]`` for every chunk, so gold
  evidence quoted from a document can be located in whatever chunks exist;
* same documents and config → same chunks and the same readable ids, whatever the input
  order (no randomness, clocks or dict-order dependence);
* ids are unique across the corpus; a collision is a ``CorpusError`` naming both chunks.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rag_app.corpus.meta import PAGE, PAGE_MARKS, RESERVED_KEYS, SOURCE_FORMAT
from rag_app.corpus.segment import Piece, Protected, find_headings, pack, split_pieces, trim
from rag_app.errors import ConfigError, CorpusError
from rag_app.settings import Settings
from rag_app.types import Chunk, ChunkKind, Document


@dataclass(frozen=True)
class ChunkConfig:
    """Chunk sizes in characters (not tokens: Chinese has no cheap, model-free tokens)."""

    chunk_size: int = 320
    chunk_overlap: int = 60
    parent_max_chars: int = 2400

    def __post_init__(self) -> None:
        if self.chunk_size <= 0:
            raise ConfigError(f"chunk_size must be positive, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be >= 0 and smaller than chunk_size ({self.chunk_size})"
            )
        if self.parent_max_chars < self.chunk_size:
            raise ConfigError(
                f"parent_max_chars ({self.parent_max_chars}) must be at least chunk_size ({self.chunk_size}): "
                "a parent holds its children"
            )

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_settings(cls, settings: Settings) -> ChunkConfig:
        return cls(
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            parent_max_chars=settings.parent_max_chars,
        )


@dataclass(frozen=True)
class _Section:
    title: str
    start: int
    end: int


def chunk_documents(docs: Sequence[Document], config: ChunkConfig) -> list[Chunk]:
    """Parents and children of every document, documents in ``doc_id`` order.

    Within a document, sections come in text order; each section yields its parents
    first, then its children.
    """
    ordered = sorted(docs, key=lambda d: d.doc_id)
    for prev, doc in zip(ordered, ordered[1:]):
        if prev.doc_id == doc.doc_id:
            raise CorpusError(
                f"duplicate doc_id {doc.doc_id!r} in {prev.source or '?'} and {doc.source or '?'}; "
                "doc_ids must be unique"
            )
    out: list[Chunk] = []
    owner: dict[str, Chunk] = {}
    for doc in ordered:
        for chunk in chunk_document(doc, config):
            if chunk.chunk_id in owner:
                first = owner[chunk.chunk_id]
                raise CorpusError(
                    f"chunk id {chunk.chunk_id!r} made twice: doc {first.doc_id!r} section {first.section!r} "
                    f"(chars {first.char_start}-{first.char_end}) and doc {chunk.doc_id!r} section "
                    f"{chunk.section!r} (chars {chunk.char_start}-{chunk.char_end}); give the books distinct "
                    "'book:' names in their front matter"
                )
            owner[chunk.chunk_id] = chunk
            out.append(chunk)
    return out


def chunk_document(doc: Document, config: ChunkConfig) -> list[Chunk]:
    """The chunks of one document (ids are unique within it)."""
    text = doc.text
    protected = Protected.of(text)
    markdown = doc.metadata.get(SOURCE_FORMAT) == "markdown"
    pages = _PageLookup.of(doc)
    extras = _extra_metadata(doc.metadata)
    out: list[Chunk] = []
    used: dict[str, int] = {}
    for section in _sections(doc, protected, markdown):
        if markdown:
            compact = _component(re.sub(r"\s+", "", section.title))
            used[compact] = used.get(compact, 0) + 1
            suffix = "" if used[compact] == 1 else f"~{used[compact]}"
            base = f"{_component(doc.title.strip())}::{compact}{suffix}"
        else:
            base = _component(doc.doc_id)

        def make(kind: ChunkKind, chunk_id: str, start: int, end: int, parent_id: str | None) -> Chunk:
            return Chunk(
                chunk_id=chunk_id,
                doc_id=doc.doc_id,
                text=text[start:end],
                kind=kind,
                parent_id=parent_id,
                book=doc.title,
                section=section.title,  # noqa: B023 - called only within this iteration
                page_start=pages.at(start),
                page_end=pages.at(end - 1),
                char_start=start,
                char_end=end,
                metadata=dict(extras),
            )

        parent_spans = _parent_spans(text, section, config, protected)
        parents: list[Chunk] = []
        children: list[Chunk] = []
        for j, (p_start, p_end) in enumerate(parent_spans, start=1):
            parent_id = f"{base}::parent" if len(parent_spans) == 1 else f"{base}::parent::{j}"
            parents.append(make("parent", parent_id, p_start, p_end, None))
            pieces = split_pieces(text, p_start, p_end, config.chunk_size, protected)
            for a, b in pack(pieces, config.chunk_size, config.chunk_overlap):
                c_start, c_end = pieces[a].start, pieces[b - 1].end
                i = len(children) + 1
                page = pages.at(c_start)
                page_part = f"::p{page}" if markdown and page is not None else ""
                children.append(make("child", f"{base}{page_part}::child::{i}", c_start, c_end, parent_id))
        out.extend(parents)
        out.extend(children)
    return out


def _sections(doc: Document, protected: Protected, markdown: bool) -> list[_Section]:
    """Markdown: cut at ``#``/``##`` headings; a heading with no content under it is dropped.

    Text before the first heading is a section titled by the book if it has content.
    Anything else (JSONL) is one section titled by the document title, even if its text
    happens to contain ``#`` lines: those corpora are not Markdown books.
    """
    text = doc.text
    if not markdown:
        start, end = trim(text, 0, len(text))
        return [_Section(doc.title, start, end)] if start < end else []
    headings = [h for h in find_headings(text, protected) if h.level <= 2]
    sections: list[_Section] = []
    first = headings[0].start if headings else len(text)
    start, end = trim(text, 0, first)
    if start < end:
        sections.append(_Section(doc.title, start, end))
    for k, heading in enumerate(headings):
        stop = headings[k + 1].start if k + 1 < len(headings) else len(text)
        if not text[heading.end : stop].strip():
            continue
        start, end = trim(text, heading.start, stop)
        sections.append(_Section(heading.title, start, end))
    return sections


def _parent_spans(text: str, section: _Section, config: ChunkConfig, protected: Protected) -> list[tuple[int, int]]:
    if section.end - section.start <= config.parent_max_chars:
        return [(section.start, section.end)]
    pieces: list[Piece] = split_pieces(text, section.start, section.end, config.parent_max_chars, protected)
    return [(pieces[a].start, pieces[b - 1].end) for a, b in pack(pieces, config.parent_max_chars, 0)]


def _component(value: str) -> str:
    """An id component: ``::`` (the id separator) inside it becomes ``:``."""
    return re.sub(r":{2,}", ":", value)


def _extra_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The document's own scalar metadata (qtype, year, ...), minus loader bookkeeping."""
    return {
        key: metadata[key]
        for key in sorted(metadata)
        if key not in RESERVED_KEYS and isinstance(metadata[key], (str, int, float, bool))
    }


class _PageLookup:
    """Page in force at a character offset.

    Text before the first page marker is counted as being on the first marked page:
    books put the first marker at the top, and a ``None`` start with a numbered end
    would be a useless citation.
    """

    def __init__(self, offsets: list[int], pages: list[int]) -> None:
        self._offsets = offsets
        self._pages = pages

    @classmethod
    def of(cls, doc: Document) -> _PageLookup:
        marks = doc.metadata.get(PAGE_MARKS) or []
        if marks:
            try:
                pairs = sorted(((int(offset), int(page)) for offset, page in marks), key=lambda t: t[0])
            except (TypeError, ValueError) as exc:
                raise CorpusError(
                    f"{doc.source or doc.doc_id}: metadata {PAGE_MARKS!r} must be [[char_offset, page], ...]"
                ) from exc
            return cls([o for o, _ in pairs], [p for _, p in pairs])
        page = doc.metadata.get(PAGE)
        if isinstance(page, int) and not isinstance(page, bool):
            return cls([0], [page])
        return cls([], [])

    def at(self, pos: int) -> int | None:
        if not self._offsets:
            return None
        i = bisect.bisect_right(self._offsets, pos) - 1
        return self._pages[max(i, 0)]
