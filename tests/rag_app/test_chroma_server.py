"""ChromaServer: settings and environment precedence, the token header, and messages that
name the address and the fix without ever showing the token. A stub HTTP server stands
in for a Chroma server with auth (the real one is in test_vector_store_server.py)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_app.errors import ConfigError, ServiceError
from rag_app.index.chroma_server import ChromaServer
from rag_app.settings import Settings

TOKEN = "tok-Secret-4711"


def load(env: dict[str, str], **overrides: object) -> Settings:
    return Settings.load(pyproject=None, env=env, overrides=overrides)


# --------------------------------------------------------------------------- settings
def test_default_is_the_embedded_store() -> None:
    settings = load({})
    assert (settings.chroma_host, settings.chroma_port, settings.chroma_ssl) == ("", 8000, False)
    assert ChromaServer.from_settings(settings, env={}) is None


def test_plain_chroma_variables_are_read() -> None:
    settings = load({"CHROMA_HOST": "db.internal", "CHROMA_PORT": "8123", "CHROMA_SSL": "true"})
    assert (settings.chroma_host, settings.chroma_port, settings.chroma_ssl) == ("db.internal", 8123, True)
    server = ChromaServer.from_settings(settings, env={})
    assert server is not None and server.url == "https://db.internal:8123"


def test_rag_app_variables_win_over_plain_ones_and_overrides_win_over_both() -> None:
    env = {"CHROMA_HOST": "plain", "RAG_APP_CHROMA_HOST": "prefixed", "CHROMA_PORT": "1", "RAG_APP_CHROMA_PORT": "2"}
    assert (load(env).chroma_host, load(env).chroma_port) == ("prefixed", 2)
    assert load(env, chroma_host="override").chroma_host == "override"
    # an explicitly empty RAG_APP_CHROMA_HOST switches a machine-wide CHROMA_HOST off
    assert load({"CHROMA_HOST": "plain", "RAG_APP_CHROMA_HOST": ""}).chroma_host == ""


def test_blank_plain_variable_counts_as_unset() -> None:
    assert load({"CHROMA_HOST": "  ", "CHROMA_PORT": ""}).chroma_host == ""


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"CHROMA_PORT": "http"}, r"setting 'chroma_port' in environment variable CHROMA_PORT: cannot read 'http'"),
        ({"CHROMA_PORT": "70000"}, r"chroma_port must be a TCP port \(1-65535\), got 70000"),
        ({"CHROMA_HOST": "http://db:8000"}, r"host name or address only; put the port in chroma_port"),
    ],
)
def test_bad_server_settings_name_the_variable_and_the_fix(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(env)


def test_token_is_never_a_setting() -> None:
    settings = load({"CHROMA_HOST": "h", "CHROMA_AUTH_TOKEN": TOKEN})
    assert TOKEN not in json.dumps(settings.to_dict())
    with pytest.raises(ConfigError, match="unknown setting 'chroma_auth_token'"):
        load({}, chroma_auth_token=TOKEN)


# --------------------------------------------------------------------------- token header
@pytest.mark.parametrize(
    ("header_env", "expected"),
    [
        ({}, {"Authorization": f"Bearer {TOKEN}"}),
        ({"CHROMA_AUTH_TOKEN_TRANSPORT_HEADER": "x-chroma-token"}, {"X-Chroma-Token": TOKEN}),
    ],
)
def test_token_header_follows_chromas_transport_setting(header_env: dict[str, str], expected: dict[str, str]) -> None:
    server = ChromaServer.from_settings(load({}, chroma_host="h"), env={"CHROMA_AUTH_TOKEN": TOKEN, **header_env})
    assert server is not None and server.headers() == expected
    assert TOKEN not in repr(server) and TOKEN not in str(server)
    assert "<set via CHROMA_AUTH_TOKEN>" in repr(server)


def test_no_token_sends_no_header_and_a_bad_header_name_is_refused() -> None:
    assert ChromaServer("h").headers() == {}
    with pytest.raises(
        ConfigError, match="CHROMA_AUTH_TOKEN_TRANSPORT_HEADER='Cookie': use one of Authorization, X-Chroma-Token"
    ):
        ChromaServer.from_settings(load({}, chroma_host="h"), env={"CHROMA_AUTH_TOKEN_TRANSPORT_HEADER": "Cookie"})


def test_ipv6_host_is_bracketed_in_the_url() -> None:
    assert ChromaServer("::1", 9000).url == "http://[::1]:9000"


# --------------------------------------------------------------------------- connect errors
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_names_the_address_and_both_fixes() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(ServiceError) as info:
        ChromaServer("127.0.0.1", port, token=TOKEN).connect()
    message = str(info.value)
    assert f"cannot reach the Chroma server at http://127.0.0.1:{port}" in message
    assert f"chroma run --path .rag_cache/chroma-server --host 127.0.0.1 --port {port}" in message
    assert "unset CHROMA_HOST" in message
    assert TOKEN not in message and info.value.__cause__ is None


class StubChroma(BaseHTTPRequestHandler):
    """Heartbeat answers; everything else is refused (401) or missing (404, heartbeat too)."""

    seen: list[dict[str, str]] = []
    refuse = True

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        StubChroma.seen.append({k: v for k, v in self.headers.items()})
        if self.path.endswith("/heartbeat") and self.refuse:
            self._reply(200, {"nanosecond heartbeat": 1})
        elif self.refuse:
            self._reply(401, {"error": "Unauthorized", "message": "bad token"})
        else:
            self._reply(404, {"detail": "Not Found"})

    def _reply(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[int]:
    StubChroma.seen = []
    StubChroma.refuse = True
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), StubChroma)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(
    ("header_env", "header", "value"),
    [
        ({}, "Authorization", f"Bearer {TOKEN}"),
        ({"CHROMA_AUTH_TOKEN_TRANSPORT_HEADER": "X-Chroma-Token"}, "X-Chroma-Token", TOKEN),
    ],
)
def test_refused_token_is_diagnosed_without_showing_it(
    stub: int, header_env: dict[str, str], header: str, value: str
) -> None:
    server = ChromaServer.from_settings(
        load({}, chroma_host="127.0.0.1", chroma_port=stub), env={"CHROMA_AUTH_TOKEN": TOKEN, **header_env}
    )
    assert server is not None
    with pytest.raises(ServiceError) as info:
        server.connect()
    message = str(info.value)
    assert (
        f"the Chroma server at http://127.0.0.1:{stub} refused the request (HTTP 401; we sent a token in {header})"
        in message
    )
    assert "set CHROMA_AUTH_TOKEN to a valid token" in message and TOKEN not in message
    assert any(seen.get(header) == value for seen in StubChroma.seen)  # the token did go out, in that header


def test_something_else_on_the_port_is_named_as_such(stub: int) -> None:
    StubChroma.refuse = False
    with pytest.raises(
        ServiceError, match=rf"http://127.0.0.1:{stub} answered HTTP 404 to /api/v2/heartbeat: is it a Chroma server"
    ):
        ChromaServer("127.0.0.1", stub).connect()


# --------------------------------------------------------------------------- timeouts
@pytest.fixture
def silent_port() -> Iterator[int]:
    """A socket that accepts every connection and never answers (a stopped or deadlocked server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)  # read nothing, send nothing

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        listener.close()


def test_a_server_that_never_answers_fails_after_the_timeout_naming_the_setting(silent_port: int) -> None:
    server = ChromaServer.from_settings(
        load({"RAG_APP_CHROMA_TIMEOUT": "0.5"}, chroma_host="127.0.0.1", chroma_port=silent_port), env={}
    )
    assert server is not None and server.timeout == 0.5
    started = time.monotonic()
    with pytest.raises(ServiceError) as info:
        server.connect()
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert (
        f"the Chroma server at http://127.0.0.1:{silent_port} did not answer within 0.5 s (chroma_timeout)" in message
    )
    assert "RAG_APP_CHROMA_TIMEOUT" in message
    assert elapsed < 10  # bounded by the timeout (0.5 s), not by the server: without one this never returns


def test_the_timeout_is_a_validated_setting() -> None:
    assert Settings().chroma_timeout == 30.0
    with pytest.raises(
        ConfigError, match="environment variable RAG_APP_CHROMA_TIMEOUT: chroma_timeout must be a positive number"
    ):
        load({"RAG_APP_CHROMA_TIMEOUT": "0"})
