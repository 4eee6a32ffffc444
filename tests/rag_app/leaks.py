"""Secret scans for rag_app's leak tests: every 12-character window of a key in every form.

Written independently of ``rag_app.redact`` on purpose: a test that used the redactor's
own list of forms could not notice a form it forgot.
"""

from __future__ import annotations

import base64
from urllib.parse import quote

WINDOW = 12


def key_forms(key: str) -> dict[str, str]:
    """The forms a server has been seen to echo a key in (issue 26)."""
    raw = key.encode("utf-8")
    return {
        "plain": key,
        "url": quote(key, safe=""),
        "base64": base64.b64encode(raw).decode("ascii"),
        "base64-after-prefix": base64.b64encode(b"Bearer " + raw).decode("ascii")[10:],  # key-only characters
        "hex": raw.hex(),
        "upper": key.upper(),
        "u-escapes": "".join(f"\\u{ord(c):04x}" for c in key),
    }


def leaks(text: str, key: str) -> list[str]:
    """Each ``form: window`` of the key found in ``text`` (empty: nothing leaked)."""
    found = []
    for name, form in key_forms(key).items():
        for i in range(max(1, len(form) - WINDOW + 1)):
            window = form[i:i + WINDOW]
            if window in text:
                found.append(f"{name}: {window!r}")
                break
    return found
