"""rag_app's chat model client: the plain openai SDK, the way a user's own RAG system calls it.

::

    client = openai.OpenAI(base_url=..., api_key=..., timeout=..., max_retries=...)
    completion = client.chat.completions.create(model=..., messages=..., ...)

Retries, backoff and ``Retry-After`` are the SDK's own: it retries 408, 409, 429, 5xx,
timeouts and failed connections ``max_retries`` times with exponential backoff and
jitter. ``timeout`` bounds each attempt. The one thing added to the SDK's retry rule: a
429 whose body says ``insufficient_quota`` is not retried (waiting cannot bring credit
back; the SDK would retry it like a rate limit), through an httpx response hook that
sets the ``x-should-retry: false`` header the SDK obeys.

What is rag_app's own: a reply without a usable first choice is an error (``malformed``),
never an empty answer, and every failure is a :class:`ChatError` whose ``kind`` says why
and whose message names the variable to fix (``rag_app.llm_errors``). The API key never
appears in a message, a ``repr`` or a returned answer, even when the server echoes it:
every text built or returned here passes :meth:`ChatClient.redact` (``rag_app.redact``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from rag_app.env import EndpointConfig
from rag_app.llm_errors import QUOTA_CODE, ChatError, malformed, sdk_error
from rag_app.redact import Redactor
from rag_app.types import Usage

__all__ = ["ChatClient", "ChatError", "ChatResponse"]

_MAX_BODY_QUOTE = 120  # a non-JSON 200 body is quoted up to this length (after redaction)


@dataclass(frozen=True)
class ChatResponse:
    """The text of the first choice (redacted) and what a report needs to know."""

    content: str
    usage: Usage
    model: str
    finish_reason: str | None


class _HttpResponse(Protocol):
    """What the hook reads of a response: httpx's, or httpx2's in openai 3.x."""

    status_code: int
    headers: MutableMapping[str, str]
    text: str

    def read(self) -> bytes: ...


def _quota_is_final(response: _HttpResponse) -> None:
    """httpx response hook: tell the SDK not to retry a 429 ``insufficient_quota``."""
    if response.status_code == 429:
        response.read()
        if QUOTA_CODE in response.text:
            response.headers["x-should-retry"] = "false"


class ChatClient:
    """``POST {base_url}/chat/completions`` through the openai SDK (module doc).

    ``timeout`` bounds one attempt; ``max_retries`` counts retries, so at most
    ``max_retries + 1`` requests are sent. ``timeout_setting`` / ``retries_setting``
    name the settings in messages (e.g. ``RAG_GENERATOR_TIMEOUT``).
    """

    def __init__(
        self,
        config: EndpointConfig,
        timeout: float = 30.0,
        max_retries: int = 3,
        *,
        timeout_setting: str = "RAG_GENERATOR_TIMEOUT",
        retries_setting: str = "RAG_GENERATOR_MAX_RETRIES",
    ) -> None:
        if timeout <= 0 or max_retries < 0:
            raise ValueError(f"timeout ({timeout}) must be positive and max_retries ({max_retries}) >= 0")
        # ConfigError naming the missing variables, before any request. The model is not
        # required here: it travels with each call.
        config.require("base_url", "api_key")
        self.config = config
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.timeout_setting, self.retries_setting = timeout_setting, retries_setting
        self._redactor = Redactor([config.api_key])
        self._sdk = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=openai.DefaultHttpxClient(event_hooks={"response": [_quota_is_final]}),
        )

    @property
    def address(self) -> str:
        return str(self.config.address)

    def __repr__(self) -> str:  # never the key
        return (
            f"ChatClient(address={self.address!r}, model={self.config.model!r}, timeout={self.timeout}, "
            f"max_retries={self.max_retries})"
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

    def complete(
        self,
        model: str,
        messages: Sequence[Mapping[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """One chat completion; the SDK retries what is worth retrying; else :class:`ChatError`.

        ``extra_body`` is merged into the JSON body (``seed``, vendor-specific fields).
        """
        if not model:
            raise ValueError("no model name: set RAG_GENERATOR_MODEL")
        limit: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens is not None else {}
        try:
            completion = self._sdk.chat.completions.create(
                model=model,
                messages=cast("list[ChatCompletionMessageParam]", [dict(m) for m in messages]),
                temperature=temperature,
                extra_body=dict(extra_body) if extra_body else None,
                **limit,
            )
        except openai.APIError as exc:
            raise sdk_error(exc, self, model) from None
        except json.JSONDecodeError as exc:  # a 200 whose body is not JSON: the SDK's parse fails
            body = self.snippet(exc.doc, _MAX_BODY_QUOTE)
            raise malformed(f"body is not JSON: {body!r}", self, model) from None
        return self._response(completion, model)

    def _response(self, completion: object, model: str) -> ChatResponse:
        """The first choice's text, or a ``malformed`` ChatError saying what is missing."""
        if not isinstance(completion, ChatCompletion):
            # The SDK returns a 200's JSON as is when it is not an object it can parse.
            raise malformed(f"body is JSON {type(completion).__name__}, expected an object", self, model)
        if not completion.choices:
            raise malformed("no choices in the answer", self, model)
        # The SDK builds the reply without validating it: any field may be absent or of another type.
        choice = completion.choices[0]
        content = getattr(getattr(choice, "message", None), "content", None)
        finish = getattr(choice, "finish_reason", None)
        if not isinstance(content, str):
            raise malformed(f"the first choice has no text content (finish_reason={finish!r})", self, model)
        usage = completion.usage
        return ChatResponse(
            content=self.redact(content),
            usage=Usage(_int(getattr(usage, "prompt_tokens", 0)), _int(getattr(usage, "completion_tokens", 0))),
            model=self.redact(completion.model or model),
            finish_reason=self.redact(str(finish)) if finish is not None else None,
        )


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
