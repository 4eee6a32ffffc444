"""The one place rag_app talks to OpenAI-compatible chat endpoints (its generator).

A frozen :class:`ChatRequest` in (with a stable ``cache_key``), a :class:`ChatResponse`
out (content, usage, attempts, seconds), or a :class:`ChatError` whose ``kind`` says why.

Retries and per-attempt timeouts are the openai SDK's own (``max_retries``, ``timeout``):
it retries 408, 409, 429, 5xx, timeouts and dropped connections with exponential
backoff and jitter, and honours ``Retry-After`` in seconds, milliseconds or as an HTTP
date. A small transport (:class:`_Guard`) keeps that loop inside what the SDK cannot
know:

==============================================  =====================================
retried (up to ``max_retries`` times)           not retried
==============================================  =====================================
429 rate limit, 408, 409, 5xx                   429 with code ``insufficient_quota``
timeouts, dropped / reset connections           connection refused (nothing listens)
HTTP 200 without a usable choice (empty         other 4xx (bad key, bad model, ...)
``choices``, invalid JSON, no text)             a wait past the total time budget
==============================================  =====================================

``total_budget_s`` bounds a whole call: every attempt gets at most the time that is
left, and no attempt starts after it ran out. A 200 without a usable choice is asked
again within the same attempt count (fault-injecting proxies and overloaded servers
send them); after the last attempt it is ``kind="malformed"``.

The API key never appears in a message, a log line, a ``repr`` or a returned answer:
every text built or returned here passes :meth:`ChatClient.redact`, because servers and
models sometimes echo the key back (plain, URL-encoded, base64, hex, upper-cased or as
``\\u`` escapes: ``rag_app.redact``). A server's text is shortened only by
:meth:`ChatClient.snippet`, which redacts the whole text before cutting it.
"""

from __future__ import annotations

import contextvars
import email.utils
import hashlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import openai

from rag_app.env import EndpointConfig
from rag_app.errors import ServiceError
from rag_app.redact import Redactor
from rag_app.types import Usage

log = logging.getLogger(__name__)

ErrorKind = Literal[
    "rate_limit", "quota", "timeout", "connection", "refused", "server", "client", "auth", "malformed", "time_budget"
]
_QUOTA_CODE = "insufficient_quota"
_MAX_SERVER_MESSAGE = 300  # server error text quoted in our messages is cut to this length (after redaction)
_MAX_BODY_QUOTE = 120  # a non-JSON 200 body is quoted up to this length (after redaction)


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion call, fully described, so it can be cached and replayed.

    ``messages`` is stored as a tuple of copied dicts: the caller mutating its list
    afterwards cannot change a request that is already keyed in a cache. ``extra`` is
    merged into the JSON body verbatim (``seed``, ``top_p``, ``max_completion_tokens``
    for endpoints that want it instead of ``max_tokens``, vendor-specific fields).
    """

    model: str
    messages: Sequence[Mapping[str, str]]
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("ChatRequest.model is empty; set the model name (e.g. RAG_GENERATOR_MODEL)")
        if not self.messages:
            raise ValueError("ChatRequest.messages is empty; a chat call needs at least one message")
        for i, m in enumerate(self.messages):
            if (
                not isinstance(m, Mapping)
                or not isinstance(m.get("role"), str)
                or not isinstance(m.get("content"), str)
            ):
                raise ValueError(f"ChatRequest.messages[{i}] must be a mapping with string 'role' and 'content'")
        object.__setattr__(self, "messages", tuple(dict(m) for m in self.messages))
        object.__setattr__(self, "extra", dict(self.extra))
        if self.response_format is not None:
            object.__setattr__(self, "response_format", dict(self.response_format))

    def body(self) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions`` (without ``stream``)."""
        out: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in self.messages],
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.response_format is not None:
            out["response_format"] = dict(self.response_format)
        out.update(self.extra)
        return out

    def cache_key(self) -> str:
        """SHA-256 of the canonical body: equal requests give equal keys across runs."""
        canon = json.dumps(self.body(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatResponse:
    """The text of the first choice plus what a budget or a report needs to know."""

    content: str
    usage: Usage
    model: str
    finish_reason: str | None
    attempts: int
    seconds: float


class ChatError(ServiceError):
    """A chat call failed. ``kind`` says why, ``attempts`` how many requests were sent.

    ``retryable`` tells a caller with its own retry loop (the judge) whether trying
    again later can help: false for quota, refused connections, 4xx, malformed output
    and a used-up time budget.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        attempts: int,
        address: str,
        status_code: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.attempts = attempts
        self.address = address
        self.status_code = status_code
        self.retryable = retryable


class _Stop(openai.OpenAIError):
    """Ends a call from inside an attempt; the SDK passes OpenAIErrors through unretried."""

    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(detail)
        self.kind: ErrorKind = kind
        self.detail = detail


@dataclass
class _CallState:
    deadline: float
    attempts: int = 0
    last_timeout: float = 0.0
    last_failure: str = ""


_STATE: contextvars.ContextVar[_CallState | None] = contextvars.ContextVar("rag_app_llm_call", default=None)


class _Guard(httpx.BaseTransport):
    """Per attempt: the remaining time budget, refused connections, unretriable 429s."""

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        state = _STATE.get()
        if state is None:
            return self.inner.handle_request(request)
        remaining = state.deadline - time.monotonic()
        if remaining <= 0:
            raise _Stop(
                "time_budget",
                f"the total time budget ran out after {state.attempts} attempt(s); "
                f"last failure: {state.last_failure or 'none'}",
            )
        timeout = min(float(request.extensions.get("timeout", {}).get("read") or remaining), remaining)
        request.extensions["timeout"] = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        state.attempts += 1
        state.last_timeout = timeout
        try:
            response = self.inner.handle_request(request)
        except httpx.TimeoutException:
            state.last_failure = f"no response within the {timeout:g}s timeout"
            raise
        except httpx.HTTPError as exc:
            if _is_refused(exc):
                raise _Stop("refused", f"connection refused ({_root_cause(exc)})") from exc
            state.last_failure = f"connection failed ({_root_cause(exc)})"
            raise
        if response.status_code >= 400:
            state.last_failure = f"HTTP {response.status_code}"
        if response.status_code == 429:
            response.read()
            if _QUOTA_CODE in response.text:
                response.headers["x-should-retry"] = "false"  # the SDK obeys this header
        wait = _retry_after(response.headers) if response.status_code >= 400 else None
        if wait is not None and time.monotonic() + wait >= state.deadline:
            response.headers["x-should-retry"] = "false"
            state.last_failure = (
                f"HTTP {response.status_code}; waiting {wait:.1f}s (Retry-After) would overrun the budget"
            )
        return response

    def close(self) -> None:
        self.inner.close()


class ChatClient:
    """Calls ``POST {base_url}/chat/completions`` with the SDK's retries inside a total budget.

    ``timeout`` bounds one attempt; ``total_budget_s`` (default: every attempt its full
    timeout plus 30 s of backoff) bounds the whole call. ``max_retries`` counts retries,
    so at most ``max_retries + 1`` requests are sent. ``timeout_setting`` /
    ``retries_setting`` name the settings in messages (e.g. ``RAG_GENERATOR_TIMEOUT``).
    """

    def __init__(
        self,
        config: EndpointConfig,
        timeout: float = 30.0,
        max_retries: int = 3,
        total_budget_s: float | None = None,
        *,
        timeout_setting: str = "RAG_GENERATOR_TIMEOUT",
        retries_setting: str = "RAG_GENERATOR_MAX_RETRIES",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if timeout <= 0 or (total_budget_s is not None and total_budget_s <= 0):
            raise ValueError(f"timeout ({timeout}) and total_budget_s ({total_budget_s}) must be positive")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        # ConfigError naming the missing variables, before any request. The model is not
        # required here: it travels in each ChatRequest.
        config.require("base_url", "api_key")
        self.config = config
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.total_budget_s = (
            float(total_budget_s) if total_budget_s is not None else (self.timeout * (self.max_retries + 1) + 30.0)
        )
        self.timeout_setting, self.retries_setting = timeout_setting, retries_setting
        key = config.api_key
        self._redactor = Redactor([key])
        self._sdk = openai.OpenAI(
            api_key=key,
            base_url=config.base_url,
            max_retries=self.max_retries,
            timeout=self.timeout,
            http_client=httpx.Client(transport=_Guard(transport)),  # type: ignore[arg-type]  # httpx or httpx2
        )

    @property
    def address(self) -> str:
        return str(self.config.address)

    def __repr__(self) -> str:  # never the key
        return (
            f"ChatClient(address={self.address!r}, model={self.config.model!r}, timeout={self.timeout}, "
            f"max_retries={self.max_retries}, total_budget_s={self.total_budget_s})"
        )

    def close(self) -> None:
        self._sdk.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def redact(self, text: str) -> str:
        """``text`` with the key replaced in every form (``rag_app.redact``)."""
        return self._redactor.redact(text)

    def snippet(self, text: str, limit: int) -> str:
        """A server's ``text`` redacted, then cut: the only way this client shortens a server's text."""
        return self._redactor.snippet(text, limit)

    # --- the call -----------------------------------------------------------------------
    def complete(self, req: ChatRequest) -> ChatResponse:
        """Send ``req``; the SDK retries what is worth retrying; raise :class:`ChatError` otherwise."""
        start = time.monotonic()
        state = _CallState(deadline=start + self.total_budget_s)
        token = _STATE.set(state)
        try:
            while True:
                try:
                    raw = self._send(req, max(0, self.max_retries - state.attempts))
                except openai.OpenAIError as exc:
                    raise self._error(req, *self._classify(exc, state), state.attempts) from None
                resp, why = self._parse(req, raw, state.attempts, time.monotonic() - start)
                if resp is not None:
                    return resp
                if state.attempts > self.max_retries:
                    raise self._error(
                        req,
                        "malformed",
                        f"malformed response: {why}",
                        int(raw.status_code),
                        "the endpoint is not OpenAI-compatible or a proxy altered the answer",
                        state.attempts,
                    )
                log.warning(
                    "chat reply from %s was not usable (%s), attempt %d of %d; asking again",
                    self.address,
                    self.redact(why),
                    state.attempts,
                    self.max_retries + 1,
                )
        finally:
            _STATE.reset(token)

    def _send(self, req: ChatRequest, max_retries: int) -> Any:
        kwargs: dict[str, Any] = {
            "model": req.model,
            "messages": [dict(m) for m in req.messages],
            "temperature": req.temperature,
        }
        if req.max_tokens is not None:
            kwargs["max_tokens"] = req.max_tokens
        if req.response_format is not None:
            kwargs["response_format"] = dict(req.response_format)
        if req.extra:
            kwargs["extra_body"] = dict(req.extra)
        # The raw response lets us parse the JSON ourselves: a malformed body becomes our
        # "malformed response" error instead of whatever the SDK version happens to raise.
        return self._sdk.with_options(max_retries=max_retries).chat.completions.with_raw_response.create(**kwargs)

    # --- classification ---------------------------------------------------------------
    def _classify(self, exc: openai.OpenAIError, state: _CallState) -> tuple[ErrorKind, str, int | None, str]:
        """(kind, detail, status code, hint)."""
        if isinstance(exc, _Stop):
            return exc.kind, exc.detail, None, ""
        if isinstance(exc, openai.APITimeoutError):
            return "timeout", f"no response within the {state.last_timeout:g}s timeout", None, ""
        if isinstance(exc, openai.APIConnectionError):
            return "connection", state.last_failure or "connection failed", None, ""
        if isinstance(exc, openai.APIStatusError):
            code, message = exc.status_code, self.snippet(_server_message(exc), _MAX_SERVER_MESSAGE)
            retries = (
                state.last_failure.split("; ", 1)[1]
                if "Retry-After" in state.last_failure
                else f"gave up after {self.max_retries} retries"
            )
            if code == 429 and _error_code(exc) == _QUOTA_CODE:
                return "quota", f"HTTP 429 insufficient_quota: {message}", code, ""
            if code == 429:
                return "rate_limit", f"HTTP 429 rate limited: {message}", code, retries
            if code in (408, 409) or code >= 500:
                return "server", f"HTTP {code}: {message}", code, retries
            if code in (401, 403):
                return "auth", f"HTTP {code}: {message}", code, ""
            return "client", f"HTTP {code}: {message}", code, ""
        return "connection", f"{type(exc).__name__}: {exc}", None, ""

    def _error(
        self, req: ChatRequest, kind: ErrorKind, detail: str, code: int | None, hint: str, attempts: int
    ) -> ChatError:
        fix = "; ".join(part for part in (hint, self._fix(kind)) if part)
        text = (
            f"chat completion at {self.address} (model {req.model!r}) failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}: {detail}" + (f"; {fix}" if fix else "")
        )
        return ChatError(
            self.redact(text),
            kind=kind,
            attempts=attempts,
            address=self.address,
            status_code=code,
            retryable=kind in ("rate_limit", "server", "timeout", "connection"),
        )

    def _fix(self, kind: ErrorKind) -> str:
        """What to do about a failure, naming the variable that configures the endpoint."""
        prefix = self.config.prefix or "RAG_GENERATOR"
        url_var = self.config.base_url_var or f"{prefix}_BASE_URL"
        key_var = self.config.api_key_var or f"{prefix}_API_KEY"
        fixes: dict[str, str] = {
            "quota": "the account has no quota left and retrying cannot help: add credit or use another key "
            f"or endpoint ({key_var}, {url_var})",
            "refused": f"nothing is listening there: start the server or fix {url_var}",
            "auth": f"the API key was rejected: check {key_var}",
            "client": f"the request was rejected: check the model name ({prefix}_MODEL) and parameters",
            "timeout": f"raise {self.timeout_setting} (now {self.timeout:g}s per attempt) or check the server",
            "time_budget": f"the call's total time budget ({self.total_budget_s:g}s) ran out: raise "
            f"{self.timeout_setting} or check why the endpoint is slow",
            "rate_limit": f"still rate limited: lower concurrency or raise {self.retries_setting}",
            "server": f"the server keeps failing: try again later or raise {self.retries_setting}",
            "connection": f"check the network path to {self.address} ({url_var})",
        }
        return fixes.get(kind, "")

    # --- parsing ------------------------------------------------------------------------
    def _parse(self, req: ChatRequest, raw: Any, attempts: int, seconds: float) -> tuple[ChatResponse | None, str]:
        text = raw.text
        try:
            data = json.loads(text)
        except ValueError:
            return None, f"body is not JSON: {self.snippet(text, _MAX_BODY_QUOTE)!r}"
        if not isinstance(data, dict):
            return None, f"body is JSON {type(data).__name__}, expected an object"
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            return None, "no choices in the answer"
        first: dict[str, Any] = choices[0] if isinstance(choices[0], dict) else {}
        raw_message = first.get("message")
        message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
        content = message.get("content")
        finish = first.get("finish_reason")
        if not isinstance(content, str):
            return None, f"the first choice has no text content (finish_reason={finish!r})"
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        return ChatResponse(
            content=self.redact(content),
            usage=Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))),
            model=self.redact(str(data.get("model") or req.model)),
            finish_reason=self.redact(str(finish)) if finish is not None else None,
            attempts=attempts,
            seconds=seconds,
        ), ""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _chain(exc: BaseException) -> list[BaseException]:
    seen: set[int] = set()
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _root_cause(exc: BaseException) -> str:
    last = _chain(exc)[-1]
    return f"{type(last).__name__}: {last}"


def _is_refused(exc: BaseException) -> bool:
    return any(isinstance(c, ConnectionRefusedError) or "connection refused" in str(c).lower() for c in _chain(exc))


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                pass
    try:
        when = email.utils.parsedate_to_datetime(headers.get("retry-after") or "")
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_body(exc: openai.APIStatusError) -> Mapping[str, Any]:
    body = exc.body
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        return body["error"]
    return body if isinstance(body, Mapping) else {}


def _error_code(exc: openai.APIStatusError) -> str | None:
    """The error's ``code``; ``insufficient_quota`` wins wherever a provider put it."""
    err = _error_body(exc)
    candidates = (err.get("code"), err.get("type"), getattr(exc, "code", None))
    if _QUOTA_CODE in candidates:
        return _QUOTA_CODE
    code = err.get("code")
    return code if isinstance(code, str) else None


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's whole error text (uncut: :meth:`ChatClient.snippet` redacts, then cuts)."""
    msg = _error_body(exc).get("message")
    return msg if isinstance(msg, str) and msg else str(exc)
