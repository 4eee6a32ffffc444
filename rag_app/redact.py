"""Keep secrets out of every text rag_app shows: one :class:`Redactor`, redacting before cutting.

Servers and models echo credentials back, and not always verbatim: URL-encoded in a
query string, base64 in an echoed ``Authorization: Basic`` header, hex in a debug dump,
upper-cased by a proxy, or as JSON ``\\u0073\\u006b...`` escapes in a body that was never
decoded. :meth:`Redactor.redact` replaces each of these forms of each secret; matching
is case-insensitive, which also covers upper-case hex and ``\\U``-style escapes. Base64
is matched at all three byte alignments, because a key inside a longer encoded string
(``base64("Bearer " + key)``) encodes differently from the key alone.

The rule that keeps a secret from leaking *partly*: text from a server is cut only by
:meth:`Redactor.snippet`, which redacts the whole text first and cuts afterwards. Cutting
first can leave a prefix of the key that no longer matches any form (issue 26: 31 of a
key's 33 characters printed). There is no other function here that cuts.
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MIN_SECRET = 6  # shorter values ("none", "test") are placeholders: redacting them would mangle answers
MARK = "[redacted]"


def secret_forms(secret: str) -> set[str]:
    """Every encoding of ``secret`` that :class:`Redactor` replaces (case-insensitively)."""
    raw = secret.encode("utf-8")
    forms = {secret, quote(secret, safe=""), quote_plus(secret), raw.hex()}
    forms.add("".join(f"\\u{ord(c):04x}" for c in secret))
    for shift in range(3):
        # base64 of the secret preceded by `shift` bytes: keep only the characters that
        # depend on the secret's bytes alone (no padding, no neighbour's bits).
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
        start, end = -(-8 * shift // 6), (8 * (shift + len(raw))) // 6
        part = encoded[start:end]
        forms.update({part, part.replace("+", "-").replace("/", "_")})
    return {f for f in forms if len(f) >= MIN_SECRET}


class Redactor:
    """Replaces every form of the given secrets with ``[redacted]``; ignores short placeholders."""

    def __init__(self, secrets: Iterable[str] = (), mark: str = MARK) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= MIN_SECRET:
                forms |= secret_forms(secret)
        self.mark = mark
        # Longest first: a form that contains another is replaced whole.
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        self._pattern = re.compile("|".join(re.escape(f) for f in ordered), re.IGNORECASE) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __repr__(self) -> str:  # never the secrets
        return f"Redactor(active={self._pattern is not None})"

    def redact(self, text: str) -> str:
        return self._pattern.sub(self.mark, text) if self._pattern is not None else text

    def snippet(self, text: str, limit: int, *, ellipsis: str = "") -> str:
        """``text`` redacted, then cut to ``limit`` characters (plus ``ellipsis`` when cut)."""
        clean = self.redact(text)
        return clean if len(clean) <= limit else clean[:limit] + ellipsis


class RedactingFilter(logging.Filter):
    """A handler filter: each record's message and traceback leave redacted.

    Install it on *handlers* (``handler.addFilter``): a logger's own filters do not see
    records that propagate from its children (uvicorn's, the SDK's, rag_app's).
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor:
            return True
        record.msg, record.args = self.redactor.redact(record.getMessage()), None
        if record.exc_info:
            record.exc_text = self.redactor.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.redactor.redact(record.stack_info)
        return True
