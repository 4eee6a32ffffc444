"""The two checks every draft and every accepted item passes: the quote check (a gold
quote occurs in its document) and the near-duplicate guard.

Quote check: verbatim after whitespace normalisation -- the document and the quote are
compared with all whitespace removed, as gold quotes are located at run time
(``rag_eval.golden.resolve.ChunkLookup.locate``, the one implementation of both).

Near-duplicate guard (docs/golden-sets.md#drafting-and-reviewing-a-golden-set): two items
are near-duplicates when they come from the same source -- a gold quote of each in the
same document at overlapping offsets, or the same whole document -- and their questions'
character-bigram similarity is at least the threshold. The similarity is the Jaccard
index ``|A ∩ B| / |A ∪ B|`` of the sets of adjacent character pairs of the two questions
after NFKC normalisation and case folding, with whitespace and punctuation dropped: it
needs no tokenizer, so Chinese and English are treated alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup

NEAR_DUP_THRESHOLD = 0.8
_KEEP = re.compile(r"[^\W_]", re.UNICODE)

Span = tuple[int, int]


def find_quote(lookup: ChunkLookup, doc_id: str, quote: str) -> Span | None:
    """The first (start, end) of ``quote`` in the document, or None (not there, or no such document)."""
    spans = lookup.locate(doc_id, quote) if quote.strip() else []
    return spans[0] if spans else None


def bigrams(text: str) -> frozenset[str]:
    chars = "".join(_KEEP.findall(unicodedata.normalize("NFKC", text).casefold()))
    return frozenset(chars[i : i + 2] for i in range(len(chars) - 1)) if len(chars) > 1 else frozenset(chars)


def similarity(a: str, b: str) -> float:
    """Character-bigram Jaccard similarity of two texts, in [0, 1] (module doc)."""
    x, y = bigrams(a), bigrams(b)
    union = x | y
    return len(x & y) / len(union) if union else 1.0


@dataclass(frozen=True)
class Sourced:
    """An item as the guard sees it: its id, question, and gold sources (doc, span or None)."""

    id: str
    question: str
    sources: tuple[tuple[str, Span | None], ...]

    @classmethod
    def of(cls, item: GoldenItem, lookup: ChunkLookup) -> Sourced:
        return cls(
            item.id, item.question, sources_of(((r.doc_id, r.quote) for g in item.evidence for r in g.any_of), lookup)
        )

    def same_source(self, other: Sourced) -> bool:
        for doc, span in self.sources:
            for doc2, span2 in other.sources:
                if doc == doc2 and (span is None or span2 is None or (span[0] < span2[1] and span2[0] < span[1])):
                    return True
        return False


def sources_of(
    refs: Iterable[tuple[str | None, str | None]], lookup: ChunkLookup
) -> tuple[tuple[str, Span | None], ...]:
    """(doc id, span of the quote or None for a whole document) of each gold reference with a document."""
    out: list[tuple[str, Span | None]] = []
    for doc, quote in refs:
        if doc:
            out.append((doc, find_quote(lookup, doc, quote) if quote else None))
    return tuple(out)


def near_duplicate(item: Sourced, others: Sequence[Sourced], threshold: float) -> tuple[Sourced, float] | None:
    """The most similar item of ``others`` from the same source at or above ``threshold``, with its similarity."""
    best: tuple[Sourced, float] | None = None
    for other in others:
        if other.id == item.id or not item.same_source(other):
            continue
        score = similarity(item.question, other.question)
        if score >= threshold and (best is None or score > best[1]):
            best = (other, score)
    return best


def check_threshold(value: float, where: str) -> float:
    """A near-duplicate threshold in (0, 1]; a ``ValueError`` naming ``where`` otherwise."""
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{where} {value!r}: the near-duplicate threshold is a similarity in (0, 1], e.g. 0.8")
    return value
