"""Metadata keys the loaders reserve on ``Document.metadata``.

The chunker reads them; they are internal bookkeeping, so they are not copied onto
chunks, and a corpus may not use them as its own keys.
"""

from __future__ import annotations

# ``[[char_offset, page], ...]``: where in ``Document.text`` each page starts (Markdown books).
PAGE_MARKS = "page_marks"
# "markdown" or "jsonl": Markdown books are split into sections at headings; JSONL is not.
SOURCE_FORMAT = "source_format"
# A JSONL document's single page number, if the corpus gives one.
PAGE = "page"

RESERVED_KEYS: tuple[str, ...] = (PAGE_MARKS, SOURCE_FORMAT)
