"""Scripted OpenAI-compatible HTTP server for the test suite.

Why a real server instead of mocks: the code under test talks to LLM, embedding and
rerank providers through real clients (the ``openai`` SDK, httpx).  Patching those
clients would skip exactly the parts most likely to break -- retries, timeouts, status
code mapping, header handling, JSON parsing.  This server speaks the wire protocol on
127.0.0.1 so tests exercise the full client stack while staying offline and
deterministic.  Only the standard library is used so it works in any environment.

Each endpoint kind ("chat", "embeddings", "rerank") has a FIFO *script* of steps
(``srv.enqueue(...)``); when the script is empty a per-kind default responder answers.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import socket
import struct
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Literal, Union

from tests.support.scripted_http import LocalHTTPServer

Kind = Literal["chat", "embeddings", "rerank"]
KINDS: tuple[Kind, ...] = ("chat", "embeddings", "rerank")
DEFAULT_CHAT_CONTENT = "OK"
_ROUTES: dict[tuple[str, str], str] = {
    ("POST", "/chat/completions"): "chat",
    ("POST", "/embeddings"): "embeddings",
    ("POST", "/rerank"): "rerank",
    ("GET", "/models"): "models",
}
_ERROR_DEFAULTS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", None, "Permission denied."),
    404: ("invalid_request_error", "not_found", "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", "service_unavailable", "The server is overloaded."),
}


# --- script steps: frozen so a queued step cannot be mutated after enqueueing --------
@dataclass(frozen=True)
class Reply:
    """A successful chat completion; token counts are estimated from text when None."""

    content: str
    _: KW_ONLY
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"


@dataclass(frozen=True)
class EmbeddingsReply:
    """Fixed embedding vectors, one per input, in input order."""

    vectors: Sequence[Sequence[float]]


@dataclass(frozen=True)
class RerankReply:
    """Scores in *document* order (``scores[i]`` rates ``documents[i]``); sorted on the wire."""

    scores: Sequence[float]


@dataclass(frozen=True)
class Status:
    """Any status; ``body=None`` means an OpenAI-style error JSON, else JSON-able/str/bytes."""

    code: int
    body: Any = None
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Hang:
    """Stall (to trip client timeouts), then answer with ``then`` or the default responder."""

    seconds: float
    then: Step | None = None


@dataclass(frozen=True)
class Raw:
    """Bytes sent verbatim, e.g. malformed JSON, to test client-side parse failures."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Drip:
    """A valid 200 chat completion sent ``chunk`` bytes every ``interval`` seconds (the
    status line and headers too when ``headers``): each read gets data, so a per-read
    timeout never fires. At most ``limit`` bytes are sent (the loop is bounded)."""

    content: str = "dripped"
    interval: float = 0.5
    chunk: int = 1
    headers: bool = False
    limit: int = 200


@dataclass(frozen=True)
class Reset:
    """A 200 whose body is cut after ``sent`` bytes by a TCP reset (RST)."""

    sent: int = 10


@dataclass(frozen=True)
class EmptyChoices:
    """A 200 chat completion whose ``choices`` list is empty (seen from some proxies)."""


Step = Union[Reply, EmbeddingsReply, RerankReply, Status, Hang, Raw, EmptyChoices, Drip, Reset]  # noqa: UP007 - a runtime alias used in isinstance-free annotations; kept as Union for mypy's alias inference
Responder = Callable[[Any], Step]

# Lower-case aliases so scripts read naturally: ``srv.enqueue(reply("hi"), status(429))``.
reply, embeddings_reply, rerank_reply = Reply, EmbeddingsReply, RerankReply
status, hang, raw, empty_choices, drip, reset = Status, Hang, Raw, EmptyChoices, Drip, Reset


def rate_limited(retry_after: float | str | None = None) -> Status:
    """A 429 rate-limit error, optionally with a ``Retry-After`` header (seconds)."""
    return Status(429, headers=None if retry_after is None else {"Retry-After": str(retry_after)})


def one_request_per(seconds: float, answer: Responder) -> tuple[Responder, list[int]]:
    """A rate-limited server: one request per ``seconds`` gets ``answer``, the rest 429 with
    the ``Retry-After`` left; the list counts the refusals."""
    lock, state, refused = threading.Lock(), {"free": 0.0}, [0]

    def respond(request: Any) -> Step:
        with lock:
            now = time.monotonic()
            if now < state["free"]:
                refused[0] += 1
                return Status(429, headers={"Retry-After": f"{state['free'] - now:.3f}"})
            state["free"] = now + seconds
        return answer(request)

    return respond, refused


def insufficient_quota() -> Status:
    """A 429 for quota exhaustion: retrying never helps, so clients must not retry it."""
    err = {
        "message": "You exceeded your current quota.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
    return Status(429, {"error": err})


def deterministic_embedding(text: str, dim: int = 8) -> list[float]:
    """Hash-seeded unit vector, rounded to float32 so float and base64 answers agree."""
    rng = random.Random(hashlib.sha256(text.encode("utf-8")).digest())
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = sum(x * x for x in vec) ** 0.5 or 1.0
    return list(struct.unpack(f"<{dim}f", struct.pack(f"<{dim}f", *(x / norm for x in vec))))


def char_overlap_score(query: str, doc: str) -> float:
    """Default rerank score: share of the query's distinct characters present in doc."""
    q = set(query.lower())
    return round(len(q & set(doc.lower())) / len(q), 6) if q else 0.0


@dataclass(frozen=True)
class RecordedRequest:
    """One received request; header names are lower-cased (HTTP names are case-insensitive)."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any | None
    received_at: float
    kind: str = "unknown"
    body: bytes = field(default=b"", repr=False)

    def header(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        return self.headers.get(name.lower())


class _ScriptError(Exception):
    """A step that cannot answer this endpoint: surfaced to the client as a 500."""


_Response = tuple[int, list[tuple[str, str]], bytes]


def _words(value: Any) -> int:
    return len(value.split()) if isinstance(value, str) else len(json.dumps(value).split())


def _json_response(code: int, obj: Any, headers: list[tuple[str, str]] | None = None) -> _Response:
    return code, [("Content-Type", "application/json"), *(headers or [])], json.dumps(obj).encode()


def _error_response(code: int, message: str | None = None, *, type_: str | None = None) -> _Response:
    d_type, d_code, d_msg = _ERROR_DEFAULTS.get(code, ("api_error", None, f"HTTP {code}"))
    err = {"message": message or d_msg, "type": type_ or d_type, "param": None, "code": d_code}
    return _json_response(code, {"error": err})


class _HTTPServer(LocalHTTPServer):
    owner: ScriptedOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0 closes every connection after its response, so no idle keep-alive
    # thread outlives stop(); the socket timeout bounds a client that never sends.
    protocol_version = "HTTP/1.0"
    timeout = 10.0
    server: _HTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self.server.owner._handle(self)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silence the default per-request stderr line: tests must stay quiet."""


class ScriptedOpenAIServer:
    """Local OpenAI/rerank-compatible server whose answers follow a per-endpoint script."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        embedding_dim: int = 8,
        models: tuple[str, ...] = ("gpt-4o-mini", "text-embedding-3-small"),
    ) -> None:
        self.host, self._port, self.latency = host, port, latency
        self.embedding_dim, self.models = embedding_dim, models
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active = 0
        self._stop = threading.Event()
        self._queues: dict[str, deque[Step]] = {k: deque() for k in KINDS}
        self._defaults: dict[str, Responder] = {}
        self._requests: list[RecordedRequest] = []
        self.script_errors: list[str] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.reset_defaults()

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> ScriptedOpenAIServer:
        """Bind (port 0 = free port) and serve from a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("server already started")
        self._stop.clear()
        httpd = _HTTPServer((self.host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Wake hanging handlers, stop serving, close the socket, join the thread."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stop.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        with self._idle:  # give in-flight handlers a moment to finish writing
            self._idle.wait_for(lambda: self._active == 0, timeout=2.0)
        self._httpd = self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (only meaningful once started)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://host:port`` -- for clients that append ``/rerank`` themselves."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL including ``/v1``."""
        return f"{self.root_url}/v1"

    # --- script ---------------------------------------------------------------------
    def enqueue(self, *steps: Step, kind: Kind | None = None) -> None:
        """Append steps to a kind's FIFO; kind is inferred from typed steps, else "chat"."""
        with self._lock:
            for step in steps:
                k = kind or {EmbeddingsReply: "embeddings", RerankReply: "rerank"}.get(type(step), "chat")
                self._queues[k].append(step)

    def set_default(self, kind: Kind, fn: Responder) -> None:
        """Answer ``kind`` requests with ``fn(request_json)`` whenever its script is empty."""
        with self._lock:
            self._defaults[kind] = fn

    def reset_defaults(self) -> None:
        """Restore the built-in deterministic default responders."""
        with self._lock:
            self._defaults.update(
                chat=lambda req: Reply(DEFAULT_CHAT_CONTENT),
                embeddings=self._default_embeddings,
                rerank=self._default_rerank,
            )

    def pending(self, kind: Kind) -> int:
        """Number of scripted steps not yet consumed."""
        with self._lock:
            return len(self._queues[kind])

    # --- recording ------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot copy of every recorded request, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_of(self, kind: str) -> list[RecordedRequest]:
        """Recorded requests for one kind ("chat", "embeddings", "rerank", "models", "unknown")."""
        return [r for r in self.requests if r.kind == kind]

    def calls(self, kind: str) -> int:
        """How many requests of ``kind`` arrived."""
        return len(self.requests_of(kind))

    def reset(self) -> None:
        """Forget recorded requests, queued steps and script errors (defaults are kept)."""
        with self._lock:
            self._requests.clear()
            self.script_errors.clear()
            for q in self._queues.values():
                q.clear()

    # --- request handling (runs on handler threads) -----------------------------------
    def _handle(self, h: _Handler) -> None:
        with self._lock:
            self._active += 1
        try:
            self._serve(h)
        except ConnectionError:  # broken pipe / reset
            pass  # the client gave up (e.g. its timeout fired during a hang)
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def _serve(self, h: _Handler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        try:
            payload, bad_json = (json.loads(body) if body else None), False
        except ValueError:
            payload, bad_json = None, True
        path = h.path.split("?", 1)[0].rstrip("/")
        route = path[3:] if path.startswith("/v1/") else path
        kind = _ROUTES.get((h.command, route), "unknown")
        rec = RecordedRequest(
            h.command, h.path, {k.lower(): v for k, v in h.headers.items()}, payload, time.time(), kind, body
        )
        with self._lock:
            self._requests.append(rec)
        if self.latency and self._stop.wait(self.latency):
            return
        if kind == "unknown":
            resp: _Response | None = _error_response(404, f"Unknown endpoint {h.command} {path}")
        elif kind == "models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models]
            resp = _json_response(200, {"object": "list", "data": data})
        elif bad_json or not isinstance(payload, dict):
            resp = _error_response(400, "Request body must be a JSON object.")
        else:
            try:
                step = self._next_step(kind, payload)
                if isinstance(step, (Drip, Reset)):
                    self._send_slowly(h, step, payload)
                    return
                resp = self._render(kind, step, payload)
            except Exception as exc:  # noqa: BLE001 - report any script bug to the client
                with self._lock:
                    self.script_errors.append(f"{kind}: {exc!r}")
                resp = _error_response(500, f"ScriptedOpenAIServer script error: {exc!r}", type_="script_error")
        if resp is None:
            return  # stopped while hanging: drop the connection without answering
        code, headers, out = resp
        h.send_response(code)
        for name, value in [*headers, ("Content-Length", str(len(out)))]:
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(out)

    def _send_slowly(self, h: _Handler, step: Drip | Reset, payload: dict[str, Any]) -> None:
        code, headers, out = self._chat(
            Reply(step.content if isinstance(step, Drip) else "cut short"),
            payload,
            str(payload.get("model") or "scripted-model"),
        )
        head = (
            f"HTTP/1.1 {code} OK\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in headers)
            + f"Content-Length: {len(out)}\r\n\r\n"
        ).encode()
        h.close_connection = True
        if isinstance(step, Reset):
            h.wfile.write(head + out[: step.sent])
            h.wfile.flush()
            h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.connection.close()  # SO_LINGER 0: the close sends RST, not FIN
            return
        data = (head if step.headers else b"") + out
        if not step.headers:
            h.wfile.write(head)
            h.wfile.flush()
        for i in range(0, min(len(data), step.limit), step.chunk):
            if self._stop.wait(step.interval):
                return
            h.wfile.write(data[i : i + step.chunk])
            h.wfile.flush()

    def _next_step(self, kind: str, payload: dict[str, Any]) -> Step:
        with self._lock:
            queue, default = self._queues[kind], self._defaults[kind]
            if queue:
                return queue.popleft()
        return default(payload)

    def _render(self, kind: str, step: Step, req: dict[str, Any]) -> _Response | None:
        if isinstance(step, Hang):
            if self._stop.wait(step.seconds):
                return None
            then = step.then if step.then is not None else self._defaults[kind](req)
            return self._render(kind, then, req)
        if isinstance(step, Raw):
            return step.status, [("Content-Type", step.content_type)], step.body
        if isinstance(step, Status):
            if step.body is None:
                code, headers, out = _error_response(step.code)
            elif isinstance(step.body, (bytes, str)):
                code, headers = step.code, [("Content-Type", "application/json")]
                out = step.body.encode() if isinstance(step.body, str) else step.body
            else:
                code, headers, out = _json_response(step.code, step.body)
            return code, [*headers, *(step.headers or {}).items()], out
        model = str(req.get("model") or "scripted-model")
        if kind == "chat" and isinstance(step, (Reply, EmptyChoices)):
            return self._chat(step, req, model)
        if kind == "embeddings" and isinstance(step, EmbeddingsReply):
            return self._embeddings(step, req, model)
        if kind == "rerank" and isinstance(step, RerankReply):
            return self._rerank(step, req, model)
        raise _ScriptError(f"step {step!r} cannot answer a {kind} request")

    def _chat(self, step: Reply | EmptyChoices, req: dict[str, Any], model: str) -> _Response:
        if req.get("stream"):
            return _error_response(400, "ScriptedOpenAIServer does not support stream=true.")
        messages = req.get("messages") or []
        prompt_est = sum(_words(m.get("content", "")) for m in messages if isinstance(m, dict))
        choices: list[dict[str, Any]] = []
        prompt, completion = max(prompt_est, 1), 0
        if isinstance(step, Reply):
            message = {"role": "assistant", "content": step.content, "refusal": None}
            choices = [{"index": 0, "message": message, "logprobs": None, "finish_reason": step.finish_reason}]
            prompt = step.prompt_tokens if step.prompt_tokens is not None else prompt
            completion = step.completion_tokens if step.completion_tokens is not None else _words(step.content)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        return _json_response(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": choices,
                "usage": usage,
            },
        )

    def _embeddings(self, step: EmbeddingsReply, req: dict[str, Any], model: str) -> _Response:
        texts = self._inputs(req)
        if len(step.vectors) != len(texts):
            raise _ScriptError(f"{len(step.vectors)} vectors scripted for {len(texts)} inputs")
        base64_wanted = req.get("encoding_format") == "base64"
        data = []
        for i, vec in enumerate(step.vectors):
            emb: Any = list(vec)
            if base64_wanted:
                emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(_words(t) for t in texts)
        return _json_response(
            200,
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _rerank(self, step: RerankReply, req: dict[str, Any], model: str) -> _Response:
        docs = self._documents(req)
        if len(step.scores) != len(docs):
            raise _ScriptError(f"{len(step.scores)} scores scripted for {len(docs)} documents")
        order = sorted(range(len(docs)), key=lambda i: (-step.scores[i], i))
        top_n = req.get("top_n")
        if isinstance(top_n, int) and top_n >= 0:
            order = order[:top_n]
        results: list[dict[str, Any]] = []
        for i in order:
            item: dict[str, Any] = {"index": i, "relevance_score": step.scores[i]}
            if req.get("return_documents"):
                item["document"] = {"text": docs[i]}
            results.append(item)
        tokens = _words(str(req.get("query", ""))) + sum(_words(d) for d in docs)
        return _json_response(
            200,
            {
                "id": f"rerank-{uuid.uuid4().hex[:16]}",
                "model": model,
                "results": results,
                "usage": {"total_tokens": tokens},
            },
        )

    @staticmethod
    def _inputs(req: dict[str, Any]) -> list[str]:
        """Normalise ``input``: str, list[str], token list, or list of token lists."""
        value = req.get("input")
        if isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(x, int) for x in value)):
            value = [value]
        if not isinstance(value, list):
            raise _ScriptError("embeddings 'input' must be a string or a list")
        return [x if isinstance(x, str) else json.dumps(x) for x in value]

    @staticmethod
    def _documents(req: dict[str, Any]) -> list[str]:
        """Accept Cohere/Jina ``documents`` (str or {"text"}) and TEI-style ``texts``."""
        docs = req.get("documents", req.get("texts"))
        if not isinstance(docs, list):
            raise _ScriptError("rerank 'documents' must be a list")
        return [
            d if isinstance(d, str) else str(d.get("text", json.dumps(d))) if isinstance(d, dict) else json.dumps(d)
            for d in docs
        ]

    def _default_embeddings(self, req: Any) -> EmbeddingsReply:
        dim = req.get("dimensions") if isinstance(req.get("dimensions"), int) else self.embedding_dim
        return EmbeddingsReply(tuple(tuple(deterministic_embedding(t, dim)) for t in self._inputs(req)))

    def _default_rerank(self, req: Any) -> RerankReply:
        query = str(req.get("query", ""))
        return RerankReply(tuple(char_overlap_score(query, d) for d in self._documents(req)))
