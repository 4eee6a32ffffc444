"""The HTTP side of rag_app's API: a Starlette app with limits, in front of ``rag_app.api``.

Every request passes, in this order (each refusal is JSON ``{"error", "detail"}``):

1. **Host allow-list** (421): the ``Host`` header must name an allowed host
   (default ``localhost``, ``127.0.0.1``, ``::1`` and the bound address), so a web page
   that rebinds its DNS name to 127.0.0.1 cannot reach the service. An ``Origin``
   header naming another host is refused too (403): a browser's cross-site POST.
2. **JSON only** (415): a POST must say ``Content-Type: application/json``. A browser
   sends ``text/plain`` and form bodies cross-site without asking; JSON it must ask for.
3. **Body limit** (413): at most ``max_body_bytes``, checked on ``Content-Length``
   and again while reading (chunked bodies). A malformed ``Content-Length`` never gets
   here: uvicorn's h11 parser answers 400.
4. **Body timeout** (408): the whole body must arrive within ``request_timeout``
   seconds (the request head has the same bound, in ``rag_app.http_server``).
5. **Validation** (422, ``rag_app.api.parse_request``): fields, question length.
6. **The pipeline queue** (503): the pipeline serves one request at a time (its index
   is not guaranteed thread-safe). Waiting requests hold no thread; at most
   ``max_pending`` wait, each at most ``queue_timeout`` seconds; more answer 503 with
   ``Retry-After`` at once. ``GET /api/health`` never waits for the pipeline.

An exception in the pipeline answers 500 with its type and message; that text, and the
traceback logged on stderr, pass the :class:`~rag_app.redact.Redactor` of every key
rag_app reads (generator, embedder, reranker, Chroma token) before being cut.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from rag_app.api import REQUEST_KEYS, InvalidRequest, answer, parse_request
from rag_app.pipeline import RagPipeline
from rag_app.redact import Redactor

log = logging.getLogger(__name__)

LOCAL_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
ROUTES = "GET /api/health, POST /api/retrieve, POST /api/chat, POST /api/dialogue"
_MAX_DETAIL = 1000  # characters of an exception's text in a 500 body (after redaction)
_MAX_TRACEBACK = 4000  # characters of a traceback on stderr (after redaction; the end is kept)


@dataclass(frozen=True)
class Limits:
    """What ``rag_app serve`` accepts; every value is a ``serve`` option (docs/rag_app.md, "Limits")."""

    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS  # "*" allows any Host header
    max_body_bytes: int = 1 << 20
    max_question_chars: int = 2000
    request_timeout: float = 10.0  # seconds for the request head, and again for the body
    max_pending: int = 16  # requests waiting for the pipeline; more answer 503
    queue_timeout: float = 120.0  # seconds one request may wait for the pipeline
    max_connections: int = 512  # open connections; more requests answer 503 (uvicorn's limit)

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_question_chars", "max_pending", "max_connections"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("request_timeout", "queue_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {getattr(self, name)}")
        if not self.allowed_hosts:
            raise ValueError("allowed_hosts is empty: name at least one host, or '*' for any")


def json_response(code: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Response:
    out = json.dumps(body, ensure_ascii=False).encode("utf-8")
    return Response(out, status_code=code, headers=dict(headers or {}), media_type="application/json; charset=utf-8")


def _refusal(code: int, error: str, detail: str, headers: Mapping[str, str] | None = None) -> Response:
    return json_response(code, {"error": error, "detail": detail}, headers)


def host_of(value: str) -> str:
    """The host part of a ``Host`` header or an ``Origin`` URL, lower-case, without port or brackets."""
    value = value.strip().lower()
    if "://" in value:
        value = value.split("://", 1)[1].split("/", 1)[0]
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostGuard:
    """ASGI middleware: a ``Host`` outside the allow-list answers 421, a foreign ``Origin`` 403."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.any = "*" in allowed
        self.allowed = frozenset(host_of(h) for h in allowed if h != "*")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.any:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host, origin = host_of(headers.get("host", "")), headers.get("origin")
        if host not in self.allowed:
            shown = json.dumps(headers.get("host", ""))[:80]
            response = _refusal(
                421,
                "host_not_allowed",
                (
                    f"Host {shown} is not served here; allowed: {', '.join(sorted(self.allowed))}. "
                    "To serve another name add it: python -m rag_app serve --allow-host NAME"
                ),
            )
        elif origin is not None and origin != "null" and host_of(origin) not in self.allowed:
            response = _refusal(
                403,
                "origin_not_allowed",
                (
                    f"requests from the web origin {json.dumps(origin)[:80]} are refused (cross-site); "
                    "allow its host with --allow-host NAME"
                ),
            )
        else:
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


class ApiApp:
    """The routes, over one pipeline, with :class:`Limits` and a redactor for 500s."""

    def __init__(self, pipeline: RagPipeline, limits: Limits, redactor: Redactor) -> None:
        self.pipeline, self.limits, self.redactor = pipeline, limits, redactor
        self.pending = 0  # requests admitted to the pipeline queue (event-loop thread only)
        self._turn: anyio.Lock | None = None  # created on the server's event loop

    def starlette(self) -> Starlette:
        # Each path also with a trailing slash, answered in place (no redirect), as before.
        routes = [Route(p, self.health, methods=["GET"]) for p in ("/api/health", "/api/health/")]
        routes += [Route(p, self.post, methods=["POST"]) for path in REQUEST_KEYS for p in (path, path + "/")]
        app = Starlette(routes=routes, exception_handlers={HTTPException: self._http_error})
        app.add_middleware(HostGuard, allowed=self.limits.allowed_hosts)
        return app

    async def health(self, request: Request) -> Response:
        return json_response(200, {"status": "ok", "info": asdict(self.pipeline.info)})

    async def post(self, request: Request) -> Response:
        path = request.url.path.rstrip("/")
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return _refusal(
                415,
                "unsupported_media_type",
                (f"the body must be JSON sent as Content-Type: application/json, not {media or 'no content type'!r}"),
            )
        limit = self.limits.max_body_bytes
        try:
            with anyio.fail_after(self.limits.request_timeout):
                raw = await _read_body(request, limit)
        except _TooLarge:
            return _refusal(
                413, "body_too_large", f"the body is larger than {limit} bytes (the limit)", {"Connection": "close"}
            )
        except TimeoutError:
            return _refusal(
                408,
                "request_timeout",
                (f"the body did not arrive within {self.limits.request_timeout:g} s"),
                {"Connection": "close"},
            )
        try:
            req = parse_request(path, raw, self.limits.max_question_chars)
        except InvalidRequest as exc:
            return _refusal(422, "invalid_request", str(exc))
        return await self._queued(path, req)

    async def _queued(self, path: str, req: dict[str, Any]) -> Response:
        if self.pending >= self.limits.max_pending:
            return _refusal(
                503,
                "busy",
                (f"{self.pending} requests are already waiting for the pipeline (max_pending); try again"),
                {"Retry-After": "1"},
            )
        self.pending += 1
        try:
            if self._turn is None:
                self._turn = anyio.Lock()
            try:
                with anyio.fail_after(self.limits.queue_timeout):
                    await self._turn.acquire()
            except TimeoutError:
                return _refusal(
                    503,
                    "busy",
                    (f"the pipeline stayed busy for {self.limits.queue_timeout:g} s (queue_timeout); try again"),
                    {"Retry-After": "5"},
                )
            try:
                code, body = await anyio.to_thread.run_sync(answer, self.pipeline, path, req)
            finally:
                self._turn.release()
        except Exception as exc:  # noqa: BLE001 - answer 500 with the (redacted) reason instead of dropping it
            trace = self.redactor.redact(traceback.format_exc())
            log.error("%s failed: %s", path, trace[-_MAX_TRACEBACK:])
            detail = self.redactor.snippet(f"{type(exc).__name__}: {exc}", _MAX_DETAIL)
            return _refusal(500, "internal", detail)
        finally:
            self.pending -= 1
        return json_response(code, body)

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        path = request.url.path.rstrip("/")
        if code == 405:
            return _refusal(
                405,
                "method_not_allowed",
                f"use {'GET' if path == '/api/health' else 'POST'} {path}",
                {"Allow": "GET" if path == "/api/health" else "POST"},
            )
        if code == 404:
            return _refusal(404, "not_found", f"no route {json.dumps(path)[:200]}; routes: {ROUTES}")
        return _refusal(code, "http_error", str(getattr(exc, "detail", "")))


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        parts.append(chunk)
    return b"".join(parts)
