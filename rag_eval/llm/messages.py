"""What goes into and comes out of one chat call: a frozen :class:`ChatRequest` (whose
:meth:`~ChatRequest.body` a cache keys on), a :class:`ChatResponse`, or a :class:`ChatError`
whose ``kind`` says why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rag_eval.core.errors import ServiceError

ErrorKind = Literal[
    "rate_limit",  # 429 still there after the retries
    "quota",  # 429 insufficient_quota: waiting never helps
    "timeout",  # no answer within the per-attempt timeout, every attempt
    "connection",  # dropped / reset connections
    "refused",  # nothing listens at the address
    "server",  # 5xx, 408, 409 after the retries
    "client",  # other 4xx: bad model name, bad parameters
    "auth",  # 401 / 403
    "format",  # the server refused the response_format (any status naming it)
    "malformed",  # HTTP 200 that is not a chat completion with text
    "time_budget",  # the call's total time budget ran out after it started
    "breaker",  # the endpoint failed N times in a row: no call was sent
]
# Failures that say the endpoint is unreachable or dead: they feed the circuit breaker.
TRANSPORT_KINDS: frozenset[str] = frozenset({"timeout", "connection", "refused", "server", "time_budget"})


@dataclass(frozen=True)
class Usage:
    """Tokens of one call; ``reported`` is False when the server sent no ``usage``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reported: bool = True

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        """Tokens of two attempts; reported when either was."""
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.reported or other.reported,
        )


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion call, fully described, so it can be cached and replayed.

    ``messages`` are copied (a caller mutating its list cannot change a keyed request);
    ``extra`` is merged into the JSON body verbatim (``seed``, vendor fields).
    """

    model: str
    messages: Sequence[Mapping[str, str]]
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("ChatRequest.model is empty; set the model name (e.g. RAG_JUDGE_MODEL)")
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


@dataclass(frozen=True)
class ChatResponse:
    """The first choice's text (already redacted) plus what accounting needs.

    ``rejected`` is set when the caller's ``accept`` check refused the text on the last
    attempt: the reply is returned so that it can be repaired, and must not be cached.
    ``usage`` sums every attempt of the call; ``requests`` counts the attempts that
    reached the server (``attempts`` also counts one refused at the door).
    """

    content: str
    usage: Usage
    model: str
    finish_reason: str | None
    attempts: int
    seconds: float
    rejected: str = ""
    requests: int = 0


class ChatError(ServiceError):
    """A chat call failed (message redacted, naming the setting that applies). ``kind``
    says why, ``attempts`` how many were made; ``requests`` and ``usage`` are what the
    failed call spent (attempts that reached the server)."""

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        attempts: int,
        status_code: int | None = None,
        requests: int = 0,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.attempts, self.status_code, self.requests = attempts, status_code, requests
        self.usage = usage or Usage(0, 0, reported=False)
