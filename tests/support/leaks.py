"""Leak scans: a secret must not appear in any form, not even in part.

:func:`forms` are the ways a key travels (plain, URL-encoded, base64, hex, upper case,
JSON ``\\u`` escapes); :func:`assert_no_window` fails when any 12-character window of
any form is found in a text or in the bytes of files (a cut can leave most of a key).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

WINDOW = 12


def forms(key: str) -> dict[str, str]:
    raw = key.encode("utf-8")
    return {
        "plain": key,
        "url": quote(key, safe=""),
        "base64": base64.b64encode(raw).decode("ascii"),
        "base64-after-prefix": base64.b64encode(b"Bearer " + raw).decode("ascii")[10:],  # key-only characters
        "hex": raw.hex(),
        "upper": key.upper(),
        "escapes": "".join(f"\\u{ord(c):04x}" for c in key),
    }


def windows(key: str) -> set[str]:
    out: set[str] = set()
    for form in forms(key).values():
        out.update(form[i : i + WINDOW] for i in range(max(1, len(form) - WINDOW + 1)))
    return out


def leaked(text: str, key: str) -> list[str]:
    """The windows of ``key`` (any form) found in ``text``."""
    return sorted(w for w in windows(key) if w in text)


def assert_no_window(texts: Iterable[str], key: str) -> None:
    for text in texts:
        found = leaked(text, key)
        assert not found, f"{len(found)} window(s) of the key leaked, e.g. {found[0]!r}, in {text[:200]!r}"


def files_text(folder: Path) -> str:
    """Every file under ``folder`` (SQLite main file, ``-wal``, ``-shm``) as one text."""
    return "\n".join(p.read_bytes().decode("latin-1") for p in sorted(folder.rglob("*")) if p.is_file())
