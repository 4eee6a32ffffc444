"""A scripted JSON HTTP server on 127.0.0.1 for adapter tests (any path, any method).

Each path has a FIFO script of steps (``srv.enqueue("/api/retrieve", Status(500))``);
when it is empty, ``default(path, json_body)`` answers. Every request is recorded.
Standard library only, like ``openai_server``; real sockets so retries, timeouts and
headers go through the real httpx client.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union


@dataclass(frozen=True)
class Status:
    """Answer ``code`` with a JSON body (or raw text when ``raw`` is set)."""

    code: int
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    raw: str | None = None


@dataclass(frozen=True)
class Hang:
    """Wait (to trip the client's timeout), then answer with ``then`` or the default."""

    seconds: float
    then: Status | None = None


Step = Union[Status, Hang]  # noqa: UP007 - a runtime alias used in isinstance-free annotations; kept as Union for mypy's alias inference


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    json: Any


class LocalHTTPServer(ThreadingHTTPServer):
    """The scripted servers' HTTP server (this one's and ScriptedOpenAIServer's)."""

    daemon_threads = True  # a stuck client must never keep the test process alive
    request_queue_size = 256  # the default backlog of 5 drops bursts of concurrent calls -> 1 s SYN retries


class ScriptedJSONServer:
    def __init__(self, default: Callable[[str, Any], Status] | None = None) -> None:
        self.default = default or (lambda path, body: Status(404, {"error": f"no route {path}"}))
        self._queues: dict[str, deque[Step]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: list[Recorded] = []
        self._httpd: ThreadingHTTPServer | None = None

    def enqueue(self, path: str, *steps: Step) -> None:
        with self._lock:
            self._queues.setdefault(path, deque()).extend(steps)

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> ScriptedJSONServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:  # noqa: N802
                owner._serve(self)

            do_GET = do_PUT = do_POST

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._httpd = LocalHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = h.path.split("?", 1)[0]
        with self._lock:
            self.requests.append(Recorded(h.command, h.path, {k.lower(): v for k, v in h.headers.items()}, body))
            queue = self._queues.get(path)
            step: Step | None = queue.popleft() if queue else None
        if isinstance(step, Hang):
            if self._stop.wait(step.seconds):
                return
            step = step.then
        status = step if isinstance(step, Status) else self.default(path, body)
        out = (status.raw if status.raw is not None else json.dumps(status.body, ensure_ascii=False)).encode()
        try:
            h.send_response(status.code)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(out)))
            for k, v in status.headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(out)
        except ConnectionError:
            pass  # the client gave up (its timeout fired during a hang)
