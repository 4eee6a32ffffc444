"""User files read as UTF-8: a leading byte-order mark accepted (editors on Windows
write one), and a byte that is not UTF-8 named by file, line and column instead of a
``UnicodeDecodeError`` traceback. Used by every reader of a file the user writes:
golden and dialogue sets, thresholds.toml, the pipeline config, the price file."""

from __future__ import annotations

from pathlib import Path

BOM = b"\xef\xbb\xbf"


class NotUtf8Error(ValueError):
    """The bytes are not UTF-8; the message is ``FILE:LINE: byte 0x.. at column N is not UTF-8; ...``."""


def decode(data: bytes, path: str, first_line: int = 1, bom: bool = True) -> str:
    """``data`` (the file from ``first_line`` on) as text, a leading BOM dropped when ``bom``."""
    if bom and data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = first_line + data.count(b"\n", 0, exc.start)
        column = len(data[start : exc.start].decode("utf-8")) + 1  # in characters, as an editor counts
        raise NotUtf8Error(
            f"{path}:{line}: byte 0x{data[exc.start]:02x} at column {column} is not UTF-8; save the file as UTF-8"
        ) from None


def read_text(path: str | Path) -> str:
    """The whole file at ``path`` as text; an OSError as reading raises it."""
    return decode(Path(path).read_bytes(), str(path))
