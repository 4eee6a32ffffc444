"""The one client for OpenAI-compatible chat endpoints inside rag_eval: :class:`LLMClient`.

Retries and per-attempt timeouts are the openai SDK's (its ``AsyncOpenAI``, on an event
loop of the calling thread: the wall-clock bound is ``asyncio.timeout``);
:mod:`rag_eval.llm.guard` keeps them inside the call's time budget, the breaker and the
shared rate limiter. A 200 reply that is no chat completion with text (invalid JSON,
empty ``choices``, no or blank content) is asked again within the same attempt count,
then ``malformed``. A reply with text that the caller's ``accept`` rejects is never
asked again identically (the server at temperature 0, or a cache in front of it, gives
the same text): it is returned at once with :attr:`ChatResponse.rejected` set, for the
caller's repair, and never cached. Every text that leaves the client went through the
run's redactor (the endpoint's key is always one of its secrets).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import random as _random
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import httpx
import openai

from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.guard import CallState, Guard, Stop
from rag_eval.llm.messages import TRANSPORT_KINDS, ChatError, ChatRequest, ChatResponse, ErrorKind, Usage
from rag_eval.llm.policy import CallPolicy, CircuitBreaker, backoff, status_kind
from rag_eval.util.redact import Redactor

log = logging.getLogger(__name__)
Accept = Callable[[str], "str | None"]  # content -> why it is not acceptable, or None
_MAX_QUOTED = 300  # characters of a server's error text quoted in a message
_SDK_PARAMS = ("model", "messages", "temperature", "max_tokens", "response_format")


@dataclass(frozen=True)
class Reply:
    """A parsed completion (or why it is not one)."""

    response: ChatResponse | None
    problem: str = ""
    usage: Usage = Usage(0, 0, reported=False)


class LLMClient:
    """``POST {base_url}/chat/completions`` under a :class:`CallPolicy` (module doc)."""

    def __init__(
        self,
        endpoint: Endpoint,
        policy: CallPolicy | None = None,
        *,
        redactor: Redactor | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        endpoint.require()
        self.endpoint = endpoint
        self.policy = policy or CallPolicy()
        self.breaker = CircuitBreaker(
            self.policy.breaker_after,
            name=f"the {endpoint.prefix} endpoint at {endpoint.address}",
            setting=self.policy.breaker_setting,
        )
        own = Redactor([endpoint.api_key])
        self.redactor = own.merged(redactor) if redactor is not None else own
        self._sleep, self._random = sleep, random
        self.guard = Guard(self.policy, self.breaker)
        self._no_usage_warned = threading.Event()
        self._local = threading.local()  # each thread's event loop and SDK client (guard module doc)
        self._opened: list[tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI]] = []
        self._aside: ThreadPoolExecutor | None = None  # for calls from inside a running loop
        self._lock = threading.Lock()

    def _sdk(self) -> tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI]:
        """This thread's loop and SDK client, made on first use (connections stay with their loop)."""
        mine: tuple[asyncio.AbstractEventLoop, openai.AsyncOpenAI] | None = getattr(self._local, "sdk", None)
        if mine is None:
            sdk = openai.AsyncOpenAI(
                api_key=self.endpoint.api_key,
                base_url=self.endpoint.base_url,
                max_retries=self.policy.max_retries,
                timeout=self.policy.timeout,
                # An httpx (not httpx2) client: the SDK accepts both, and the guard is one httpx
                # transport for every SDK version the project allows (openai>=2.31: from 2.31 the
                # SDK lets the guard's Stop through its retry loop instead of retrying it).
                http_client=httpx.AsyncClient(transport=self.guard.transport()),  # type: ignore[arg-type]
            )
            mine = self._local.sdk = (asyncio.new_event_loop(), sdk)
            with self._lock:
                self._opened.append(mine)
        return mine

    @property
    def address(self) -> str:
        return self.endpoint.address

    def __repr__(self) -> str:  # never the key
        p = self.policy
        return (
            f"LLMClient(address={self.address!r}, model={self.endpoint.model!r}, timeout={p.timeout:g}, "
            f"max_retries={p.max_retries}, budget={p.budget:g}s, breaker={p.breaker_after})"
        )

    def share_endpoint(self, other: LLMClient) -> bool:
        """Send through ``other``'s breaker and rate limiter when both clients talk to the
        same server (:meth:`Endpoint.same_server`): a 429 to either holds
        both, and failures of either count toward one breaker. False, and nothing shared,
        for another server. ``other``'s concurrency and breaker threshold then apply."""
        if not self.endpoint.same_server(other.endpoint):
            return False
        self.breaker = other.breaker
        self.guard.join(other.guard)
        mine, theirs = self.policy, other.policy
        if (mine.concurrency, mine.breaker_after) != (theirs.concurrency, theirs.breaker_after):
            log.warning(
                "%s and %s reach the same endpoint at %s: its %d request slots and breaker after %d failures "
                "(%s's) serve both",
                self.endpoint.prefix,
                other.endpoint.prefix,
                self.address,
                theirs.concurrency,
                theirs.breaker_after,
                other.endpoint.prefix,
            )
        return True

    def close(self) -> None:
        """Close every thread's SDK client and loop (from one thread, once the calls are over)."""
        with self._lock:
            opened, self._opened, aside, self._aside = self._opened, [], self._aside, None
        if aside is not None:
            aside.shutdown()
        for loop, sdk in opened:
            loop.run_until_complete(sdk.close())
            loop.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the call -----------------------------------------------------------------------
    def complete(self, req: ChatRequest, *, accept: Accept | None = None) -> ChatResponse:
        """Send ``req`` (module doc for what is retried); raise :class:`ChatError`.

        The response's ``usage`` and ``requests`` cover every attempt of the call that
        reached the server (a retried reply's tokens were paid for too)."""
        if self.breaker.open:
            raise self._error(req, "breaker", self.breaker.message(), 0)
        start = time.monotonic()
        spent = Usage(0, 0, reported=False)
        with self.guard.call() as state:
            while True:
                raw = self._attempt(req, state, spent)
                reply = self._parse(req, raw)
                spent = spent + reply.usage
                done = self._verdict(req, reply, accept, state, int(raw.status_code), spent)
                if isinstance(done, ChatResponse):
                    return replace(
                        done,
                        usage=spent,
                        attempts=state.attempts,
                        requests=state.reached,
                        seconds=time.monotonic() - start,
                    )
                delay = backoff(state.attempts, self._random)
                log.warning(
                    "chat reply from %s was not usable (%s), attempt %d of %d; asking again in %.2fs",
                    self.address,
                    self.redactor.snippet(done, 200),
                    state.attempts,
                    self.policy.attempts,
                    delay,
                )
                self._sleep(delay)

    def _attempt(self, req: ChatRequest, state: CallState, spent: Usage) -> Any:
        """One pass through the SDK (its own retries included), or the call's ChatError."""
        try:
            return self._send(req, max(0, self.policy.max_retries - state.attempts))
        except openai.OpenAIError as exc:
            kind, detail, code = self._classify(exc, state, req)
            # transport failures were counted per attempt (guard); a refusal to send
            # (breaker, time budget) is no sign of life either: only a reply resets it
            if kind not in TRANSPORT_KINDS and kind not in ("breaker", "time_budget"):
                self.breaker.record(transport_failure=False)
            raise self._error(
                req, kind, detail, state.attempts, code, hint=state.no_retry, requests=state.reached, usage=spent
            ) from None

    def _verdict(
        self, req: ChatRequest, reply: Reply, accept: Accept | None, state: CallState, code: int, spent: Usage
    ) -> ChatResponse | str:
        """The response to return, why to ask again, or the call's ChatError (malformed)."""
        if reply.response is not None:
            # A reply with text is the server's answer: asking the identical request again
            # gets the same text at temperature 0 (or from any cache in front of it), so a
            # reply the caller's check rejects is returned at once, for the caller to repair.
            self.breaker.record(transport_failure=False)
            problem = accept(reply.response.content) if accept is not None else None
            return replace(reply.response, rejected=problem) if problem else reply.response
        problem = reply.problem
        if state.attempts <= self.policy.max_retries:
            return problem
        # A whole call of replies that are no chat completion: the endpoint is broken as
        # surely as one that times out, so it counts toward the breaker.
        detail = f"malformed response: {problem}"
        self.breaker.record(transport_failure=True, detail=detail)
        raise self._error(req, "malformed", detail, state.attempts, code, requests=state.reached, usage=spent)

    def _send(self, req: ChatRequest, max_retries: int) -> Any:
        body = req.body()  # the one description of the request; the SDK gets it in its own terms
        known = {name: body.pop(name) for name in _SDK_PARAMS if name in body}
        # The raw response: a malformed body becomes our "malformed" instead of whatever
        # this SDK version raises for it.
        return self._on_loop(
            lambda sdk: sdk.with_options(max_retries=max_retries).chat.completions.with_raw_response.create(
                **known, extra_body=body or None
            )
        )

    def _on_loop(self, call: Callable[[openai.AsyncOpenAI], Awaitable[Any]]) -> Any:
        """``call`` run on this thread's loop, in a copy of this context (the guard's
        CallState included); from inside a running loop (an async framework calling back
        synchronously), on a thread of the client's own, whose loop blocks nobody."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loop, sdk = self._sdk()
            return loop.run_until_complete(call(sdk))
        with self._lock:
            if self._aside is None:
                self._aside = ThreadPoolExecutor(self.policy.concurrency, thread_name_prefix="rag-eval-llm")
        return self._aside.submit(contextvars.copy_context().run, self._on_loop, call).result()

    # --- reading ------------------------------------------------------------------------
    def _parse(self, req: ChatRequest, raw: Any) -> Reply:
        text = raw.text
        try:
            data = json.loads(text)
        except ValueError:
            return Reply(None, f"body is not JSON: {self.redactor.snippet(text, 120)!r}")
        if not isinstance(data, dict):
            return Reply(None, f"body is JSON {type(data).__name__}, expected an object")
        usage = self._usage(data.get("usage"))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            return Reply(None, "no choices in the answer (HTTP 200 with an empty 'choices' list)", usage)
        first = choices[0] if isinstance(choices[0], dict) else {}
        message = first.get("message") if isinstance(first.get("message"), dict) else {}
        content = message.get("content") if isinstance(message, dict) else None
        finish = first.get("finish_reason")
        # Blank text is no answer (a transport-level fault, asked again), unless the reply
        # was cut at max_tokens: the same budget gives the same cut, so the caller decides.
        if not isinstance(content, str) or (not content.strip() and finish != "length"):
            return Reply(
                None,
                f"the first choice has no text content (finish_reason={self.redactor.snippet(repr(finish), 60)})",
                usage,
            )
        # Every field that leaves the client is redacted, not only the text: a server can
        # echo the key in ``model`` or ``finish_reason`` as well.
        model = self.redactor.text(str(data.get("model") or req.model))
        finish = self.redactor.text(str(finish)) if finish is not None else None
        return Reply(
            ChatResponse(self.redactor.text(content), usage, model, finish, attempts=0, seconds=0.0), "", usage
        )

    def _usage(self, raw: Any) -> Usage:
        usage = raw if isinstance(raw, dict) else {}
        prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        if prompt is None and completion is None:
            if not self._no_usage_warned.is_set():
                self._no_usage_warned.set()
                log.warning("the endpoint at %s reports no token usage: its calls count 0 tokens", self.address)
            return Usage(0, 0, reported=False)
        return Usage(prompt or 0, completion or 0)

    # --- failures -----------------------------------------------------------------------
    def _classify(
        self, exc: openai.OpenAIError, state: CallState, req: ChatRequest
    ) -> tuple[ErrorKind, str, int | None]:
        if isinstance(exc, Stop):
            return exc.kind, exc.detail, None  # type: ignore[return-value]
        if isinstance(exc, openai.APITimeoutError):
            return "timeout", f"no response within the {state.last_timeout:g}s timeout", None
        if isinstance(exc, openai.APIConnectionError):
            return "connection", state.last_failure or f"connection failed ({exc})", None
        if isinstance(exc, openai.APIStatusError):
            body = exc.response.text if exc.response is not None else str(exc)
            kind, _ = status_kind(exc.status_code, body, sent_format=req.response_format is not None)
            return kind, f"HTTP {exc.status_code}: {_server_message(exc, self.redactor)}", exc.status_code  # type: ignore[return-value]
        return "connection", f"{type(exc).__name__}: {exc}", None

    def _error(
        self,
        req: ChatRequest,
        kind: ErrorKind,
        detail: str,
        attempts: int,
        code: int | None = None,
        hint: str = "",
        *,
        requests: int = 0,
        usage: Usage | None = None,
    ) -> ChatError:
        """The call's error, redacted, with what to do about it (:meth:`fix`)."""
        fix = "; ".join(p for p in (hint, self.fix(kind)) if p)
        text = (
            f"chat completion at {self.address} (model {req.model!r}) failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}: {detail}" + (f"; {fix}" if fix else "")
        )
        if kind == "breaker":
            text = f"chat completion at {self.address} (model {req.model!r}) not sent: {detail}"
        return ChatError(
            self.redactor.text(text), kind=kind, attempts=attempts, status_code=code, requests=requests, usage=usage
        )

    def fix(self, kind: str) -> str:
        """What to do about a failure, naming the setting that applies."""
        p, ep = self.policy, self.endpoint
        fixes = {
            "quota": f"the account has no quota left and retrying cannot help: add credit or use another key "
            f"or endpoint ({ep.var('api_key')}, {ep.var('base_url')})",
            "refused": f"nothing is listening there: start the server or fix {ep.var('base_url')}",
            "auth": f"the API key was rejected: check {ep.var('api_key')}",
            "client": f"the request was rejected: check the model name ({ep.prefix}_MODEL) and parameters",
            "format": "the server does not accept this response_format",
            "timeout": f"raise {p.timeout_setting} (now {p.timeout:g}s per attempt) or check the server",
            "time_budget": f"the call's total time budget ({p.budget:g}s) ran out: raise {p.timeout_setting} "
            "or check why the endpoint is slow",
            "rate_limit": f"still rate limited: lower {ep.prefix}_CONCURRENCY (now {p.concurrency}) or raise "
            f"{p.retries_setting}",
            "server": f"the server keeps failing: try again later or raise {p.retries_setting}",
            "connection": f"check the network path to {self.address} ({ep.var('base_url')})",
            "malformed": "the endpoint is not OpenAI-compatible or a proxy altered the answer",
        }
        return fixes.get(kind, "")


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _server_message(exc: openai.APIStatusError, redactor: Redactor) -> str:
    """The server's error text, redacted *then* cut (``Redactor.snippet``: module doc of redact)."""
    body = exc.body
    err = body.get("error") if isinstance(body, dict) else None
    msg = err.get("message") if isinstance(err, dict) else (body.get("message") if isinstance(body, dict) else None)
    text = msg if isinstance(msg, str) and msg else (exc.response.text if exc.response is not None else str(exc))
    return redactor.snippet(str(text), _MAX_QUOTED)
