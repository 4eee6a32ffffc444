"""What a failed chat call says: one :class:`ChatError` with a ``kind`` and the fix.

An openai SDK exception becomes a ChatError whose ``kind`` says why (the SDK has already
retried what it retries) and whose message names the variable that fixes it
(``RAG_GENERATOR_BASE_URL``, ``..._API_KEY``, ``..._TIMEOUT``, ...). A server's error text
is quoted redacted first, then cut (``Redactor.snippet``): servers echo the key back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import openai

from rag_app.errors import ServiceError

if TYPE_CHECKING:
    from rag_app.llm import ChatClient

ErrorKind = Literal["rate_limit", "quota", "timeout", "connection", "refused", "server", "client", "auth", "malformed"]
QUOTA_CODE = "insufficient_quota"
_MAX_SERVER_MESSAGE = 300  # server error text quoted in our messages is cut to this length (after redaction)


class ChatError(ServiceError):
    """A chat call failed; ``kind`` says why, ``status_code`` is the last HTTP status (if any)."""

    def __init__(self, message: str, *, kind: ErrorKind, address: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.address = address
        self.status_code = status_code


def malformed(detail: str, client: ChatClient, model: str) -> ChatError:
    """An HTTP 200 that is not a chat completion with text."""
    hint = "the endpoint is not OpenAI-compatible or a proxy altered the answer"
    return _error(client, model, "malformed", f"malformed response: {detail}; {hint}", 200)


def sdk_error(exc: openai.APIError, client: ChatClient, model: str) -> ChatError:
    """The ChatError for what the SDK raised after its retries."""
    if isinstance(exc, openai.APITimeoutError):
        return _error(client, model, "timeout", f"no response within the {client.timeout:g}s timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause = f"{type(exc.__cause__).__name__}: {exc.__cause__}" if exc.__cause__ else exc.message
        kind: ErrorKind = "refused" if "refused" in cause.lower() else "connection"
        return _error(client, model, kind, f"connection failed ({cause})")
    if not isinstance(exc, openai.APIStatusError):  # APIResponseValidationError: a 200 of the wrong shape
        return malformed(type(exc).__name__, client, model)
    code = exc.status_code
    # The SDK passes the body's "error" object as ``body`` and its code and type as attributes.
    said = exc.body.get("message") if isinstance(exc.body, Mapping) else None
    text = client.snippet(said if isinstance(said, str) and said else exc.message, _MAX_SERVER_MESSAGE)
    if code == 429 and QUOTA_CODE in (exc.code, exc.type):
        return _error(client, model, "quota", f"HTTP 429 {QUOTA_CODE}: {text}", code)
    if code == 429:
        kind = "rate_limit"
    elif code in (408, 409) or code >= 500:
        kind = "server"
    else:
        kind = "auth" if code in (401, 403) else "client"
    return _error(client, model, kind, f"HTTP {code}: {text}", code)


def _error(client: ChatClient, model: str, kind: ErrorKind, detail: str, code: int | None = None) -> ChatError:
    fix = _fix(client, kind)
    text = f"chat completion at {client.address} (model {model!r}) failed: {detail}" + (f"; {fix}" if fix else "")
    return ChatError(client.redact(text), kind=kind, address=client.address, status_code=code)


def _fix(client: ChatClient, kind: ErrorKind) -> str:
    """What to do about a failure, naming the variable that configures the endpoint."""
    config = client.config
    prefix = config.prefix or "RAG_GENERATOR"
    url_var = config.base_url_var or f"{prefix}_BASE_URL"
    key_var = config.api_key_var or f"{prefix}_API_KEY"
    retried = f"after {client.max_retries} retries"
    fixes: dict[ErrorKind, str] = {
        "quota": "the account has no quota left and retrying cannot help: add credit or use another key "
        f"or endpoint ({key_var}, {url_var})",
        "refused": f"nothing is listening there ({retried}): start the server or fix {url_var}",
        "auth": f"the API key was rejected: check {key_var}",
        "client": f"the request was rejected: check the model name ({prefix}_MODEL) and parameters",
        "timeout": f"{retried}: raise {client.timeout_setting} (now {client.timeout:g}s per attempt) "
        "or check the server",
        "rate_limit": f"still rate limited {retried}: lower concurrency or raise {client.retries_setting}",
        "server": f"the server kept failing {retried}: try again later or raise {client.retries_setting}",
        "connection": f"{retried}: check the network path to {client.address} ({url_var})",
    }
    return fixes.get(kind, "")
