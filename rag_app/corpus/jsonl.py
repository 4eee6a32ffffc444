"""Load a JSONL corpus: one document a line, ``{"doc_id", "title", "text", ...}``.

This is the layout of the shared evaluation datasets (``corpus.jsonl``). Keys other than
``doc_id``/``title``/``text`` become ``Document.metadata``. Every error names
``file:line`` so that a broken line in a 10,000-line file is found at once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_app.corpus.meta import PAGE, RESERVED_KEYS, SOURCE_FORMAT
from rag_app.errors import CorpusError
from rag_app.types import Document

_EXAMPLE = '{"doc_id": "d1", "title": "...", "text": "..."}'


def load_jsonl_file(path: Path) -> list[Document]:
    """All documents of one JSONL file, in file order; blank lines are skipped."""
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from exc
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the file ({exc.strerror})") from exc
    docs: list[Document] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(raw.split("\n"), start=1):
        if not line.strip():
            continue
        doc = parse_jsonl_line(line, f"{path}:{lineno}")
        if doc.doc_id in first_line:
            raise CorpusError(
                f"{path}:{lineno}: duplicate doc_id {doc.doc_id!r}, first used at {path}:{first_line[doc.doc_id]}; "
                "doc_ids must be unique"
            )
        first_line[doc.doc_id] = lineno
        docs.append(doc)
    return docs


def parse_jsonl_line(line: str, where: str) -> Document:
    """One line → one ``Document``; ``where`` is ``file:line`` for messages and ``source``."""
    try:
        obj: Any = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); expected {_EXAMPLE}") from exc
    if not isinstance(obj, dict):
        raise CorpusError(f"{where}: expected a JSON object, got {type(obj).__name__}; expected {_EXAMPLE}")
    for key in ("doc_id", "text"):
        if key not in obj:
            raise CorpusError(f"{where}: missing key {key!r}; every line needs doc_id and text, e.g. {_EXAMPLE}")
    doc_id = obj.pop("doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or not str(doc_id).strip():
        raise CorpusError(f"{where}: doc_id must be a non-empty string, got {doc_id!r}")
    text = obj.pop("text")
    if not isinstance(text, str):
        raise CorpusError(f"{where}: text must be a string, got {type(text).__name__}")
    title = obj.pop("title", None)
    if title is None:
        title = str(doc_id)
    if not isinstance(title, str):
        raise CorpusError(f"{where}: title must be a string, got {type(title).__name__}")
    for key in RESERVED_KEYS:
        if key in obj:
            raise CorpusError(f"{where}: key {key!r} is reserved for the loader; rename it")
    if PAGE in obj and (isinstance(obj[PAGE], bool) or not isinstance(obj[PAGE], int)):
        raise CorpusError(f"{where}: 'page' must be an integer page number, got {obj[PAGE]!r}")
    metadata: dict[str, Any] = {k: obj[k] for k in sorted(obj)}
    metadata[SOURCE_FORMAT] = "jsonl"
    return Document(doc_id=str(doc_id), title=title, text=text, metadata=metadata, source=where)
