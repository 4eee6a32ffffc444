"""Find and load a corpus (a folder, a ``.md`` book or a ``.jsonl`` file) and hash it.

The corpus hash is what golden sets are written against: if it changes, the gold
chunk ids and quoted spans may no longer be where the golden set says they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from rag_app.corpus.jsonl import load_jsonl_file
from rag_app.corpus.markdown import load_markdown_file
from rag_app.errors import CorpusError
from rag_app.types import Document

JSONL_CORPUS_NAME = "corpus.jsonl"
_HASH_VERSION = b"rag_app.corpus_hash.v1"


def load_corpus(path: str | Path) -> list[Document]:
    """All documents under ``path``, sorted by ``doc_id``.

    A directory contributes every ``*.md`` file (recursively, sorted by relative path)
    and every file named ``corpus.jsonl``; hidden files and folders are ignored. A
    single ``.md`` or ``.jsonl`` file is loaded as it is. A ``doc_id`` used twice, in
    one file or across files, is an error naming both places.
    """
    root = Path(path)
    if not root.exists():
        raise CorpusError(
            f"corpus path {str(root)!r} does not exist; set corpus_path (pyproject [tool.rag_app] or "
            "RAG_APP_CORPUS_PATH) to a folder of *.md books, a .md file or a corpus.jsonl file"
        )
    docs: list[Document] = []
    seen: dict[str, Document] = {}
    for file in _corpus_files(root):
        loaded = [load_markdown_file(file)] if file.suffix == ".md" else load_jsonl_file(file)
        for doc in loaded:
            if doc.doc_id in seen:
                raise CorpusError(
                    f"duplicate doc_id {doc.doc_id!r} in {seen[doc.doc_id].source} and {doc.source}; "
                    "give one of them another doc_id (Markdown: a 'doc_id:' front matter line)"
                )
            seen[doc.doc_id] = doc
            docs.append(doc)
    return sorted(docs, key=lambda d: d.doc_id)


def _corpus_files(root: Path) -> list[Path]:
    if root.is_file():
        if root.suffix not in (".md", ".jsonl"):
            raise CorpusError(f"corpus file {str(root)!r} is neither .md nor .jsonl; point corpus_path at one of those")
        return [root]
    files = [
        p
        for p in root.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and (p.suffix == ".md" or p.name == JSONL_CORPUS_NAME)
    ]
    if not files:
        raise CorpusError(
            f"corpus folder {str(root)!r} holds no *.md file and no {JSONL_CORPUS_NAME}; "
            "add documents or point corpus_path elsewhere"
        )
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def corpus_hash(docs: Iterable[Document]) -> str:
    """sha256 hex digest over ``(doc_id, title, text)`` of every document.

    Documents are sorted first, so file and list order do not matter. Each field is
    written as an 8-byte length followed by its UTF-8 bytes, so no two different corpora
    can produce the same byte stream (``("ab", "c")`` vs ``("a", "bc")``). Metadata and
    file paths are deliberately left out: moving a corpus does not invalidate gold.
    """
    h = hashlib.sha256()
    _put(h.update, _HASH_VERSION)
    ordered: Sequence[Document] = sorted(docs, key=lambda d: (d.doc_id, d.title, d.text))
    h.update(len(ordered).to_bytes(8, "big"))
    for doc in ordered:
        for field_value in (doc.doc_id, doc.title, doc.text):
            _put(h.update, field_value.encode("utf-8"))
    return h.hexdigest()


def _put(update: Callable[[bytes], None], data: bytes) -> None:
    update(len(data).to_bytes(8, "big"))
    update(data)
