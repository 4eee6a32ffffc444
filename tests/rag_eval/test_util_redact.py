"""The redactor: exact values, URL-encoded and base64 forms, short values left alone."""

from __future__ import annotations

import base64
from urllib.parse import quote, quote_plus

from rag_eval.util.redact import MASK, Redactor, run_secrets

KEY = "sk-live-9f8e7d/6c+5b=4a"


def test_exact_url_encoded_and_base64_forms_are_removed() -> None:
    r = Redactor([KEY])
    for form in (KEY, quote(KEY, safe=""), quote_plus(KEY, safe=""), base64.b64encode(KEY.encode()).decode()):
        out = r.text(f"before {form} after")
        assert KEY not in out and form not in out and MASK in out, form


def test_base64_of_user_colon_key_is_removed_for_any_user_name() -> None:
    r = Redactor([KEY])
    for user in ("", "a", "ab", "alice", "api-user-42"):
        token = base64.b64encode(f"{user}:{KEY}".encode()).decode()
        out = r.text(f"Authorization: Basic {token}")
        assert token not in out and MASK in out, user


def test_short_values_are_not_redacted_and_are_reported() -> None:
    r = Redactor(["none", "sk-1", KEY])
    assert r.text("none of this is secret; sk-1 is a placeholder") == "none of this is secret; sk-1 is a placeholder"
    assert r.ignored == frozenset({"none", "sk-1"}) and len(r) == 1
    assert KEY not in repr(r) and "none" not in repr(r)


def test_obj_redacts_deep_keys_and_values_and_keeps_other_types() -> None:
    r = Redactor([KEY])
    data = {"reason": f"saw {KEY}", "list": [KEY, 1, None, {"k": (KEY, 2.5)}], KEY: True}
    out = r.obj(data)
    assert out == {"reason": f"saw {MASK}", "list": [MASK, 1, None, {"k": (MASK, 2.5)}], MASK: True}
    assert data["reason"] == f"saw {KEY}"  # a copy, the input is unchanged


def test_run_secrets_collects_every_component_and_url_passwords() -> None:
    env = {
        "RAG_JUDGE_API_KEY": "judge-key-123",
        "RAG_GENERATOR_API_KEY": "gen-key-456",
        "RAG_EMBEDDING_API_KEY": "emb-key-789",
        "RAG_RERANKER_API_KEY": "rr-key-000",
        "DIFY_API_KEY": "app-dify-111",
        "CHROMA_AUTH_TOKEN": "chroma-tok-222",
        "OPENAI_API_KEY": "sk-openai-333",
        "MY_SERVICE_TOKEN": "svc-tok-444",
        "RAG_JUDGE_BASE_URL": "http://bob:url-pass-555@h:1/v1",
        "RAG_EVAL_SORT_KEY": "question",
        "HOME": "/root",
    }
    secrets = run_secrets(env, extra=["Basic " + base64.b64encode(b"carol:hdr-pass-666").decode()])
    for value in (
        "judge-key-123",
        "gen-key-456",
        "emb-key-789",
        "rr-key-000",
        "app-dify-111",
        "chroma-tok-222",
        "sk-openai-333",
        "svc-tok-444",
        "url-pass-555",
        "hdr-pass-666",
    ):
        assert value in secrets, value
    assert "question" not in secrets and "/root" not in secrets


def test_upper_case_hex_and_json_escaped_forms_are_removed() -> None:
    from tests.support.leaks import assert_no_window, forms

    r = Redactor([KEY])
    texts = [r.text(f"before {form} after") for form in forms(KEY).values()]
    texts.append(r.text(KEY.encode().hex().upper()))
    half = "".join(c if i % 2 else f"\\u{ord(c):04X}" for i, c in enumerate(KEY))  # mixed, upper-case hex digits
    texts.append(r.text(f'{{"reason": "{half}"}}'))
    assert_no_window(texts, KEY)
    assert all(MASK in t for t in texts)


def test_snippet_redacts_before_it_cuts() -> None:
    r = Redactor([KEY])
    text = "p" * 264 + " key=" + KEY
    assert KEY[:12] in text[:300]  # cutting first would keep most of the key
    out = r.snippet(text, 300)
    assert len(out) <= 300 and KEY[:6] not in out and out.endswith("key=[redacted]")


def test_log_redaction_covers_debug_lines_of_child_loggers_and_later_handlers() -> None:
    import io
    import logging

    from rag_eval.util.redact import install_log_redaction
    from tests.support.leaks import assert_no_window

    before = logging.getLogRecordFactory()  # the plugin's own, in this repository's test run
    undo = install_log_redaction(Redactor([KEY]))
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # added after the install, as pytest's are
    logger = logging.getLogger("httpcore.http11")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug(
            "receive_response_headers.complete return_value=%r",
            (b"HTTP/1.1", 429, b"Too Many", [(b"Retry-After", KEY.encode())]),
        )
        try:
            raise ValueError(f"server said {KEY}")
        except ValueError:
            logger.exception("failed for %s", base64.b64encode(KEY.encode()).decode())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
        undo()
    text = stream.getvalue()
    assert "Retry-After" in text and "ValueError" in text and MASK in text
    assert_no_window([text], KEY)
    assert logging.getLogRecordFactory() is before  # undone: the factory it found is back


def test_obj_copies_every_container_and_redacts_str_subclasses_and_nested_keys() -> None:
    class Tag(str):
        pass

    r = Redactor([KEY])
    inner: list[object] = [Tag(f"x{KEY}"), {("t", 1): [KEY]}, "", 0, False]
    data = {"a": {"b": inner}, 3: (KEY,)}
    out = r.obj(data)
    assert out == {"a": {"b": [f"x{MASK}", {("t", 1): [MASK]}, "", 0, False]}, 3: (MASK,)}
    out["a"]["b"].append("more")  # a deep copy: the input's containers are not shared
    assert inner == [Tag(f"x{KEY}"), {("t", 1): [KEY]}, "", 0, False]
    assert Redactor([]).obj(data) == data and Redactor([]).obj(data)["a"] is not data["a"]


def test_obj_without_secrets_makes_the_same_copy_as_the_scanning_walk() -> None:
    from types import MappingProxyType

    class Label(str):
        pass

    inner = {"k": [1, 2.5, None, True], "t": (MappingProxyType({"x": "y"}), Label("z"))}
    value = MappingProxyType({"a": inner, "b": [inner, ("p", 3)], "c": "plain"})
    plain = Redactor(()).obj(value)
    scanned = Redactor(("a-secret-that-is-not-there",)).obj(value)
    assert plain == scanned
    assert type(plain) is dict and type(plain["a"]["t"]) is tuple and type(plain["a"]["t"][0]) is dict
    assert type(plain["b"][1]) is tuple and plain["a"]["t"][1] == "z"
    assert plain["a"] is not inner and plain["a"]["k"] is not inner["k"]  # a copy, not the input
