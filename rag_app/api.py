"""rag_app over HTTP: ``python -m rag_app serve --host 127.0.0.1 --port 8000``.

    GET  /api/health    {"status": "ok", "info": {index fingerprint, models, ...}}
    POST /api/retrieve  {"question": str, "top_k": int | null}
                        -> {question, items: [chunk], stages: {name: [{chunk_id, score, rank}]},
                            degraded, degradation_reason}
    POST /api/chat      {"question": str, "top_k": int | null, "history": [{role, content}]}
                        -> {question, answer, sources: [{n, chunk_id, doc_id, book, section,
                            page_start, page_end}], context_used: [chunk], refused, degraded,
                            degradation_reason, generator, stages, usage}
    POST /api/dialogue  {"turns": [{role, content}, ...], "context": {"problem": ..., ...}}
                        -> one tutor turn: {action, message, intent, hint_level, retrieval,
                            candidate, interception, asking, missing, sources, sufficiency,
                            reason, usage} (``DialogueTurn.to_dict()``)

A chunk is ``{chunk_id, doc_id, text, score, kind, parent_id, book, section, page_start,
page_end}``. No relevant material (an empty context) answers 404 with the same body
plus ``detail``, so a client still sees every stage; bad input answers 422 with
``{"error": "invalid_request", "detail": ...}``.

Why the standard library and not a web framework: two POST routes and a health check
need no routing, validation or async machinery, and a zero-dependency server starts
anywhere the pipeline runs (CI, a test on 127.0.0.1). Requests are served on threads;
the pipeline is called under one lock because its index is not guaranteed thread-safe.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, cast

from rag_app.pipeline import RagPipeline
from rag_app.types import ChatResult, Chunk, DialogueRequest, RetrievalResult, Trace

log = logging.getLogger(__name__)

REQUEST_KEYS = {
    "/api/retrieve": ("question", "top_k"),
    "/api/chat": ("question", "top_k", "history"),
    "/api/dialogue": ("turns", "context"),
}
MAX_BODY = 1 << 20
MAX_TOP_K = 1000
NO_MATERIAL = "no relevant material found for this question: the context is empty"


class InvalidRequest(ValueError):
    """The request cannot be served; the message says which field and why (HTTP 422)."""


def parse_request(path: str, raw: bytes) -> dict[str, Any]:
    """Validate a JSON request body for ``path``; raise ``InvalidRequest`` naming the field."""
    try:
        body = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"the body is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidRequest('the body must be a JSON object like {"question": "...", "top_k": 5}')
    unknown = sorted(set(body) - set(REQUEST_KEYS[path]))
    if unknown:
        raise InvalidRequest(f"unknown field(s) {unknown}; valid: {', '.join(REQUEST_KEYS[path])}")
    if path == "/api/dialogue":
        try:
            request = DialogueRequest.from_dict(body, "the body")
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        return {"turns": request.turns, "context": request.context}
    question = body.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InvalidRequest("'question' is required: a non-empty string")
    top_k = body.get("top_k")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K):
        raise InvalidRequest(f"'top_k' must be an integer from 1 to {MAX_TOP_K}, or null for the default; got {top_k!r}")
    history = body.get("history") or []
    if not isinstance(history, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in history
    ):
        raise InvalidRequest("'history' must be a list of {\"role\": str, \"content\": str}")
    return {"question": question, "top_k": top_k, "history": history}


def chunk_json(chunk: Chunk, score: float | None) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "text": chunk.text,
        "score": score,
        "kind": chunk.kind,
        "parent_id": chunk.parent_id,
        "book": chunk.book,
        "section": chunk.section,
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
    }


def stages_json(trace: Trace) -> dict[str, list[dict[str, Any]]]:
    return {
        s.name: [{"chunk_id": h.chunk_id, "score": h.score, "rank": h.rank} for h in s.hits]
        for s in trace.stages
        if s.name != "generation"
    }


def context_scores(result: RetrievalResult, pipeline: RagPipeline) -> dict[str, float]:
    """Each context chunk's best reranked score (a parent takes its best child's)."""
    ids = {c.chunk_id for c in result.context}
    reranked = result.trace.stage("reranked")
    out: dict[str, float] = {}
    for h in reranked.hits if reranked else ():
        chunk = pipeline.index.chunks.get(h.chunk_id)
        key = h.chunk_id if h.chunk_id in ids else (chunk.parent_id if chunk is not None else None)
        if key in ids:
            out[key] = max(out.get(key, h.score), h.score)
    return out


def retrieve_json(result: RetrievalResult, pipeline: RagPipeline) -> dict[str, Any]:
    scores = context_scores(result, pipeline)
    return {
        "question": result.question,
        "items": [chunk_json(c, scores.get(c.chunk_id)) for c in result.context],
        "stages": stages_json(result.trace),
        "degraded": result.degraded,
        "degradation_reason": result.degradation_reason,
    }


def chat_json(result: ChatResult) -> dict[str, Any]:
    return {
        "question": result.question,
        "answer": result.answer,
        "sources": [s.to_dict() for s in result.sources],
        "context_used": [chunk_json(c, None) for c in result.context_used],
        "refused": result.refused,
        "degraded": result.degraded,
        "degradation_reason": result.degradation_reason,
        "generator": result.generator,
        "stages": stages_json(result.trace),
        "usage": asdict(result.usage),
    }


class RagAppServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], pipeline: RagPipeline) -> None:
        super().__init__(address, _Handler)
        self.pipeline = pipeline
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        # An AF_INET server's address is (host str, port); typeshed allows bytes for other families.
        host, port = cast("tuple[str, int]", self.server_address[:2])
        return f"http://{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: RagAppServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/api/health":
            self._send(200, {"status": "ok", "info": asdict(self.server.pipeline.info)})
        elif path in REQUEST_KEYS:
            self._send(405, {"error": "method_not_allowed", "detail": f"use POST {path}"}, {"Allow": "POST"})
        else:
            self._not_found(path)

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, MAX_BODY + 1))
        if path not in REQUEST_KEYS:
            self._not_found(path)
            return
        try:
            if length > MAX_BODY:
                raise InvalidRequest(f"the body is larger than {MAX_BODY} bytes")
            req = parse_request(path, raw)
        except InvalidRequest as exc:
            self._send(422, {"error": "invalid_request", "detail": str(exc)})
            return
        pipeline = self.server.pipeline
        try:
            with self.server.lock:
                if path == "/api/retrieve":
                    result = pipeline.retrieve(req["question"], req["top_k"])
                    body, empty = retrieve_json(result, pipeline), not result.context
                elif path == "/api/dialogue":
                    # stating limits is an answer of the tutor, not a missing resource: always 200
                    body, empty = pipeline.dialogue(req["turns"], req["context"]).to_dict(), False
                else:
                    chat = pipeline.chat(req["question"], req["top_k"], req["history"])
                    body, empty = chat_json(chat), not chat.context_used
        except Exception as exc:  # noqa: BLE001 - answer 500 with the reason instead of dropping the connection
            log.exception("%s failed", path)
            self._send(500, {"error": "internal", "detail": f"{type(exc).__name__}: {exc}"})
            return
        if empty:
            self._send(404, {**body, "error": "no_relevant_material", "detail": NO_MATERIAL})
        else:
            self._send(200, body)

    def _not_found(self, path: str) -> None:
        routes = "GET /api/health, POST /api/retrieve, POST /api/chat, POST /api/dialogue"
        self._send(404, {"error": "not_found", "detail": f"no route {path!r}; routes: {routes}"})

    def _send(self, code: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        out = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(out)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        log.info("%s %s", self.address_string(), format % args)


def make_server(pipeline: RagPipeline, host: str = "127.0.0.1", port: int = 8000) -> RagAppServer:
    """A bound server (port 0 picks a free port); call ``serve_forever()`` to serve."""
    return RagAppServer((host, port), pipeline)
