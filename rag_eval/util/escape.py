"""Text from golden files, systems and models, made safe for a terminal or a CI log.

ANSI/OSC escape sequences can rewrite or hide CI log lines, and bidi controls reverse
what a reader sees; every such character is shown as its ``\\x..``/``\\u....`` escape
instead, so the text is still readable and nothing is silently dropped.
"""

from __future__ import annotations

import unicodedata

#: Bidirectional formatting characters (embeddings, overrides, isolates, marks).
BIDI: frozenset[str] = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _shown(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str, keep_newlines: bool = True) -> str:
    """``text`` with control, format (zero-width, bidi) and other non-printing characters escaped."""
    out: list[str] = []
    for ch in text:
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif ch == "\t":
            out.append(ch)
        elif ch in BIDI or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs"):
            out.append(_shown(ch))
        else:
            out.append(ch)
    return "".join(out)
