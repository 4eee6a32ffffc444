"""rag_app serve under attack (issue 26 #10): each starving or fooling request of the old
http.server gets an HTTP answer and a bounded cost. Real sockets on 127.0.0.1; every loop
is bounded in count and time."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from rag_app.http_app import Limits
from rag_app.http_server import make_server
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from tests.rag_app.test_api import DOCS, post

HEAD_TIMEOUT = 1.0


class Gate:
    """Wraps a pipeline's ``retrieve``: counts calls, and a question "block" waits for ``release``."""

    def __init__(self, pipeline: RagPipeline) -> None:
        self.calls = 0
        self.entered, self.release = threading.Event(), threading.Event()
        self.server: Any = None
        self._inner = pipeline.retrieve
        pipeline.retrieve = self  # type: ignore[method-assign]

    def __call__(self, question: str, top_k: int | None = None) -> Any:
        self.calls += 1
        if question == "block":
            self.entered.set()
            assert self.release.wait(20), "the test never released the pipeline"
        return self._inner(question, top_k)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> RagPipeline:
    root = tmp_path_factory.mktemp("limits")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return RagPipeline(
        Settings(
            corpus_path=str(corpus), cache_dir=str(root / "cache"), embedder="fake", reranker="none", sufficiency=False
        )
    )


def serve(pipeline: RagPipeline, **limits: Any) -> Iterator[tuple[str, Gate]]:
    original = pipeline.retrieve
    gate = Gate(pipeline)
    server = make_server(pipeline, "127.0.0.1", 0, Limits(request_timeout=HEAD_TIMEOUT, **limits))
    gate.server = server
    try:
        with server:
            yield server.url, gate
    finally:
        gate.release.set()
        pipeline.retrieve = original  # type: ignore[method-assign]


@pytest.fixture
def api(pipeline: RagPipeline) -> Iterator[tuple[str, Gate]]:
    yield from serve(pipeline, max_pending=3)


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or 80


def exchange(url: str, data: bytes, *, wait: float = 10.0) -> bytes:
    """Send raw bytes, then read until the server closes (or ``wait`` seconds pass)."""
    with socket.create_connection(address(url), timeout=wait) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the server may answer and close before it read everything
            pass
        out = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                part = sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not part:
                break
            out += part
        return out


def head(path: str, host: str, headers: str = "", body: bytes = b"") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{headers}\r\n").encode() + body


def status_of(response: bytes) -> int:
    assert response.startswith(b"HTTP/1.1 "), f"no HTTP response: {response[:200]!r}"
    return int(response.split(b" ", 2)[1])


def host(url: str) -> str:
    return urlsplit(url).netloc


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "+5"])
def test_a_malformed_content_length_gets_a_400_and_runs_nothing(
    api: tuple[str, Gate], length: str, capfd: pytest.CaptureFixture[str]
) -> None:
    url, gate = api
    body = b'{"question": "derivative"}' + b" " * (2 << 20)  # 2 MB: over the limit if read(-1)
    response = exchange(
        url, head("/api/retrieve", host(url), f"Content-Type: application/json\r\nContent-Length: {length}\r\n", body)
    )

    assert status_of(response) == 400
    assert gate.calls == 0
    assert "Traceback" not in capfd.readouterr().err


def test_a_body_over_the_limit_is_413_without_being_read(api: tuple[str, Gate]) -> None:
    url, gate = api
    declared = exchange(
        url, head("/api/retrieve", host(url), "Content-Type: application/json\r\nContent-Length: 50000000\r\n", b"{")
    )
    chunk = b"x" * 65536
    chunked = b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(20)) + b"0\r\n\r\n"
    streamed = exchange(
        url,
        head("/api/retrieve", host(url), "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", chunked),
    )

    assert status_of(declared) == 413 and b"larger than 1048576 bytes" in declared
    assert status_of(streamed) == 413 and gate.calls == 0


def test_deeply_nested_json_is_a_422(api: tuple[str, Gate], capfd: pytest.CaptureFixture[str]) -> None:
    url, gate = api
    r = post(url, "/api/retrieve", b"[" * 200_000)

    assert r.status_code == 422 and "nested too deeply" in r.json()["detail"]
    nested = post(url, "/api/chat", b'{"question": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    assert nested.status_code == 422 and gate.calls == 0
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None]
)
def test_only_json_posts_are_executed(api: tuple[str, Gate], content_type: str | None) -> None:
    url, gate = api
    headers = {"Content-Type": content_type} if content_type else {}
    r = httpx.post(f"{url}/api/retrieve", content=json.dumps({"question": "derivative"}), headers=headers, timeout=10)

    assert r.status_code == 415 and "application/json" in r.json()["detail"]
    assert gate.calls == 0
    ok = httpx.post(
        f"{url}/api/retrieve",
        json={"question": "derivative"},
        headers={"Content-Type": "application/json; charset=utf-8"},
        timeout=10,
    )
    assert ok.status_code == 200 and gate.calls == 1


@pytest.mark.parametrize("bad_host", ["attacker.example", "attacker.example:80", "127.0.0.1.nip.io", ""])
def test_a_foreign_host_header_is_refused(api: tuple[str, Gate], bad_host: str) -> None:
    url, gate = api
    body = b'{"question": "derivative"}'
    r = exchange(
        url, head("/api/retrieve", bad_host, f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n", body)
    )

    assert status_of(r) == 421 and b"--allow-host" in r
    assert gate.calls == 0
    health = httpx.get(f"{url}/api/health", headers={"Host": "attacker.example"}, timeout=10)
    assert health.status_code == 421


def test_local_names_are_served_and_a_foreign_origin_is_refused(api: tuple[str, Gate]) -> None:
    url, gate = api
    port = address(url)[1]
    for name in ("127.0.0.1", "localhost", "LOCALHOST", "[::1]"):
        r = httpx.get(f"{url}/api/health", headers={"Host": f"{name}:{port}"}, timeout=10)
        assert r.status_code == 200, name
    r = httpx.post(
        f"{url}/api/retrieve",
        json={"question": "derivative"},
        headers={"Origin": "https://attacker.example"},
        timeout=10,
    )
    assert r.status_code == 403 and gate.calls == 0
    same = httpx.post(
        f"{url}/api/retrieve",
        json={"question": "derivative"},
        headers={"Origin": f"http://localhost:{port}"},
        timeout=10,
    )
    assert same.status_code == 200


def test_an_allowed_host_can_be_added(pipeline: RagPipeline) -> None:
    for url, _ in serve(pipeline, allowed_hosts=("rag.internal", "127.0.0.1")):
        assert httpx.get(f"{url}/api/health", headers={"Host": "rag.internal:8000"}, timeout=10).status_code == 200
        assert httpx.get(f"{url}/api/health", headers={"Host": "localhost"}, timeout=10).status_code == 421


def test_half_sent_requests_are_closed_and_do_not_starve_the_server(api: tuple[str, Gate]) -> None:
    url, gate = api
    socks = []
    try:
        for i in range(500):
            sock = socket.create_connection(address(url), timeout=10)
            sock.sendall(b"POST /api/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n" if i % 2 else b"GE")
            socks.append(sock)
        assert httpx.get(f"{url}/api/health", timeout=10).status_code == 200
        assert post(url, "/api/retrieve", {"question": "derivative"}).status_code == 200
        closed = 0
        for sock in socks:  # each is answered 408 and closed after the head timeout
            sock.settimeout(HEAD_TIMEOUT + 10)
            data = b""
            while part := sock.recv(4096):
                data += part
            closed += data == b"" or status_of(data) == 408
        assert closed == 500
    finally:
        for sock in socks:
            sock.close()
    assert gate.calls == 1


def test_a_slow_drip_head_or_body_is_cut_off(api: tuple[str, Gate]) -> None:
    url, gate = api
    with socket.create_connection(address(url), timeout=10) as sock:
        dripped, answer = 0, b""
        for byte in b"POST /api/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 200:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            dripped += 1
            time.sleep(0.1)
            sock.setblocking(False)
            try:
                answer = sock.recv(4096)
            except BlockingIOError:
                pass
            sock.setblocking(True)
            if answer:
                break
    assert status_of(answer) == 408 and dripped < 200
    body = b'{"question": "derivative"}'
    partial = exchange(
        url,
        head(
            "/api/retrieve", host(url), f"Content-Type: application/json\r\nContent-Length: {len(body) + 10}\r\n", body
        ),
    )
    assert status_of(partial) == 408 and b"did not arrive" in partial and gate.calls == 0


def test_a_long_question_is_refused_before_the_pipeline(api: tuple[str, Gate]) -> None:
    url, gate = api
    r = post(url, "/api/chat", {"question": "导数" * 15_000})  # 30,000 characters

    assert r.status_code == 422 and "30000 characters, more than the limit of 2000" in r.json()["detail"]
    assert "max_question_chars" in r.json()["detail"] and gate.calls == 0
    turns = [{"role": "user", "content": "x " * 1500}]
    assert post(url, "/api/dialogue", {"turns": turns}).status_code == 422
    assert post(url, "/api/retrieve", {"question": "derivative " * 180}).status_code == 200  # 1,980 characters


def test_a_busy_pipeline_queues_without_threads_and_refuses_past_max_pending(api: tuple[str, Gate]) -> None:
    url, gate = api
    results: dict[str, int] = {}

    def ask(name: str, question: str) -> None:
        results[name] = post(url, "/api/retrieve", {"question": question}).status_code

    threads = [threading.Thread(target=ask, args=("blocked", "block"))]
    threads[0].start()
    assert gate.entered.wait(10)
    assert httpx.get(f"{url}/api/health", timeout=10).status_code == 200  # never waits for the pipeline
    for name in ("second", "third"):
        threads.append(threading.Thread(target=ask, args=(name, "derivative")))
        threads[-1].start()
    deadline = time.monotonic() + 10
    while gate.server.pending < 3 and time.monotonic() < deadline:  # both queued: max_pending = 3 with the blocked one
        time.sleep(0.02)
    assert gate.server.pending == 3 and gate.calls == 1  # the queued two wait without reaching the pipeline
    busy = post(url, "/api/retrieve", {"question": "derivative"})
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1" and "max_pending" in busy.json()["detail"]
    gate.release.set()
    for t in threads:
        t.join(20)
    assert results == {"blocked": 200, "second": 200, "third": 200}


def test_a_request_that_waits_past_queue_timeout_is_503(pipeline: RagPipeline) -> None:
    for url, gate in serve(pipeline, queue_timeout=0.5):
        blocked = threading.Thread(target=post, args=(url, "/api/retrieve", {"question": "block"}))
        blocked.start()
        assert gate.entered.wait(10)
        r = post(url, "/api/retrieve", {"question": "derivative"})
        assert r.status_code == 503 and "queue_timeout" in r.json()["detail"]
        gate.release.set()
        blocked.join(20)


def test_a_bad_serve_limit_is_refused_at_start_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    from rag_app.cli import main

    assert main(["--set", "embedder=fake", "serve", "--max-pending", "0"]) == 2
    assert "max_pending must be positive, got 0" in capsys.readouterr().err


def test_an_oversized_request_head_is_a_400(api: tuple[str, Gate]) -> None:
    url, gate = api
    response = exchange(url, head("/api/retrieve", host(url), "X-Pad: " + "a" * 1_000_000 + "\r\n"))

    assert status_of(response) == 400 and gate.calls == 0
