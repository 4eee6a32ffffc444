"""Turn an item's gold evidence into chunk ids of the *current* index.

A quoted span is located in its document's text, then every chunk whose character
range contains it becomes an alternative for that requirement. Because chunks carry
offsets into the document, changing chunk size, overlap or parent/child settings
re-derives the gold instead of invalidating it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag_eval.core.records import Chunk, Document
from rag_eval.golden.model import EvidenceRef, GoldenItem

_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class ResolvedGold:
    """Gold for one item against one index.

    ``child_groups``/``parent_groups``: one frozenset of alternative chunk ids per
    requirement, or None when some requirement is only known at document level.
    ``doc_groups``: one frozenset of alternative doc ids per requirement.
    """

    child_groups: tuple[frozenset[str], ...] | None
    parent_groups: tuple[frozenset[str], ...] | None
    doc_groups: tuple[frozenset[str], ...]
    #: gold whose document could not be resolved (ids mode, a chunk id no returned item
    #: or id map places): document-level metrics are absent for the item, never 0.
    unknown_docs: tuple[str, ...] = ()

    @property
    def docs_known(self) -> bool:
        return not self.unknown_docs

    @property
    def has_chunk_gold(self) -> bool:
        return self.child_groups is not None

    def groups_for(self, kind: str) -> tuple[frozenset[str], ...] | None:
        return self.parent_groups if kind == "parent" else self.child_groups


class SpanNotFound(ValueError):
    """A quoted span is not in its document; the message names the item."""


class ChunkLookup:
    """Chunks of an index, grouped by document, for span location."""

    def __init__(self, documents: Iterable[Document], chunks: Iterable[Chunk]) -> None:
        self.docs: dict[str, Document] = {d.doc_id: d for d in documents}
        self.chunks: dict[str, Chunk] = {}
        self.by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            self.chunks[c.chunk_id] = c
            self.by_doc.setdefault(c.doc_id, []).append(c)
        self._norm: dict[str, tuple[str, list[int]]] = {}

    def doc_of(self, chunk_id: str) -> str | None:
        c = self.chunks.get(chunk_id)
        return c.doc_id if c else None

    def locate(self, doc_id: str, quote: str) -> list[tuple[int, int]]:
        """Every (start, end) of ``quote`` in the doc text, ignoring whitespace differences."""
        if doc_id not in self.docs:
            return []
        norm, offsets = self._normalised(doc_id)
        needle = _WS.sub("", quote)
        spans: list[tuple[int, int]] = []
        start = norm.find(needle)
        while start != -1 and needle:
            spans.append((offsets[start], offsets[start + len(needle) - 1] + 1))
            start = norm.find(needle, start + 1)
        return spans

    def chunks_for_span(self, doc_id: str, quote: str, kind: str) -> set[str]:
        """Chunks of ``kind`` containing the span; if none holds it whole, those overlapping it."""
        spans = self.locate(doc_id, quote)
        candidates = [c for c in self.by_doc.get(doc_id, []) if c.kind == kind]
        inside = {c.chunk_id for s, e in spans for c in candidates if c.char_start <= s and e <= c.char_end}
        if inside:
            return inside
        return {c.chunk_id for s, e in spans for c in candidates if c.char_start < e and s < c.char_end}

    def _normalised(self, doc_id: str) -> tuple[str, list[int]]:
        if doc_id not in self._norm:
            text = self.docs[doc_id].text
            keep = [i for i, ch in enumerate(text) if not ch.isspace()]
            self._norm[doc_id] = ("".join(text[i] for i in keep), keep)
        return self._norm[doc_id]


def resolve(item: GoldenItem, lookup: ChunkLookup) -> ResolvedGold:
    """Resolve every requirement; raises SpanNotFound / KeyError-like ValueError on bad gold."""
    child: list[frozenset[str]] | None = []
    parent: list[frozenset[str]] | None = []
    docs: list[frozenset[str]] = []
    for group in item.evidence:
        g_child: set[str] = set()
        g_parent: set[str] = set()
        g_docs: set[str] = set()
        whole_docs: set[str] = set()
        for ref in group.any_of:
            c_ids, p_ids, doc = _resolve_ref(item, ref, lookup)
            g_child |= c_ids
            g_parent |= p_ids
            if doc:
                g_docs.add(doc)
                if not (ref.chunk_id or ref.quote):
                    whole_docs.add(doc)
        chunk_level = any(ref.chunk_id or ref.quote for ref in group.any_of)
        if chunk_level:
            # A whole-doc alternative next to chunk-level ones: any chunk of that doc
            # satisfies the requirement. Leaving it out would drop the alternative.
            for d in whole_docs:
                g_child |= {c.chunk_id for c in lookup.by_doc.get(d, []) if c.kind == "child"}
                g_parent |= {c.chunk_id for c in lookup.by_doc.get(d, []) if c.kind == "parent"}
        docs.append(frozenset(g_docs))
        if not chunk_level:
            child = parent = None
        if child is not None and parent is not None:
            child.append(frozenset(g_child))
            parent.append(frozenset(g_parent))
    return ResolvedGold(
        tuple(child) if child is not None else None,
        tuple(parent) if parent is not None else None,
        tuple(docs),
    )


def _resolve_ref(item: GoldenItem, ref: EvidenceRef, lookup: ChunkLookup) -> tuple[set[str], set[str], str | None]:
    where = f"{item.source} (id {item.id!r})"
    if ref.chunk_id:
        chunk = lookup.chunks.get(ref.chunk_id)
        if chunk is None:
            raise SpanNotFound(f"{where}: gold chunk id {ref.chunk_id!r} is not in the index")
        if chunk.kind == "child":
            return {chunk.chunk_id}, {chunk.parent_id} if chunk.parent_id else set(), chunk.doc_id
        children = {c.chunk_id for c in lookup.by_doc.get(chunk.doc_id, []) if c.parent_id == chunk.chunk_id}
        return children, {chunk.chunk_id}, chunk.doc_id
    assert ref.doc_id is not None
    if ref.doc_id not in lookup.docs:
        raise SpanNotFound(f"{where}: gold doc id {ref.doc_id!r} is not in the corpus")
    if ref.quote is None:
        return set(), set(), ref.doc_id
    if not lookup.locate(ref.doc_id, ref.quote):
        raise SpanNotFound(
            f"{where}: quoted span {ref.quote[:60]!r} not found in document {ref.doc_id!r}; "
            "quote the document text exactly (whitespace may differ)"
        )
    return (
        lookup.chunks_for_span(ref.doc_id, ref.quote, "child"),
        lookup.chunks_for_span(ref.doc_id, ref.quote, "parent"),
        ref.doc_id,
    )


def all_gold_ids(groups: Sequence[frozenset[str]]) -> frozenset[str]:
    out: set[str] = set()
    for g in groups:
        out |= g
    return frozenset(out)


def doc_map(lookup: ChunkLookup) -> Mapping[str, str]:
    return {cid: c.doc_id for cid, c in lookup.chunks.items()}
