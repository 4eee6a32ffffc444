"""Load a Markdown book: simple front matter, page markers, headings kept in the text.

Format::

    ---
    book: 必修第一册
    doc_id: bixiu1
    ---

    # 必修第一册

    <!-- page: 2 -->
    ## 1.1 集合的概念
    ...

Page markers are removed from ``Document.text`` (they are not content, and a quoted
gold span must not have to include them) and remembered in
``metadata["page_marks"]`` as ``[char_offset, page]`` pairs, the offset being where
that page's content starts in the cleaned text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rag_app.corpus.meta import PAGE_MARKS, RESERVED_KEYS, SOURCE_FORMAT
from rag_app.errors import CorpusError
from rag_app.types import Document

_PAGE_MARK = re.compile(r"[ \t]*<!--[ \t]*page[ \t]*:[ \t]*(.*?)[ \t]*-->[ \t]*")
_FRONT_MATTER_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*:[ \t]*(.*)")
_FENCE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})")
_BOOK_HEADING = re.compile(r"#[ \t]+(\S.*?)(?:[ \t]+#+)?[ \t]*")


def load_markdown_file(path: Path) -> Document:
    """Read one ``.md`` book; ``doc_id`` defaults to the file stem."""
    try:
        raw = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start}); save the file as UTF-8"
        ) from exc
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the file ({exc.strerror})") from exc
    return parse_markdown(raw, source=str(path), default_doc_id=path.stem)


def parse_markdown(raw: str, source: str, default_doc_id: str) -> Document:
    """Turn the text of a Markdown book into a ``Document`` (see the module docstring)."""
    lines = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    front, body_first = _front_matter(lines, source)
    text, page_marks = _strip_page_marks(lines, body_first, source)

    doc_id = front.pop("doc_id", "") or default_doc_id
    book = front.pop("book", "") or _first_book_heading(text) or default_doc_id
    for key in RESERVED_KEYS:
        if key in front:
            raise CorpusError(f"{source}: front matter key {key!r} is reserved for the loader; rename it")
    metadata: dict[str, Any] = dict(front)
    metadata[PAGE_MARKS] = page_marks
    metadata[SOURCE_FORMAT] = "markdown"
    return Document(doc_id=doc_id, title=book, text=text, metadata=metadata, source=source)


def _front_matter(lines: list[str], source: str) -> tuple[dict[str, str], int]:
    """``key: value`` lines between a first line ``---`` and the next ``---``.

    Returns the keys and the index of the first body line. Values are strings with
    matching surrounding quotes removed; no YAML library, on purpose: the format is flat.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0
    values: dict[str, str] = {}
    for idx in range(1, len(lines)):
        line = lines[idx].strip()
        if line == "---":
            return values, idx + 1
        if not line or line.startswith("#"):
            continue
        m = _FRONT_MATTER_LINE.fullmatch(line)
        if m is None:
            raise CorpusError(
                f"{source}:{idx + 1}: front matter line {line!r} is not 'key: value'; "
                "write one key per line, e.g. 'book: 必修第一册'"
            )
        key, value = m.group(1), _unquote(m.group(2).strip())
        if key in values:
            raise CorpusError(f"{source}:{idx + 1}: front matter key {key!r} given twice; keep one")
        values[key] = value
    raise CorpusError(f"{source}:1: front matter opened with '---' is never closed; add a line '---' after the keys")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _strip_page_marks(lines: list[str], first: int, source: str) -> tuple[str, list[list[int]]]:
    """Join the body lines without the page-marker lines; record where each page starts.

    Markers inside fenced code blocks are text (a book about Markdown may show one).
    """
    out: list[str] = []
    length = 0
    marks: list[list[int]] = []
    fence: str | None = None
    last = len(lines) - 1
    for idx in range(first, len(lines)):
        line = lines[idx]
        m_fence = _FENCE.match(line)
        if m_fence:
            marker = m_fence.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip().strip(marker[0]):
                fence = None
        elif fence is None:
            m = _PAGE_MARK.fullmatch(line)
            if m is not None:
                value = m.group(1)
                if not value.isdigit():
                    raise CorpusError(
                        f"{source}:{idx + 1}: page marker {line.strip()!r} needs a page number "
                        "in Arabic digits, e.g. '<!-- page: 12 -->'"
                    )
                marks.append([length, int(value)])
                continue
        piece = line if idx == last else line + "\n"
        out.append(piece)
        length += len(piece)
    return "".join(out), marks


def _first_book_heading(text: str) -> str:
    for line in text.split("\n"):
        m = _BOOK_HEADING.fullmatch(line)
        if m is not None:
            return m.group(1).strip()
    return ""
