"""A RAG service over HTTP as a system under test.

One request per ``retrieve`` (and per ``chat`` when a ``[chat]`` endpoint is
configured); the JSON answer is read with the configured field paths. Failures follow
the policy every endpoint of rag_eval follows (:mod:`rag_eval.llm.policy`, run by
:class:`rag_eval.adapters.http_retry.Retrier`): a timeout, a dropped connection, 408/409, 429
(honouring ``Retry-After``, capped) and 5xx are retried with exponential backoff inside
a total time budget; a refused connection, other 4xx and malformed answers are not;
after ``[http] breaker`` consecutive failed calls the service's circuit breaker opens
and the remaining cases end at once. ``[http] timeout`` (seconds per attempt) and
``max_retries`` are named in the messages. What still fails raises
:class:`ServiceCallError`, which the session records as an ``error`` outcome for that
case only: an unreachable service never crashes the run.

With ``[info]``, ``describe()`` also carries the service's own description (index
fingerprint, models, store), fetched once on first use; a failed fetch becomes
``info_error`` in the description, never a failed run: it is provenance, not a case.
"""

from __future__ import annotations

import logging
import random as _random
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from rag_eval.adapters.fields import FieldError, FieldPath, leaves, pick
from rag_eval.adapters.http_config import OWN_KEYS, Endpoint, HttpConfig, InfoSource, ListFields, render_body
from rag_eval.adapters.http_retry import CallFailed, Retrier, failure_from_exception, failure_from_status
from rag_eval.core.contract import Answer, ContractError, Retrieval, RetrievedItem, stage_timings
from rag_eval.core.dialogue import DialogueTurn, as_dialogue_turn
from rag_eval.core.errors import ServiceError
from rag_eval.llm.policy import CircuitBreaker

log = logging.getLogger(__name__)

_SNIPPET = 200
_INFO_ERROR = 300  # info_error is a hint in the results' header, not a log


class ServiceCallError(ServiceError):
    """A call to the service failed; ``kind`` says why (timeout, refused, server, ...)."""

    def __init__(self, message: str, *, kind: str, attempts: int, status_code: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.status_code = status_code


class HttpSystem:
    """The contract over HTTP; thread-safe (one pooled httpx client)."""

    def __init__(
        self,
        config: HttpConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.answers = config.chat is not None
        self.converses = config.dialogue is not None
        # a service takes concurrent calls (the run's --rag-concurrency) unless [http] concurrency caps them
        self.concurrency = config.concurrency or sys.maxsize
        self._transport = transport
        self.breaker = CircuitBreaker(
            config.policy.breaker_after,
            name=f"the HTTP service of {config.source}",
            setting=f"[http] breaker in {config.source}",
        )
        self._retrier = Retrier(
            config.policy, self.breaker, sleep=sleep, random=random, clock=clock, redact=config.redact
        )
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()
        self._info: dict[str, Any] | None = None
        self._info_lock = threading.Lock()  # held during the fetch: concurrent describe() calls wait for one request

    # --- the contract -------------------------------------------------------------------
    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        ep = self.config.retrieve
        data = self.call(ep, question, top_k)
        return self._read(ep, data, lambda: self._retrieval(ep, data))

    def chat(self, question: str, top_k: int | None = None, history: Sequence[Mapping[str, str]] = ()) -> Answer:
        ep = self.config.chat
        if ep is None:
            raise ContractError(f"{self.config.source}: no [chat] endpoint configured: this system is retrieval-only")
        data = self.call(ep, question, top_k, history)
        return self._read(ep, data, lambda: self._answer(ep, data))

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> DialogueTurn:
        """One dialogue turn: the conversation so far (and the learning context) to ``[dialogue]``."""
        ep = self.config.dialogue
        if ep is None:
            raise ContractError(
                f"{self.config.source}: no [dialogue] endpoint configured: this system holds no dialogues"
            )
        question = turns[-1]["content"] if turns else ""
        data = self.call(ep, question, None, turns, context)
        return self._read(ep, data, lambda: self._turn(ep, data))

    def describe(self) -> dict[str, Any]:
        """Where and how the service is reached, plus what it says about itself ([info])."""
        return {**self.config.describe(), **self.service_info()}

    def service_info(self) -> dict[str, Any]:
        """The ``[info]`` answer's values (empty without ``[info]``), fetched on the first
        call and kept; on failure ``{"info_error": "<redacted message>"}``."""
        info = self.config.info
        if info is None:
            return {}
        with self._info_lock:
            if self._info is None:
                self._info = self._fetch_info(info)
            return dict(self._info)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # --- the call -----------------------------------------------------------------------
    def call(
        self,
        ep: Endpoint,
        question: str,
        top_k: int | None,
        history: Sequence[Mapping[str, str]] = (),
        context: Mapping[str, Any] | None = None,
    ) -> Any:
        """Send one request (with retries) and return its parsed JSON."""
        body = render_body(ep.body, question, top_k if top_k is not None else self.config.top_k, history, context)

        def attempt(timeout: float) -> httpx.Response:
            try:
                if ep.method == "GET":
                    resp = self._http().request("GET", ep.url, params=body, timeout=timeout)
                else:
                    resp = self._http().request(ep.method, ep.url, json=body, timeout=timeout)
            except httpx.HTTPError as exc:
                raise failure_from_exception(exc, timeout) from None
            code = resp.status_code
            if 200 <= code < 300 or code in ep.accept_status:
                return resp
            raise failure_from_status(code, resp.text, resp.headers, f"HTTP {code}: {self._snippet(resp.text)}")

        try:
            resp, attempts = self._retrier.run(attempt, f"{ep.name} at {ep.display_url}")
        except CallFailed as exc:
            f = exc.failure
            raise self._error(ep, f.kind, f.detail, exc.attempts, f.status_code, hint=exc.hint) from None
        return self._json(ep, resp, attempts)

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json", **self.config.headers}
                self._client = httpx.Client(headers=headers, transport=self._transport, follow_redirects=False)
            return self._client

    def _json(self, ep: Endpoint, resp: httpx.Response, attempts: int) -> Any:
        try:
            return resp.json()
        except ValueError:
            raise self._error(
                ep,
                "malformed",
                f"HTTP {resp.status_code} with a body that is not JSON: {self._snippet(resp.text)!r}",
                attempts,
                resp.status_code,
            ) from None

    def _error(
        self, ep: Endpoint, kind: str, detail: str, attempts: int, code: int | None = None, hint: str = ""
    ) -> ServiceCallError:
        if kind == "breaker":
            return ServiceCallError(
                self.config.redact(f"{ep.name} at {ep.display_url} not sent: {detail}"), kind=kind, attempts=0
            )
        fix = "; ".join(p for p in (hint, _FIXES.get(kind, "").format(source=self.config.source)) if p)
        text = (
            f"{ep.name} at {ep.display_url} failed after {attempts} attempt{'s' if attempts != 1 else ''} "
            f"[{kind}]: {detail}" + (f"; {fix}" if fix else "")
        )
        return ServiceCallError(self.config.redact(text), kind=kind, attempts=attempts, status_code=code)

    def _fetch_info(self, info: InfoSource) -> dict[str, Any]:
        ep = info.endpoint
        try:
            values, problems = read_info(info, self.call(ep, "", None))
        except ServiceCallError as exc:  # names the url, the kind and the fix already
            return self._info_error(str(exc))
        except Exception as exc:  # noqa: BLE001 - provenance only: the cases must run whatever happens here
            return self._info_error(f"info at {ep.display_url}: {type(exc).__name__}: {exc}")
        out = {k: self.config.redact(v) if isinstance(v, str) else v for k, v in values.items()}
        if problems:
            where = f"info at {ep.display_url}"
            out.update(self._info_error(f"{where}: {'; '.join(problems)} (fix [info] in {self.config.source})"))
        return out

    def _snippet(self, text: str, limit: int = _SNIPPET) -> str:
        """The first ``limit`` characters of a service's text, redacted *before* the cut
        (cut first, a secret would survive as its prefix)."""
        return _cut(self.config.redact(text), limit)

    def _info_error(self, message: str) -> dict[str, Any]:
        text = self._snippet(message, _INFO_ERROR)
        log.warning("%s; the run goes on without the service's description", text)
        return {"info_error": text}

    # --- reading the answer -------------------------------------------------------------
    def _read(self, ep: Endpoint, data: Any, build: Callable[[], Any]) -> Any:
        try:
            return build()
        except (FieldError, ContractError) as exc:
            raise ContractError(
                self.config.redact(
                    f"{ep.name} at {ep.display_url}: {exc}; the answer was {self._snippet(repr(data))} "
                    f"(fix the field paths in {self.config.source})"
                )
            ) from None

    def _retrieval(self, ep: Endpoint, data: Any) -> Retrieval:
        assert ep.items is not None
        items = read_items(ep.items, data)
        return Retrieval(
            items=items,
            stages=read_stages(ep, data, items),
            degraded=bool(_scalar(ep, "degraded", data) or False),
            degradation_reason=_text(_scalar(ep, "degradation_reason", data)),
            stage_ms=stage_timings(_scalar(ep, "stage_ms", data), f"field {_path_text(ep, 'stage_ms')}"),
        )

    def _answer(self, ep: Endpoint, data: Any) -> Answer:
        answer = _scalar(ep, "answer", data)
        if not isinstance(answer, str):
            raise ContractError(f"field {ep.scalars['answer'].text!r} is {type(answer).__name__}, expected text")
        context = read_items(ep.items, data) if ep.items else ()
        return Answer(
            answer=answer,
            sources=read_items(ep.sources, data) if ep.sources else (),
            context=context,
            refused=bool(_scalar(ep, "refused", data) or False),
            degraded=bool(_scalar(ep, "degraded", data) or False),
            degradation_reason=_text(_scalar(ep, "degradation_reason", data)),
            retrieval=Retrieval(context, read_stages(ep, data, context)) if ep.stages else None,
            generator=_text(_scalar(ep, "generator", data)) or f"http:{ep.display_url}",
            stage_ms=stage_timings(_scalar(ep, "stage_ms", data), f"field {_path_text(ep, 'stage_ms')}"),
        )

    def _turn(self, ep: Endpoint, data: Any) -> DialogueTurn:
        raw = {key: path.get(data) for key, path in ep.scalars.items()}
        items = read_items(ep.items, data) if ep.items is not None else ()
        # an optional path ("?reply.retrieval.items[].id") gives no items on a turn without retrieval (a
        # clarifying question); an answer turn keeps its (possibly empty) list, which is then judged
        if ep.items is not None and (items or raw.get("action") == "answer"):
            raw["retrieval"] = Retrieval(items)
        return as_dialogue_turn(raw, "the dialogue answer")


_FIXES: dict[str, str] = {
    "refused": "nothing is listening there: start the service or fix the url in {source}",
    "auth": "the service rejected the credentials: check the headers' environment variables in {source}",
    "client": "the service rejected the request: check the url, method and body template in {source}",
    "timeout": "raise [http] timeout in {source} or check the service",
    "time_budget": "the call's total time budget ran out: raise [http] total_budget_s in {source} or check the service",
    "rate_limit": "still rate limited: lower concurrency (-n) or raise [http] max_retries in {source}",
    "server": "the service keeps failing: check its logs or raise [http] max_retries in {source}",
    "connection": "check the network path to the service",
    "malformed": "the url may point at something that is not the service's JSON API",
}


def read_items(fields: ListFields, data: Any) -> tuple[RetrievedItem, ...]:
    """One item per leaf of the ids path; other fields by broadcasting (see fields.py)."""
    ids = fields.ids.get(data)
    values = {p.text: p.get(data) for p in fields.paths()}
    out: list[RetrievedItem] = []
    for index, raw_id in leaves(ids, fields.ids.depth):
        if raw_id is None or isinstance(raw_id, (dict, list, bool)) or raw_id == "":
            raise FieldError(f"field {fields.ids.text!r}: item {list(index)} has no usable id (got {raw_id!r})")

        def value(path: FieldPath | None) -> Any:
            return None if path is None else pick(path, values[path.text], index, fields.ids.text)  # noqa: B023 - called only within this iteration

        metadata: dict[str, Any] = {}
        if isinstance(fields.metadata, Mapping):
            metadata = {k: value(p) for k, p in fields.metadata.items()}
        elif fields.metadata is not None:
            meta = value(fields.metadata)
            if meta is not None and not isinstance(meta, Mapping):
                raise FieldError(
                    f"field {fields.metadata.text!r}: expected an object per item, got {type(meta).__name__}"
                )
            metadata = dict(meta or {})
        doc = value(fields.doc_ids)
        if doc is not None:
            metadata["doc_id"] = str(doc)
        text = value(fields.texts)
        score = value(fields.scores)
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            assert fields.scores is not None  # value(None) is None: a score comes only from the scores path
            raise FieldError(f"field {fields.scores.text!r}: item {list(index)} has score {score!r}, expected a number")
        out.append(
            RetrievedItem(
                str(raw_id), "" if text is None else str(text), None if score is None else float(score), metadata
            )
        )
    return tuple(out)


def read_stages(ep: Endpoint, data: Any, final: Sequence[RetrievedItem]) -> dict[str, tuple[RetrievedItem, ...]]:
    """The stage lists of one answer. A stage list without ``doc_ids`` takes each item's
    document from the same id in this answer's final list (or another stage list that
    has ``doc_ids``); an item found in none keeps an unknown document, which never counts
    as a gold document: HttpConfig.stages_without_doc_ids says so in the run's
    description (docs/adapters.md)."""
    stages = {name: read_items(fields, data) for name, fields in ep.stages.items()}
    known = {i.id: i.metadata["doc_id"] for i in final if i.metadata.get("doc_id")}
    for items in stages.values():
        known.update({i.id: i.metadata["doc_id"] for i in items if i.metadata.get("doc_id") and i.id not in known})
    for name, fields in ep.stages.items():
        if fields.doc_ids is None and known:
            stages[name] = tuple(
                RetrievedItem(i.id, i.text, i.score, {**i.metadata, "doc_id": known[i.id]})
                if i.id in known and not i.metadata.get("doc_id")
                else i
                for i in stages[name]
            )
    return stages


def read_info(info: InfoSource, data: Any) -> tuple[dict[str, Any], list[str]]:
    """The description's single values, and what could not be read (one line each).

    ``path``: every scalar of the object (nested objects, lists and nulls are skipped);
    ``fields``: each configured key, a missing or non-scalar one reported, the rest kept.
    ``generator_deterministic`` must be a boolean: pass@k runs one trial when it is true.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    if info.path is not None:
        try:
            obj = info.path.get(data)
        except FieldError as exc:
            return {}, [str(exc)]
        if not isinstance(obj, Mapping):
            return {}, [f"field {info.path.text!r} is {type(obj).__name__}, expected an object"]
        values = {str(k): v for k, v in obj.items() if _is_scalar(v)}
    for key, path in info.fields.items():
        try:
            value = path.get(data)
        except FieldError as exc:
            problems.append(str(exc))
            continue
        if value is not None and not _is_scalar(value):
            problems.append(f"field {path.text!r} is {type(value).__name__}, expected a single value")
        elif value is not None:
            values[key] = value
    flag = values.get("generator_deterministic")
    if flag is not None and not isinstance(flag, bool):
        problems.append(f"generator_deterministic is {flag!r}, expected true or false")
        del values["generator_deterministic"]
    return {k: v for k, v in values.items() if k not in OWN_KEYS}, problems


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _scalar(ep: Endpoint, key: str, data: Any) -> Any:
    path = ep.scalars.get(key)
    return None if path is None else path.get(data)


def _path_text(ep: Endpoint, key: str) -> str:
    path = ep.scalars.get(key)
    return repr(path.text) if path is not None else key


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _cut(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "…"
