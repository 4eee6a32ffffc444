"""A tolerant reader of a judge's reply, for servers without structured output.

```json fences, prose around the object, trailing commas, single quotes, raw newlines
inside strings: :func:`parse_reply` finds the verdict object anyway or says why not.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_reply(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``; raises ``ValueError`` saying what was wrong.

    Tries, in order: the whole text, the inside of ```json fences, then each balanced
    ``{...}`` span (up to 5 starts), each first verbatim and then with trailing commas
    removed and single-quoted strings turned into JSON strings. Raw control characters
    (a newline) inside strings are accepted: llama.cpp's JSON grammar lets a model write
    them, and they change nothing about the verdict.
    """
    candidates = [text.strip()] + [m.strip() for m in _FENCE.findall(text)]
    starts = [i for i, c in enumerate(text) if c == "{"][:5]
    candidates += [span for s in starts if (span := _balanced(text, s)) is not None]
    for cand in candidates:
        for attempt in (cand, _loosen(cand)):
            try:
                value = json.loads(attempt, strict=False)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    if not starts:
        raise ValueError(f"no JSON object in the reply (no '{{' found): {text[:200]!r}")
    raise ValueError(f"the reply contains no parseable JSON object: {text[:200]!r}")


def _balanced(text: str, start: int) -> str | None:
    """The ``{...}`` span starting at ``start``, braces inside strings ignored."""
    depth, quote, i = 0, "", start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    return None


def _loosen(s: str) -> str:
    """Drop trailing commas and re-quote 'single-quoted' strings, outside strings only."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in "\"'":
            j, buf = i + 1, []
            while j < n and s[j] != c:
                if s[j] == "\\" and j + 1 < n:
                    buf.append(s[j : j + 2])
                    j += 2
                    continue
                buf.append(s[j])
                j += 1
            body = "".join(buf)
            if c == "'":
                body = body.replace("\\'", "'").replace('"', '\\"')
            out.append('"' + body + '"')
            i = j + 1
            continue
        if c == ",":
            k = i + 1
            while k < n and s[k].isspace():
                k += 1
            if k < n and s[k] in "}]":
                i += 1
                continue
        out.append(c)
        i += 1
    return "".join(out)
