"""``python -m rag_app serve``: the API app (``rag_app.http_app``) on uvicorn, with a head timeout.

Why uvicorn (with its pure-Python h11 parser) instead of the standard library's
``http.server``: a request that only half arrives holds an asyncio connection, not a
thread; malformed heads (``Content-Length: -1`` or ``abc``, oversized headers) get an
HTTP 400 from a well-tested parser instead of a dropped connection and a traceback;
and the open connections are bounded (``limit_concurrency``).

uvicorn has no deadline for a request's head: a client that opens a connection and
sends a byte now and then would hold it forever. :func:`_protocol_with_head_timeout`
adds one: from the moment a connection opens (or its previous response ends) the whole
head must arrive within ``request_timeout`` seconds, else the server answers 408 and
closes the connection. The body has the same bound inside the app.

The socket is bound before uvicorn starts, so ``port=0`` picks a free port whose
number is known at once (:attr:`ApiServer.url`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import socket
import threading
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from rag_app.http_app import ApiApp, Limits
from rag_app.pipeline import RagPipeline
from rag_app.redact import Redactor

log = logging.getLogger(__name__)

_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
_WILDCARD_ADDRESSES = ("", "0.0.0.0", "::")


def env_secrets(env: dict[str, str] | None = None) -> list[str]:
    """Values of the environment's credentials (``*_API_KEY``, ``*_TOKEN``, ...): what to redact."""
    source = os.environ if env is None else env
    return [v for k, v in source.items() if k.upper().endswith(_SECRET_SUFFIXES) and v.strip()]


def _timeout_body(seconds: float) -> bytes:
    body = json.dumps({"error": "request_timeout", "detail": f"the request head did not arrive within {seconds:g} s"})
    return (
        f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"connection: close\r\n\r\n{body}"
    ).encode("ascii")


def _protocol_with_head_timeout(seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, plus a deadline for each request head (see the module doc)."""

    class HeadTimeoutProtocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _idle_cycle: object = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not self._idle_cycle:  # a new request's head is complete
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._idle_cycle = self.cycle
            self._head_timer = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expire(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing() and self.cycle is self._idle_cycle:
                self.transport.write(_timeout_body(seconds))
                self.transport.close()

    return HeadTimeoutProtocol


class ApiServer:
    """A bound API server: :meth:`serve_forever` in this thread, or :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        pipeline: RagPipeline,
        host: str = "127.0.0.1",
        port: int = 8000,
        limits: Limits | None = None,
        *,
        access_log: bool = False,
    ) -> None:
        limits = limits or Limits()
        if host not in _WILDCARD_ADDRESSES and host.lower() not in limits.allowed_hosts:
            limits = dataclasses.replace(limits, allowed_hosts=(*limits.allowed_hosts, host.lower()))
        self.limits = limits
        self.redactor = Redactor(env_secrets())
        self.api = ApiApp(pipeline, limits, self.redactor)
        app = self.api.starlette()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self._socket.listen(128)
        config = uvicorn.Config(
            app,
            http=_protocol_with_head_timeout(limits.request_timeout),
            loop="asyncio",
            lifespan="off",
            log_config=None,
            access_log=access_log,
            server_header=False,
            ws="none",
            limit_concurrency=limits.max_connections,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Requests admitted to the pipeline queue right now (the one being served included)."""
        return self.api.pending

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def serve_forever(self) -> None:
        """Serve until SIGINT/SIGTERM (in the main thread) or :meth:`stop`."""
        self._server.run(sockets=[self._socket])

    def start(self) -> ApiServer:
        """Serve on a background thread; returns once the server accepts requests."""
        self._thread = threading.Thread(target=self.serve_forever, name="rag-app-api", daemon=True)
        self._thread.start()
        while not self._server.started and self._thread.is_alive():
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def make_server(
    pipeline: RagPipeline, host: str = "127.0.0.1", port: int = 8000, limits: Limits | None = None
) -> ApiServer:
    """A bound server (port 0 picks a free port): ``serve_forever()``, or ``start()``/``stop()``."""
    return ApiServer(pipeline, host, port, limits)
