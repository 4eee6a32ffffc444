"""rag_app.redact: every echoed form of a secret is replaced, and text is cut only after redaction."""

from __future__ import annotations

import base64
import json

import pytest

from rag_app.redact import Redactor
from tests.rag_app.leaks import key_forms, leaks

KEY = "sk-live-Zq8+/x9=PLAIN-7f3a9c-0042"  # '+', '/', '=' make the URL and base64 forms differ


@pytest.mark.parametrize("form", sorted(key_forms(KEY)))
def test_each_form_of_the_key_is_redacted_inside_text(form: str) -> None:
    text = f"upstream said: <{key_forms(KEY)[form]}> (echo)"

    out = Redactor([KEY]).redact(text)

    assert leaks(out, KEY) == [] and "[redacted]" in out


@pytest.mark.parametrize("prefix", ["", "a", "ab", "abc", "Basic dXNlcjo="])
def test_base64_is_found_at_every_alignment(prefix: str) -> None:
    blob = base64.b64encode(prefix.encode() + KEY.encode() + b"|tail").decode()
    urlsafe = base64.urlsafe_b64encode(prefix.encode() + KEY.encode()).decode()

    out = Redactor([KEY]).redact(f"{blob} {urlsafe}")

    assert leaks(out, KEY) == []
    for encoded in (blob, urlsafe):
        assert not any(encoded[i : i + 12] in out for i in range(len(prefix) + 2, len(encoded) - 16)), out


def test_json_u_escapes_in_an_undecoded_body_are_redacted() -> None:
    body = json.dumps({"echo": KEY}, ensure_ascii=True).replace(KEY, "".join(f"\\u{ord(c):04X}" for c in KEY))

    assert leaks(Redactor([KEY]).redact(body), KEY) == []


@pytest.mark.parametrize("padding", [100, 264, 280, 299])
def test_snippet_redacts_before_cutting(padding: int) -> None:
    text = "x" * padding + f"key={KEY}" + "y" * 500

    out = Redactor([KEY]).snippet(text, 300)

    assert len(out) <= 300 and leaks(out, KEY) == []
    assert out.startswith("x" * padding)


def test_short_placeholders_are_left_alone_and_repr_hides_the_secret() -> None:
    assert Redactor(["none"]).redact("none of it") == "none of it"
    assert not Redactor(["", "test"])
    assert KEY not in repr(Redactor([KEY]))


def test_the_logging_filter_redacts_messages_arguments_and_tracebacks() -> None:
    import io
    import logging

    from rag_app.redact import RedactingFilter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(Redactor([KEY])))
    logger = logging.getLogger("tests.redact.filter")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("upstream echoed %s", key_forms(KEY)["base64"])
        try:
            raise RuntimeError(f"key={KEY.upper()}")
        except RuntimeError:
            logger.exception("failed with %r", KEY)
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "Traceback" in text and text.count("[redacted]") == 3 and leaks(text, KEY) == []
