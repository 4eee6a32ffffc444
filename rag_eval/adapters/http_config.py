"""The HTTP adapter's configuration: endpoints, headers, request template, field paths,
and the optional ``[info]`` call where the service describes itself.

Read from a TOML file (``--rag-pipeline-config``) and checked before any case runs: an
unknown key, a missing url, a bad field path or an unset environment variable is a
usage error naming the file, the key and the fix. ``${NAME}`` (or ``${NAME:-default}``)
in ``url``, ``headers`` and the body is read from the environment; values used in
headers are secrets: they are redacted from every message and never described.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.fields import FieldPath, optional_path
from rag_eval.llm.policy import DEFAULT_BREAKER, CallPolicy
from rag_eval.util.redact import Redactor

HTTP_KEYS = ("timeout", "max_retries", "total_budget_s", "breaker", "top_k", "headers", "concurrency")
ENDPOINT_KEYS = ("url", "method", "body", "accept_status", "fields", "stages", "sources", "context")
LIST_KEYS = ("ids", "texts", "scores", "doc_ids", "metadata")
# stage_ms: the path to the service's own per-stage timings, {"stage name": milliseconds}
RETRIEVE_FIELDS = (*LIST_KEYS, "degraded", "degradation_reason", "stage_ms")
CHAT_FIELDS = ("answer", "refused", "degraded", "degradation_reason", "generator", "stage_ms")
PLACEHOLDERS = ("{question}", "{top_k}", "{history}", "{turns}", "{context}")
# [dialogue]: the optional dialogue call (docs/dialogue.md); action and message are required.
DIALOGUE_TABLE = "dialogue"  # [http.dialogue]: the system's dialogue call
DIALOGUE_KEYS = ("url", "method", "body", "accept_status", "fields", "retrieval")
DIALOGUE_FIELDS = ("action", "message", "intent", "asked_conditions", "hint_level", "candidate", "interception")
METHODS = ("POST", "PUT", "GET")
INFO_KEYS = ("url", "path", "fields")
# What the adapter itself records: a service's description must not overwrite these.
OWN_KEYS = (
    "adapter",
    "endpoint",
    "chat_endpoint",
    "dialogue_endpoint",
    "info_endpoint",
    "headers",
    "config",
    "gold",
    "factory",
    "info_error",
)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ListFields:
    """Paths of one ranked list: ids (required) and, per item, text, score, doc id, metadata.

    ``metadata`` is a path to an object per item, or a table ``{name = path}``.
    """

    ids: FieldPath
    texts: FieldPath | None = None
    scores: FieldPath | None = None
    doc_ids: FieldPath | None = None
    metadata: FieldPath | Mapping[str, FieldPath] | None = None

    @classmethod
    def parse(cls, table: Any, where: str, allowed: Sequence[str] = LIST_KEYS) -> ListFields:
        _table(table, where)
        _known(table, allowed, where)
        if "ids" not in table:
            raise AdapterConfigError(
                f"{where}: 'ids' is required: the path to each item's id, e.g. ids = \"items[].id\""
            )
        ids = FieldPath.parse(table["ids"], f"{where}.ids")
        meta_raw = table.get("metadata")
        metadata: FieldPath | dict[str, FieldPath] | None
        if isinstance(meta_raw, Mapping):
            metadata = {str(k): FieldPath.parse(v, f"{where}.metadata.{k}") for k, v in meta_raw.items()}
        else:
            metadata = optional_path(table, "metadata", where)
        out = cls(
            ids,
            optional_path(table, "texts", where),
            optional_path(table, "scores", where),
            optional_path(table, "doc_ids", where),
            metadata,
        )
        for path in out.paths():
            if path.depth > ids.depth:
                raise AdapterConfigError(
                    f"{where}: {path.text!r} has more [] than ids = {ids.text!r}; a field can only be shallower "
                    "(broadcast to the items inside) or as deep as the ids"
                )
        return out

    def paths(self) -> list[FieldPath]:
        meta = list(self.metadata.values()) if isinstance(self.metadata, Mapping) else [self.metadata]
        return [p for p in (self.texts, self.scores, self.doc_ids, *meta) if p is not None]


@dataclass(frozen=True)
class Endpoint:
    name: str  # "retrieve" or "chat"
    url: str
    method: str
    body: Any  # the request template, environment already expanded
    accept_status: tuple[int, ...]
    items: ListFields | None  # retrieve: the final ranked list; chat: the context
    sources: ListFields | None
    stages: Mapping[str, ListFields]
    scalars: Mapping[str, FieldPath]  # degraded, degradation_reason, answer, refused, generator

    @property
    def display_url(self) -> str:
        return display_url(self.url)


@dataclass(frozen=True)
class InfoSource:
    """``[info]``: a GET the service answers with its own description (index fingerprint,
    models, store), so results record what was evaluated, not only where.

    Either ``path`` (an object whose scalar values are taken) or ``fields`` (result key ->
    path to one value). The call goes through the same client as retrieve and chat: same
    headers, timeout, retries and redaction.
    """

    endpoint: Endpoint  # GET, no query parameters
    path: FieldPath | None = None
    fields: Mapping[str, FieldPath] = field(default_factory=dict)


@dataclass(frozen=True, repr=False)
class HttpConfig:
    """Everything the HTTP adapter needs; ``repr`` and ``describe`` show no header values."""

    source: str
    retrieve: Endpoint
    chat: Endpoint | None
    headers: Mapping[str, str] = field(default_factory=dict)
    header_vars: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    timeout: float = 30.0
    max_retries: int = 3
    total_budget_s: float = 120.0
    breaker: int = DEFAULT_BREAKER
    top_k: int | None = None
    concurrency: int | None = None  # calls in flight at once; None: as many as the run's --rag-concurrency
    preset: str = ""
    info: InfoSource | None = None
    dialogue: Endpoint | None = None  # [dialogue]: items = the turn's retrieval, scalars = the DialogueTurn fields

    def __repr__(self) -> str:
        return (
            f"HttpConfig(source={self.source!r}, retrieve={self.retrieve.display_url!r}, "
            f"headers={sorted(self.headers)})"
        )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "adapter": self.preset or "http",
            "endpoint": self.retrieve.display_url,
            "chat_endpoint": self.chat.display_url if self.chat else None,
            "headers": {
                k: "<from " + ", ".join(f"${v}" for v in self.header_vars.get(k, ())) + ">"
                if self.header_vars.get(k)
                else "<literal>"
                for k in sorted(self.headers)
            },
            "config": self.source,
        }
        missing = self.stages_without_doc_ids
        if missing:
            out["stage_doc_ids"] = (
                f"missing for {', '.join(missing)}: an item's document is known only where its id is also in "
                "the final list; the others count as no gold document at document level (set doc_ids in "
                "[<endpoint>.stages.<name>], docs/adapters.md)"
            )
        if self.info is not None:
            out["info_endpoint"] = self.info.endpoint.display_url
        if self.dialogue is not None:
            out["dialogue_endpoint"] = self.dialogue.display_url
        return out

    @property
    def stages_without_doc_ids(self) -> list[str]:
        """``endpoint.stage`` of every stage list configured without ``doc_ids``."""
        endpoints = [self.retrieve, *([self.chat] if self.chat else [])]
        return [f"{ep.name}.stages.{name}" for ep in endpoints for name, f in ep.stages.items() if f.doc_ids is None]

    @property
    def policy(self) -> CallPolicy:
        """``[http] timeout / max_retries / total_budget_s / breaker`` as the shared call policy."""
        where = f"[http] {{}} in {self.source}"
        return CallPolicy(
            timeout=self.timeout,
            max_retries=self.max_retries,
            total_budget_s=self.total_budget_s,
            breaker_after=self.breaker,
            timeout_setting=where.format("timeout"),
            retries_setting=where.format("max_retries"),
            breaker_setting=where.format("breaker"),
        )

    @cached_property
    def redactor(self) -> Redactor:
        """The header values as secrets (with their URL-encoded and base64 forms)."""
        return Redactor(self.secrets)

    def redact(self, text: str) -> str:
        return self.redactor.text(text)

    @classmethod
    def parse(
        cls, data: Mapping[str, Any], source: str, env: Mapping[str, str] = os.environ, preset: str = ""
    ) -> HttpConfig:
        http = data.get("http", {})
        _table(http, f"{source} [http]")
        _known(http, HTTP_KEYS, f"{source} [http]")
        headers_raw = http.get("headers", {})
        _table(headers_raw, f"{source} [http] headers")
        headers: dict[str, str] = {}
        header_vars: dict[str, tuple[str, ...]] = {}
        secrets: list[str] = []
        for name, value in headers_raw.items():
            if not isinstance(value, str):
                raise AdapterConfigError(f"{source} [http] headers.{name}: must be a string, got {value!r}")
            expanded, used = expand(value, env, f"{source} [http] headers.{name}")
            headers[str(name)] = expanded
            header_vars[str(name)] = used
            secrets.extend(env.get(v, "") for v in used)
        if "retrieve" not in data:
            raise AdapterConfigError(
                f"{source}: no [retrieve] table; the HTTP adapter needs at least\n"
                '  [retrieve]\n  url = "http://127.0.0.1:8000/api/retrieve"\n'
                '  [retrieve.fields]\n  ids = "items[].chunk_id"'
            )
        top_k = http.get("top_k")
        if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
            raise AdapterConfigError(
                f"{source} [http] top_k: a positive integer (sent when the run sets none), got {top_k!r}"
            )
        concurrency = http.get("concurrency")
        if concurrency is not None and (
            not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1
        ):
            raise AdapterConfigError(
                f"{source} [http] concurrency: how many calls the service takes at once, a whole "
                f"number >= 1 (1: one at a time), got {concurrency!r}"
            )
        return cls(
            source=source,
            retrieve=_endpoint("retrieve", data["retrieve"], source, env),
            chat=_endpoint("chat", data["chat"], source, env) if "chat" in data else None,
            headers=headers,
            header_vars=header_vars,
            secrets=tuple(sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)),
            timeout=_positive(http, "timeout", 30.0, source),
            max_retries=_count(http, "max_retries", 3, source),
            total_budget_s=_positive(http, "total_budget_s", 120.0, source),
            breaker=_count(http, "breaker", DEFAULT_BREAKER, source),
            top_k=top_k,
            concurrency=concurrency,
            preset=preset,
            info=_info(data["info"], source, env) if "info" in data else None,
            dialogue=_dialogue(data[DIALOGUE_TABLE], source, env) if DIALOGUE_TABLE in data else None,
        )


def _endpoint(name: str, table: Any, source: str, env: Mapping[str, str]) -> Endpoint:
    where = f"{source} [{name}]"
    _table(table, where)
    _known(
        table,
        ENDPOINT_KEYS if name == "chat" else tuple(k for k in ENDPOINT_KEYS if k not in ("sources", "context")),
        where,
    )
    url = _url(table, where, env, f"http://127.0.0.1:8000/api/{name}")
    method = str(table.get("method", "POST")).upper()
    if method not in METHODS:
        raise AdapterConfigError(f"{where} method = {method!r}; valid: {', '.join(METHODS)}")
    body = _body(table, {"question": "{question}", "top_k": "{top_k}"}, where, env)
    if "{question}" not in json.dumps(body, ensure_ascii=False):
        raise AdapterConfigError(f'{where} body: the template never sends the question; put "{{question}}" in it')
    if method == "GET" and not (
        isinstance(body, Mapping) and all(not isinstance(v, (dict, list)) for v in body.values())
    ):
        raise AdapterConfigError(f"{where} body: with method GET the body is sent as query parameters: a flat table")
    accept = _accept_status(table, where)
    fields_table = table.get("fields", {})
    _table(fields_table, f"{where}.fields")
    if name == "retrieve":
        _known(fields_table, RETRIEVE_FIELDS, f"{where}.fields")
        if "ids" not in fields_table:
            raise AdapterConfigError(
                f"{where}.fields: 'ids' is required: the path to each ranked item's id, e.g. ids = \"items[].chunk_id\""
            )
        items: ListFields | None = ListFields.parse(
            {k: v for k, v in fields_table.items() if k in LIST_KEYS}, f"{where}.fields"
        )
        scalar_keys: tuple[str, ...] = ("degraded", "degradation_reason", "stage_ms")
        sources = None
    else:
        _known(fields_table, CHAT_FIELDS, f"{where}.fields")
        if "answer" not in fields_table:
            raise AdapterConfigError(
                f"{where}.fields: 'answer' is required: the path to the answer text, e.g. answer = \"answer\""
            )
        items = ListFields.parse(table["context"], f"{where}.context") if "context" in table else None
        sources = ListFields.parse(table["sources"], f"{where}.sources") if "sources" in table else None
        scalar_keys = CHAT_FIELDS
    scalars = {k: FieldPath.parse(fields_table[k], f"{where}.fields.{k}") for k in scalar_keys if k in fields_table}
    for key, path in scalars.items():
        if path.depth:
            raise AdapterConfigError(f"{where}.fields.{key} = {path.text!r}: a single value, so no []")
    stages_table = table.get("stages", {})
    _table(stages_table, f"{where}.stages")
    stages = {
        str(stage): ListFields.parse(spec, f"{where}.stages.{stage}", ("ids", "scores", "texts", "doc_ids"))
        for stage, spec in stages_table.items()
    }
    return Endpoint(name, url, method, body, accept, items, sources, stages, scalars)


def _dialogue(table: Any, source: str, env: Mapping[str, str]) -> Endpoint:
    """``[dialogue]``: url, method, body (default ``{turns = "{turns}", context = "{context}"}``),
    ``[dialogue.fields]`` paths to the turn's action, message and the optional fields, and an
    optional ``[dialogue.retrieval]`` list (ids, texts, scores, doc_ids, metadata) like ``[chat.context]``."""
    where = f"{source} [dialogue]"
    _table(table, where)
    _known(table, DIALOGUE_KEYS, where)
    url = _url(table, where, env, "http://127.0.0.1:8000/api/dialogue")
    method = str(table.get("method", "POST")).upper()
    if method not in ("POST", "PUT"):
        raise AdapterConfigError(
            f"{where} method = {method!r}: the conversation is sent as a JSON body; valid: POST, PUT"
        )
    body = _body(table, {"turns": "{turns}", "context": "{context}"}, where, env)
    if "{turns}" not in json.dumps(body, ensure_ascii=False):
        raise AdapterConfigError(
            f'{where} body: the template never sends the conversation; put "{{turns}}" in it '
            '(the list of {"role", "content"} turns so far; "{context}" '
            'is the learning context, "{question}" the last message)'
        )
    accept = _accept_status(table, where)
    fields_table = table.get("fields", {})
    _table(fields_table, f"{where}.fields")
    _known(fields_table, DIALOGUE_FIELDS, f"{where}.fields")
    for required in ("action", "message"):
        if required not in fields_table:
            raise AdapterConfigError(
                f"{where}.fields: {required!r} is required: the path to "
                f'the turn\'s {required}, e.g. {required} = "{required}"'
            )
    scalars = {k: FieldPath.parse(fields_table[k], f"{where}.fields.{k}") for k in DIALOGUE_FIELDS if k in fields_table}
    for key, path in scalars.items():
        if path.depth:
            raise AdapterConfigError(
                f"{where}.fields.{key} = {path.text!r}: one value per turn (asked_conditions: a list value), so no []"
            )
    retrieval = ListFields.parse(table["retrieval"], f"{where}.retrieval") if "retrieval" in table else None
    return Endpoint(DIALOGUE_TABLE, url, method, body, accept, retrieval, None, {}, scalars)


def _body(table: Mapping[str, Any], default: Any, where: str, env: Mapping[str, str]) -> Any:
    """The request template (a table, or a JSON string), environment variables expanded."""
    body = table.get("body", default)
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError as exc:
            raise AdapterConfigError(f"{where} body: a JSON template string must be valid JSON ({exc})") from None
    return _expand_body(body, env, f"{where} body")


def _accept_status(table: Mapping[str, Any], where: str) -> tuple[int, ...]:
    accept = table.get("accept_status", [])
    if not isinstance(accept, list) or not all(isinstance(c, int) and 100 <= c <= 599 for c in accept):
        raise AdapterConfigError(f"{where} accept_status: a list of HTTP status codes, got {accept!r}")
    return tuple(accept)


def _info(table: Any, source: str, env: Mapping[str, str]) -> InfoSource:
    where = f"{source} [info]"
    _table(table, where)
    _known(table, INFO_KEYS, where)
    url = _url(table, where, env, "http://127.0.0.1:8000/api/health")
    if ("path" in table) == ("fields" in table):
        raise AdapterConfigError(
            f'{where}: give either path = "info" (a field path to an object whose scalar values are taken) or an '
            f"[info.fields] table (result key = field path), {'not both' if 'path' in table else 'one is required'}"
        )
    path = optional_path(table, "path", where)
    fields_table = table.get("fields", {})
    _table(fields_table, f"{where}.fields")
    reserved = sorted(set(fields_table) & set(OWN_KEYS))
    if reserved:
        raise AdapterConfigError(
            f"{where}.fields: {', '.join(map(repr, reserved))}: recorded by the adapter itself; "
            f"name the value otherwise (reserved: {', '.join(OWN_KEYS)})"
        )
    fields = {str(k): FieldPath.parse(v, f"{where}.fields.{k}") for k, v in fields_table.items()}
    for key, p in {"path": path, **{f"fields.{k}": v for k, v in fields.items()}}.items():
        if p is not None and p.depth:
            raise AdapterConfigError(
                f"{where}.{key} = {p.text!r}: a single {'object' if key == 'path' else 'value'}, so no []"
            )
    return InfoSource(Endpoint("info", url, "GET", {}, (), None, None, {}, {}), path, fields)


def _url(table: Mapping[str, Any], where: str, env: Mapping[str, str], example: str) -> str:
    if not table.get("url"):
        raise AdapterConfigError(f"{where}: 'url' is required, e.g. url = \"{example}\"")
    url, _ = expand(str(table["url"]), env, f"{where} url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AdapterConfigError(f"{where} url = {display_url(url)!r}: not an http(s) URL with a host")
    return url


def expand(text: str, env: Mapping[str, str], where: str) -> tuple[str, tuple[str, ...]]:
    """``${NAME}`` / ``${NAME:-default}`` from the environment; an unset name without a
    default is a configuration error naming the variable."""
    used: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        value = (env.get(name) or "").strip()
        if value:
            used.append(name)
            return value
        if default is not None:
            return default
        raise AdapterConfigError(f"{where}: environment variable {name} is not set; export {name}=... before the run")

    return _VAR.sub(sub, text), tuple(used)


def _expand_body(node: Any, env: Mapping[str, str], where: str) -> Any:
    if isinstance(node, str):
        return expand(node, env, where)[0]
    if isinstance(node, Mapping):
        return {str(k): _expand_body(v, env, f"{where}.{k}") for k, v in node.items()}
    if isinstance(node, list):
        return [_expand_body(v, env, f"{where}[{i}]") for i, v in enumerate(node)]
    return node


def render_body(
    template: Any,
    question: str,
    top_k: int | None,
    history: Sequence[Mapping[str, str]] = (),
    context: Mapping[str, Any] | None = None,
) -> Any:
    """The request body: a value that is exactly ``"{top_k}"`` becomes the number (or
    null), ``"{history}"`` (or, for the dialogue call, ``"{turns}"``) the message list,
    ``"{context}"`` the dialogue's learning context; inside longer strings the placeholders are
    replaced as text. Substitution happens on parsed values, so any question is JSON-safe."""
    if isinstance(template, str):
        if template == "{top_k}":
            return top_k
        if template in ("{history}", "{turns}"):
            return [dict(h) for h in history]
        if template == "{context}":
            return dict(context or {})
        if template == "{question}":
            return question
        return template.replace("{question}", question).replace("{top_k}", "" if top_k is None else str(top_k))
    if isinstance(template, Mapping):
        return {k: render_body(v, question, top_k, history, context) for k, v in template.items()}
    if isinstance(template, list):
        return [render_body(v, question, top_k, history, context) for v in template]
    return template


def display_url(url: str) -> str:
    """scheme://host[:port]/path: no user:password@, no query (tokens hide there)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _table(value: Any, where: str) -> None:
    if not isinstance(value, Mapping):
        raise AdapterConfigError(f"{where}: expected a table, got {type(value).__name__} {value!r}")


def _known(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise AdapterConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(allowed)}"
        )


def _positive(table: Mapping[str, Any], key: str, default: float, source: str, allow_zero: bool = False) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not allow_zero):
        raise AdapterConfigError(
            f"{source} [http] {key}: a {'non-negative' if allow_zero else 'positive'} number, got {value!r}"
        )
    return float(value)


def _count(table: Mapping[str, Any], key: str, default: int, source: str) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AdapterConfigError(f"{source} [http] {key}: an integer >= 0, got {value!r}")
    return value
