"""The one place that talks to OpenAI-compatible chat endpoints.

The generator uses it now; the evaluation judge reuses it and layers a response cache,
a spending budget and token accounting on top. So everything a caller may want to key,
count or cache is explicit: a frozen :class:`ChatRequest` in (with a stable
``cache_key``), a :class:`ChatResponse` out (content, usage, attempts, seconds).

Retries are done here, not by the SDK (``max_retries=0``), because we need control the
SDK does not give: full-jitter exponential backoff with an injectable ``sleep`` and
``random`` (so tests do not wait), ``Retry-After`` honoured but capped, a total time
budget across attempts, and a clear split between failures worth retrying and failures
that never heal by waiting:

==============================================  =====================================
retried (up to ``max_retries`` times)           not retried
==============================================  =====================================
429 rate limit, 408, 409, 5xx                   429 with code ``insufficient_quota``
timeouts, dropped / reset connections           connection refused (nothing listens)
                                                other 4xx (bad key, bad model, ...)
                                                malformed 200 responses (see below)
==============================================  =====================================

Malformed responses (invalid JSON, empty ``choices``, no text content) are *not*
retried here: the server accepted and usually billed the request, the same request is
likely to get the same answer, and the judge wants a *repair* retry with a changed
prompt at its own level. They raise :class:`ChatError` with ``kind="malformed"``.

The API key never appears in a message, a log line or a ``repr``: every message built
here passes through :meth:`ChatClient._redact`, because servers sometimes echo the key
back ("Incorrect API key provided: sk-...").
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import random as _random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

import openai

from rag_app.env import EndpointConfig
from rag_app.errors import ServiceError
from rag_app.types import Usage

log = logging.getLogger(__name__)

ErrorKind = Literal[
    "rate_limit", "quota", "timeout", "connection", "refused", "server", "client", "auth", "malformed", "budget"
]
RETRYABLE_STATUS: frozenset[int] = frozenset({408, 409, 429})  # plus every 5xx
_QUOTA_CODE = "insufficient_quota"
_MAX_SERVER_MESSAGE = 300  # server error text quoted in our messages is cut to this length


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
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
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
    again later can help: false for quota, refused connections, 4xx and malformed output.
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


@dataclass(frozen=True)
class _Failure:
    """One failed attempt, classified."""

    kind: ErrorKind
    detail: str
    retryable: bool
    status_code: int | None = None
    retry_after: float | None = None  # seconds the server asked us to wait, uncapped


class ChatClient:
    """Calls ``POST {base_url}/chat/completions`` with retries, timeouts and a total budget.

    ``timeout`` bounds one attempt; ``total_budget_s`` bounds the whole call including
    backoff sleeps (an attempt never gets more time than the budget has left, and a
    wait that would overrun the budget ends the call at once). ``max_retries`` counts
    retries, so at most ``max_retries + 1`` requests are sent.
    """

    def __init__(
        self,
        config: EndpointConfig,
        timeout: float = 30.0,
        max_retries: int = 3,
        total_budget_s: float = 120.0,
        *,
        base_delay: float = 0.5,
        max_delay: float = 8.0,
        max_retry_after: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if timeout <= 0 or total_budget_s <= 0:
            raise ValueError(f"timeout ({timeout}) and total_budget_s ({total_budget_s}) must be positive")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        # ConfigError naming the missing variables, before any request. The model is not
        # required here: it travels in each ChatRequest (a judge may use several).
        config.require("base_url", "api_key")
        self.config = config
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.total_budget_s = float(total_budget_s)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        self._random = random
        self._clock = clock
        self._key = config.api_key
        self._sdk = openai.OpenAI(
            api_key=self._key,
            base_url=config.base_url,
            max_retries=0,
            timeout=self.timeout,
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

    # --- the call -----------------------------------------------------------------------
    def complete(self, req: ChatRequest) -> ChatResponse:
        """Send ``req``; retry what is worth retrying; raise :class:`ChatError` otherwise."""
        start = self._clock()
        deadline = start + self.total_budget_s
        attempts = 0
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise self._error(
                    req, _Failure("budget", f"the total time budget of {self.total_budget_s:g}s is used up", False),
                    attempts, hint="raise the total budget or check why the endpoint is slow",
                )
            attempts += 1
            attempt_timeout = min(self.timeout, remaining)
            try:
                raw = self._send(req, attempt_timeout)
            except openai.APIError as exc:
                failure = self._classify(exc, attempt_timeout)
            else:
                return self._parse(req, raw, attempts, self._clock() - start)

            if not failure.retryable:
                raise self._error(req, failure, attempts)
            if attempts > self.max_retries:
                raise self._error(req, failure, attempts, hint=f"gave up after {self.max_retries} retries")
            delay = self._delay(attempts, failure.retry_after)
            if self._clock() + delay >= deadline:
                raise self._error(
                    req, failure, attempts,
                    hint=f"waiting {delay:.1f}s more would overrun the {self.total_budget_s:g}s budget",
                )
            log.warning(
                "chat call to %s failed (%s: %s), attempt %d of %d; retrying in %.2fs",
                self.address, failure.kind, self._redact(failure.detail), attempts, self.max_retries + 1, delay,
            )
            self._sleep(delay)

    def _send(self, req: ChatRequest, timeout: float) -> Any:
        kwargs: dict[str, Any] = {
            "model": req.model,
            "messages": [dict(m) for m in req.messages],
            "temperature": req.temperature,
            "timeout": timeout,
        }
        if req.max_tokens is not None:
            kwargs["max_tokens"] = req.max_tokens
        if req.response_format is not None:
            kwargs["response_format"] = dict(req.response_format)
        if req.extra:
            kwargs["extra_body"] = dict(req.extra)
        # The raw response lets us parse the JSON ourselves: a malformed body becomes our
        # "malformed response" error instead of whatever the SDK version happens to raise.
        return self._sdk.chat.completions.with_raw_response.create(**kwargs)

    def _delay(self, attempts: int, retry_after: float | None) -> float:
        """``Retry-After`` when the server gave one (capped), else full-jitter backoff."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempts - 1)))
        return self._random() * ceiling

    # --- classification ---------------------------------------------------------------
    def _classify(self, exc: openai.APIError, timeout: float) -> _Failure:
        if isinstance(exc, openai.APITimeoutError):
            return _Failure("timeout", f"no response within the {timeout:g}s timeout", True)
        if isinstance(exc, openai.APIConnectionError):
            cause = _root_cause(exc)
            if _is_refused(exc):
                return _Failure("refused", f"connection refused ({cause})", False)
            return _Failure("connection", f"connection failed ({cause})", True)
        if isinstance(exc, openai.APIStatusError):
            code = exc.status_code
            message = _server_message(exc)
            if code == 429 and _error_code(exc) == _QUOTA_CODE:
                return _Failure("quota", f"HTTP 429 insufficient_quota: {message}", False, code)
            retry_after = _retry_after(exc.response.headers)
            if code == 429:
                return _Failure("rate_limit", f"HTTP 429 rate limited: {message}", True, code, retry_after)
            if code in RETRYABLE_STATUS or code >= 500:
                return _Failure("server", f"HTTP {code}: {message}", True, code, retry_after)
            if code in (401, 403):
                return _Failure("auth", f"HTTP {code}: {message}", False, code)
            return _Failure("client", f"HTTP {code}: {message}", False, code)
        return _Failure("connection", f"{type(exc).__name__}: {exc}", True)

    def _error(self, req: ChatRequest, failure: _Failure, attempts: int, hint: str = "") -> ChatError:
        fix = "; ".join(part for part in (hint, self._fix(failure.kind)) if part)
        text = (
            f"chat completion at {self.address} (model {req.model!r}) failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}: {failure.detail}" + (f"; {fix}" if fix else "")
        )
        return ChatError(
            self._redact(text),
            kind=failure.kind,
            attempts=attempts,
            address=self.address,
            status_code=failure.status_code,
            retryable=failure.retryable,
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
            "timeout": "raise the timeout (request_timeout / RAG_APP_REQUEST_TIMEOUT) or check the server",
            "rate_limit": "still rate limited: lower concurrency or allow more retries",
            "server": "the server keeps failing: try again later",
            "connection": f"check the network path to {self.address} ({url_var})",
        }
        return fixes.get(kind, "")

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[redacted]") if len(self._key) >= 4 else text

    # --- parsing ------------------------------------------------------------------------
    def _parse(self, req: ChatRequest, raw: Any, attempts: int, seconds: float) -> ChatResponse:
        def malformed(why: str) -> ChatError:
            return self._error(
                req, _Failure("malformed", f"malformed response: {why}", False, int(raw.status_code)), attempts,
                hint="the endpoint is not OpenAI-compatible or a proxy altered the answer",
            )

        text = raw.text
        try:
            data = json.loads(text)
        except ValueError:
            raise malformed(f"body is not JSON: {text[:120]!r}") from None
        if not isinstance(data, dict):
            raise malformed(f"body is JSON {type(data).__name__}, expected an object")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise malformed("no choices in the answer")
        first: dict[str, Any] = choices[0] if isinstance(choices[0], dict) else {}
        raw_message = first.get("message")
        message: dict[str, Any] = raw_message if isinstance(raw_message, dict) else {}
        content = message.get("content")
        finish = first.get("finish_reason")
        if not isinstance(content, str):
            raise malformed(f"the first choice has no text content (finish_reason={finish!r})")
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        return ChatResponse(
            content=content,
            usage=Usage(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))),
            model=str(data.get("model") or req.model),
            finish_reason=str(finish) if finish is not None else None,
            attempts=attempts,
            seconds=seconds,
        )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _root_cause(exc: BaseException) -> str:
    seen: set[int] = set()
    cur: BaseException | None = exc
    last = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        last = cur
        cur = cur.__cause__ or cur.__context__
    return f"{type(last).__name__}: {last}"


def _is_refused(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError) or "connection refused" in str(cur).lower():
            return True
        cur = cur.__cause__ or cur.__context__
    return False


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
    msg = _error_body(exc).get("message")
    text = msg if isinstance(msg, str) and msg else str(exc)
    return text[:_MAX_SERVER_MESSAGE]


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
