"""A dataset's optional local corpus, read without any system's code.

The framework needs a corpus only for gold given as quoted spans resolved to chunks
(``gold = "corpus"``, which asks the system's adapter to chunk it) and for the golden
set's traceability checks. This reader takes the shared layout: ``corpus.jsonl`` (one
``{"doc_id", "title", "text", ...}`` per line) or a folder of ``*.md`` documents (the
file stem, or a ``doc_id:`` front matter line, is the doc id). Errors name file:line; a
.jsonl is read by the one JSONL reader of golden sets (``golden.load.read_items``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rag_eval.core.errors import ConfigError
from rag_eval.core.records import Document
from rag_eval.golden.load import GoldenSetError, read_items

# The format tag hashed first into every corpus hash (golden items' corpus.sha256, dataset
# manifests, run.corpus_hash and the dataset fingerprint built on it). These bytes are a
# frozen format identifier, not a reference to any system: they were written when the demo
# system and the framework shared this format, and changing one byte would invalidate every
# golden set, manifest and baseline already pinned. A new hash format gets a new tag (v2)
# and keeps accepting this one.
CORPUS_HASH_FORMAT_V1 = b"rag_app.corpus_hash.v1"
_EXAMPLE = '{"doc_id": "d1", "title": "...", "text": "..."}'


class CorpusError(ConfigError, GoldenSetError):
    """A corpus file cannot be read; the message names file and line (a GoldenSetError too,
    so the one JSONL reader, ``golden.load.read_items``, collects it with the others)."""


def load_documents(path: Path) -> tuple[Document, ...]:
    """Every document under ``path`` (a ``.jsonl`` file, a ``.md`` file or a folder), by doc id."""
    if not path.exists():
        raise CorpusError(f"corpus {path}: no such file or folder")
    files = (
        [path]
        if path.is_file()
        else sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and (p.suffix == ".md" or p.suffix == ".jsonl")
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    )
    docs: dict[str, Document] = {}
    for file in files:
        for doc in _jsonl(file) if file.suffix == ".jsonl" else [_markdown(file)]:
            if doc.doc_id in docs:
                raise CorpusError(f"{doc.source}: duplicate doc_id {doc.doc_id!r}, also in {docs[doc.doc_id].source}")
            docs[doc.doc_id] = doc
    return tuple(docs[k] for k in sorted(docs))


def _jsonl(path: Path) -> list[Document]:
    """Every document of a corpus.jsonl, through the one JSONL reader (every bad line at once)."""
    if not path.read_text(encoding="utf-8-sig").strip():
        return []  # an empty corpus file holds no document (read_items refuses an empty golden set)
    return read_items(path, _document, CorpusError, "corpus")


def _document(raw: Any, where: str) -> Document:
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: expected an object like {_EXAMPLE}")
    doc_id = raw.get("doc_id", raw.get("id"))
    text = raw.get("text")
    if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool) or str(doc_id) == "":
        raise CorpusError(f"{where}: 'doc_id' is missing or not a string; expected {_EXAMPLE}")
    if not isinstance(text, str):
        raise CorpusError(f"{where}: 'text' is missing or not a string; expected {_EXAMPLE}")
    meta = {k: v for k, v in raw.items() if k not in ("doc_id", "id", "title", "text")}
    return Document(str(doc_id), str(raw.get("title") or ""), text, meta, where)


def _markdown(path: Path) -> Document:
    text = path.read_text(encoding="utf-8-sig")
    doc_id, title, body = path.stem, "", text
    if text.startswith("---\n") and "\n---" in text[4:]:
        head, _, body = text[4:].partition("\n---")
        body = body.lstrip("-").lstrip("\n")
        for line in head.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "doc_id":
                doc_id = value.strip().strip("\"'")
            elif sep and key.strip() == "title":
                title = value.strip().strip("\"'")
    if not title:
        title = next((ln.lstrip("#").strip() for ln in body.splitlines() if ln.startswith("#")), path.stem)
    return Document(doc_id, title, body, {}, str(path))


def corpus_hash(docs: Iterable[Document]) -> str:
    """sha256 over ``(doc_id, title, text)`` of every document, order-free and unambiguous
    (each field written as an 8-byte length then its UTF-8 bytes)."""
    h = hashlib.sha256()
    _put(h, CORPUS_HASH_FORMAT_V1)
    ordered: Sequence[Document] = sorted(docs, key=lambda d: (d.doc_id, d.title, d.text))
    h.update(len(ordered).to_bytes(8, "big"))
    for doc in ordered:
        for value in (doc.doc_id, doc.title, doc.text):
            _put(h, value.encode("utf-8"))
    return h.hexdigest()


def _put(h: hashlib._Hash, data: bytes) -> None:
    h.update(len(data).to_bytes(8, "big"))
    h.update(data)
