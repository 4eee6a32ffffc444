"""One redactor for every text that comes from outside the run.

Servers echo keys back ("Incorrect API key provided: sk-..."), models repeat what is in
their prompt, and an HTTP service may put its own bearer token in an error page. So
every reply text, judge reason, generator answer and error body passes
:meth:`Redactor.text` (or :meth:`Redactor.obj` for parsed JSON) before it is cached,
returned, logged or written to a results file, report, Markdown summary or JUnit file.

What counts as a secret: :func:`run_secrets` collects every credential the run knows
from the environment (judge, generator, embedding, reranker, Dify, Chroma token,
``OPENAI_API_KEY``, any ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` / ``*_PASSWORD``
variable, the password of a ``user:password@`` URL) plus values the caller passes as
``extra`` (the HTTP adapter's header values). Each secret is removed in the forms it
travels in: the exact value in any letter case, URL-encoded (``quote`` and
``quote_plus``), hex (either case), with any of its characters written as a JSON
``\\uXXXX`` escape (a model or server that writes ``\\u0073\\u006b...`` in a text that is
parsed as JSON later), and base64 -- as a whole and inside ``base64("user:" + key)`` for
any user name, because Basic auth encodes the key after a prefix we do not know (see
:func:`_base64_fragments`).

Cutting. A server's text is quoted in messages only through :meth:`Redactor.snippet`,
which redacts *then* cuts: cutting first can leave most of a key after the cut point
(a key that starts at character 264 of a 300-character cut loses only its tail), so
that no redaction pattern matches it any more.

Short values: a secret shorter than :data:`MIN_SECRET_LENGTH` (6) characters is not
redacted. Values such as ``none``, ``EMPTY`` or ``test`` are what local servers get as
a placeholder key, and replacing every ``none`` in a judge's reasons would mangle the
text while protecting nothing: a 4-character key is no secret. Such values are listed
in :attr:`Redactor.ignored` so a caller can say so.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

MIN_SECRET_LENGTH = 6
MASK = "[redacted]"
# Not a bare "_KEY": RAG_EVAL_SORT_KEY=question must not make "question" a secret.
_SECRET_SUFFIXES = ("_API_KEY", "_ACCESS_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_CREDENTIALS")
# Named here so a reader sees which components are covered; the suffix rule finds them too.
KNOWN_SECRET_VARS: tuple[str, ...] = (
    "RAG_JUDGE_API_KEY",
    "RAG_GENERATOR_API_KEY",
    "RAG_EMBEDDING_API_KEY",
    "RAG_RERANKER_API_KEY",
    "DIFY_API_KEY",
    "CHROMA_AUTH_TOKEN",
    "OPENAI_API_KEY",
)
_MIN_FRAGMENT = 8  # a shorter base64 fragment would match ordinary text


class Redactor:
    """Replaces every known secret (and its encodings) with ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept: set[str] = set()
        ignored: set[str] = set()
        for raw in secrets:
            value = (raw or "").strip()
            if not value:
                continue
            (kept if len(value) >= MIN_SECRET_LENGTH else ignored).add(value)
        self.ignored: frozenset[str] = frozenset(ignored)
        self._secrets: frozenset[str] = frozenset(kept)
        forms = {form for s in kept for form in _forms(s)}
        # Longest first, so a key inside a longer encoded form never leaves half of it.
        ordered = sorted(forms, key=lambda f: (-len(f), f))
        # The plain value last among equals: each character also as a JSON \\u escape.
        alternatives = [re.escape(f) for f in ordered] + [_escaped(s) for s in sorted(kept, key=lambda v: -len(v))]
        self._pattern = re.compile("|".join(alternatives), re.IGNORECASE) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __len__(self) -> int:
        return len(self._secrets)

    def __repr__(self) -> str:  # never the values
        return f"Redactor({len(self._secrets)} secrets, {len(self.ignored)} too short to redact)"

    def merged(self, other: Redactor) -> Redactor:
        """A redactor that knows the secrets of both."""
        return Redactor(self._secrets | other._secrets | self.ignored | other.ignored)

    def text(self, value: str) -> str:
        """``value`` with every secret form replaced by ``[redacted]``."""
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(MASK, value)

    def snippet(self, value: str, limit: int) -> str:
        """``value`` redacted, whitespace collapsed, *then* cut to ``limit`` characters:
        the one way to quote a server's or model's text in a message (module doc)."""
        return " ".join(self.text(str(value)).split())[:limit]

    def obj(self, value: Any) -> Any:
        """A deep copy of a JSON-like value with every string (keys too) redacted.

        Mappings (read-only proxies too) become dicts, lists stay lists, tuples tuples.
        Without secrets the copy is made in one walk that scans no string (the results
        file of a run is ~300k nodes)."""
        return _walk(value, self.text if self._pattern is not None else _same)

    def contains_secret(self, value: str) -> bool:
        return self._pattern is not None and self._pattern.search(value) is not None


_ATOMS = (int, float, bool, type(None))


def _same(value: str) -> str:
    return value


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    """``Redactor.obj``'s copy: exact dicts, lists and atoms by a type check first (the
    ABC ``isinstance`` checks below are the slow part on ~300k nodes), then any mapping,
    list or tuple, and every string (keys too) through ``text``."""
    kind = type(value)
    if kind is dict:
        return {text(k) if isinstance(k, str) else k: _walk(v, text) for k, v in value.items()}
    if kind is list:
        return [_walk(v, text) for v in value]
    if kind in _ATOMS:
        return value
    if isinstance(value, str):
        return text(value)
    if isinstance(value, Mapping):
        return {text(k) if isinstance(k, str) else k: _walk(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = [_walk(v, text) for v in value]
        return out if isinstance(value, list) else tuple(out)
    return value


def run_secrets(env: Mapping[str, str] = os.environ, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """Every secret the run knows: see the module doc for the rules."""
    found: list[str] = [str(v) for v in extra]
    for name, value in env.items():
        if not value:
            continue
        upper = name.upper()
        if upper in KNOWN_SECRET_VARS or upper.endswith(_SECRET_SUFFIXES):
            found.append(value)
            found.extend(_basic_auth_parts(value))
        if "://" in value and "@" in value:
            found.extend(_url_credentials(value))
    for value in list(found):
        found.extend(_basic_auth_parts(value))
    return tuple(dict.fromkeys(v.strip() for v in found if v and v.strip()))


def redactor_from_env(env: Mapping[str, str] = os.environ, extra: Iterable[str] = ()) -> Redactor:
    return Redactor(run_secrets(env, extra))


def _forms(secret: str) -> set[str]:
    raw = secret.encode("utf-8")
    forms = {secret, quote(secret, safe=""), quote_plus(secret, safe=""), raw.hex()}
    forms.add(base64.b64encode(raw).decode("ascii").rstrip("="))
    forms.update(_base64_fragments(raw))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def _escaped(secret: str) -> str:
    """A pattern for ``secret`` with any of its characters written as ``\\uXXXX`` (JSON)."""
    parts = []
    for ch in secret:
        code = ord(ch)
        if code > 0xFFFF:  # outside the BMP JSON writes a surrogate pair: keep it literal
            parts.append(re.escape(ch))
        else:
            parts.append(f"(?:{re.escape(ch)}|\\\\u{code:04x})")
    return "".join(parts)


def _base64_fragments(raw: bytes) -> set[str]:
    """The base64 characters fixed by ``raw`` alone, at each of the 3 byte alignments.

    ``base64(prefix + raw + suffix)`` always contains one of these, whatever the prefix
    (e.g. the user name of Basic auth) and suffix: characters that mix bits of the
    prefix or the suffix are cut off.
    """
    out: set[str] = set()
    for offset in range(3):
        enc = base64.b64encode(b"\0" * offset + raw + b"\0\0").decode("ascii")
        start = -(-8 * offset // 6)  # ceil: the first character made only of raw's bits
        end = (8 * (offset + len(raw))) // 6  # the last character made only of raw's bits, exclusive
        fragment = enc[start:end]
        if len(fragment) >= _MIN_FRAGMENT:
            out.add(fragment)
    return out


def _basic_auth_parts(value: str) -> list[str]:
    """For ``Basic <b64>``: the token, ``user:password`` and the password."""
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic" or not token:
        return []
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return [token.strip()]
    _, sep, password = decoded.partition(":")
    return [token.strip(), decoded] + ([password] if sep and password else [])


def _url_credentials(value: str) -> list[str]:
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return []
    out = [parts.password] if parts.password else []
    if parts.username and parts.password:
        out.append(f"{parts.username}:{parts.password}")
    return [v for v in out if v]


def install_log_redaction(redactor: Redactor) -> Callable[[], None]:
    """Redact every log record of the process from now on; returns the undo.

    httpx, httpcore and the openai SDK log request and response headers at DEBUG
    (``(b'Retry-After', b'sk-...')``), and ``--log-level=DEBUG -o log_cli=true -o
    junit_logging=all`` sends those lines to the terminal and into JUnit. A filter on one
    logger or handler misses records of child loggers and handlers added later (pytest
    adds its own per phase), so this wraps the log-record factory instead: each record's
    message (and formatted exception) is built and redacted when the record is made,
    before any handler sees it.
    """
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        return redact_record(record, redactor)

    logging.setLogRecordFactory(factory)

    def undo() -> None:
        if logging.getLogRecordFactory() is factory:
            logging.setLogRecordFactory(previous)

    return undo


def redact_record(record: logging.LogRecord, redactor: Redactor) -> logging.LogRecord:
    """``record`` with its message and exception text redacted (the args are folded in)."""
    if not redactor:
        return record
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string: keep what we can, redacted
        message = f"{record.msg!r} % {record.args!r}"
    record.msg, record.args = redactor.text(message), ()
    if record.exc_info and not record.exc_text:
        record.exc_text = redactor.text(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redactor.text(record.stack_info)
    return record
