"""A corpus cut into passages for drafting, the rule that skips a passage, and the
seeded sample stratified by document.

A passage is a paragraph of a document: text between blank lines, with its character
offsets into ``Document.text`` (so a quote's span is an offset of the document, not of a
chunker's output). The skip rule (docs/golden-sets.md#drafting-and-reviewing-a-golden-set):
a passage whose *content* -- its text without Markdown headings, HTML comments, math
between ``$`` signs, markup and whitespace -- is empty is skipped as "no content"; one
whose content has fewer than ``MIN_CONTENT_CHARS`` letters, digits or CJK characters is
skipped as "too short". A model asked about such a passage drafts a generic question
(ragas #1568).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag_eval.core.records import Document

MIN_CONTENT_CHARS = 40
SKIP_NO_CONTENT = "skipped: no content"
SKIP_TOO_SHORT = "skipped: too short"
_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n[ \t]*\n|\s*\Z)", re.DOTALL)
_NOT_CONTENT = re.compile(r"<!--.*?-->|^[ \t]*#+[^\n]*$|\$\$.*?\$\$|\$[^$\n]*\$", re.DOTALL | re.MULTILINE)
_CONTENT_CHAR = re.compile(r"[^\W_]", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Passage:
    """A paragraph of a document: ``text == doc.text[start:end]``."""

    doc_id: str
    start: int
    end: int
    text: str

    @property
    def key(self) -> str:
        return f"{self.doc_id}@{self.start}"

    def to_dict(self) -> dict[str, object]:
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end, "text": self.text}


def split_passages(doc: Document) -> list[Passage]:
    """Every paragraph of ``doc``, in order."""
    return [Passage(doc.doc_id, m.start(), m.end(), m.group(0)) for m in _PARAGRAPH.finditer(doc.text)]


def skip_reason(passage: Passage, min_chars: int = MIN_CONTENT_CHARS) -> str | None:
    """Why a passage is not drafted from (``SKIP_*``), or None."""
    content = _CONTENT_CHAR.findall(_NOT_CONTENT.sub("", passage.text))
    if not content:
        return SKIP_NO_CONTENT
    if len(content) < min_chars:
        return SKIP_TOO_SHORT
    return None


def is_chinese(text: str) -> bool:
    """Whether CJK characters make up at least a fifth of the letters of ``text``."""
    letters = _CONTENT_CHAR.findall(text)
    return bool(letters) and len(_CJK.findall(text)) * 5 >= len(letters)


@dataclass(frozen=True)
class Pool:
    """The usable passages of a corpus, each document's in a seeded order, and the count
    of passages skipped per reason."""

    by_doc: dict[str, list[Passage]]
    skipped: dict[str, int]

    def round_robin(self) -> Iterator[Passage]:
        """Passages one document at a time (documents in id order): the first ``n`` drawn
        spread over as many documents as possible."""
        queues = [list(ps) for _, ps in sorted(self.by_doc.items()) if ps]
        i = 0
        while any(queues):
            if queues[i % len(queues)]:
                yield queues[i % len(queues)].pop(0)
            i += 1

    def pairs_across(self) -> Iterator[tuple[Passage, Passage]]:
        """Two passages of different documents at a time."""
        docs = [ps for _, ps in sorted(self.by_doc.items()) if ps]
        for i in range(max((len(ps) for ps in docs), default=0)):
            for a in range(len(docs)):
                b = (a + 1 + i) % len(docs)
                if b != a and i < len(docs[a]) and i < len(docs[b]):
                    yield docs[a][i], docs[b][i]

    def adjacent(self, documents: Sequence[Document]) -> Iterator[tuple[Passage, Passage]]:
        """Two usable passages next to each other in one document (nothing between them but
        whitespace), in the seeded order of the first."""
        usable = {p.key for ps in self.by_doc.values() for p in ps}
        nexts: dict[str, Passage] = {}
        for doc in documents:
            ps = split_passages(doc)
            nexts.update({a.key: b for a, b in zip(ps, ps[1:]) if a.key in usable and b.key in usable})
        for p in self.round_robin():
            if p.key in nexts:
                yield p, nexts[p.key]


def passage_pool(documents: Sequence[Document], seed: int, min_chars: int = MIN_CONTENT_CHARS) -> Pool:
    """Every usable passage, shuffled within its document by ``seed``."""
    rng = random.Random(seed)
    by_doc: dict[str, list[Passage]] = {}
    skipped: dict[str, int] = {}
    for doc in sorted(documents, key=lambda d: d.doc_id):
        kept = []
        for p in split_passages(doc):
            reason = skip_reason(p, min_chars)
            if reason:
                skipped[reason] = skipped.get(reason, 0) + 1
            else:
                kept.append(p)
        rng.shuffle(kept)
        by_doc[doc.doc_id] = kept
    return Pool(by_doc, skipped)
