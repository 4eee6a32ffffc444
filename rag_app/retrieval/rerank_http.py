"""A reranker behind an HTTP rerank API (a cross-encoder served elsewhere).

Two request flavours cover the servers people actually run:

``cohere`` (default) -- the de-facto standard served by Cohere, Jina, vLLM, Infinity,
    LiteLLM and TEI's ``/v1/rerank`` compatibility route::

        POST <base>/rerank  {"model", "query", "documents": [...], "top_n"}
        -> {"results": [{"index": i, "relevance_score": s}, ...]}

``tei`` -- text-embeddings-inference's native route::

        POST <base>/rerank  {"query", "texts": [...], "truncate": true}
        -> [{"index": i, "score": s}, ...]

Responses are parsed by shape, not by flavour, so a server that answers the other
shape still works. Results come sorted by relevance; we map them back to input order.
Any failure raises ``RerankError`` so the pipeline can keep the fused order and mark
the result degraded; no message ever contains the API key.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast, get_args

import httpx

from rag_app.env import EndpointConfig
from rag_app.errors import ConfigError, RerankError
from rag_app.redact import Redactor
from rag_app.settings import Settings
from rag_app.types import Chunk

Flavour = Literal["cohere", "tei"]
FLAVOURS: tuple[str, ...] = get_args(Flavour)
ENV_PREFIX = "RAG_RERANKER"
FLAVOUR_VARIABLE = f"{ENV_PREFIX}_FLAVOUR"
_SNIPPET = 300  # characters of an error body worth showing


class HttpReranker:
    """Scores chunks with a remote rerank endpoint; one POST per ``rerank`` call."""

    name = "http"

    def __init__(
        self,
        base_url: str,
        model: str = "",
        api_key: str | None = None,
        *,
        flavour: str = "cohere",
        timeout: float = 30.0,
        top_n: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """``top_n=None`` asks for every document back.

        That is the sensible default: the server scores all documents either way
        (``top_n`` only trims the answer), and documents it leaves out get ``-inf``,
        which would hide them from evaluations that look deeper than ``top_n``.
        """
        if flavour not in FLAVOURS:
            raise ConfigError(
                f"unknown reranker flavour {flavour!r} (set in {FLAVOUR_VARIABLE}); "
                f"valid flavours: {', '.join(FLAVOURS)}"
            )
        if not base_url:
            raise ConfigError(f"the http reranker needs a base URL; set {ENV_PREFIX}_BASE_URL")
        if timeout <= 0:
            raise ConfigError(f"request_timeout must be positive, got {timeout}")
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/rerank"
        self.model = model
        self.flavour = cast(Flavour, flavour)
        self.timeout = timeout
        self.top_n = top_n
        self._api_key = api_key or None
        self._redactor = Redactor([api_key] if api_key else [], mark="***")
        self._transport = transport
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, settings: Settings, env: Mapping[str, str] | None = None) -> HttpReranker:
        """Endpoint from ``RAG_RERANKER_{BASE_URL,MODEL,API_KEY,FLAVOUR}`` (see ``rag_app.env``).

        ``settings.reranker_model`` wins over ``RAG_RERANKER_MODEL`` (like
        ``embedding_model`` over ``RAG_EMBEDDING_MODEL``) so that the settings dump in a
        results file records the model that was asked for. The base URL is always
        required; the model only for the ``cohere`` flavour (TEI serves one model and
        has no such field); the key is optional because self-hosted rerankers
        (TEI, vLLM, Infinity) usually run without one.
        """
        environ = os.environ if env is None else env
        cfg = EndpointConfig.from_env(
            ENV_PREFIX, environ, fallback=False
        )  # never send OPENAI_API_KEY to a reranker host
        if settings.reranker_model:
            cfg = dataclasses.replace(cfg, model=settings.reranker_model, model_var="reranker_model")
        flavour = (environ.get(FLAVOUR_VARIABLE) or "cohere").strip().lower()
        if flavour not in FLAVOURS:  # checked here too, so the message names the variable
            raise ConfigError(
                f"{FLAVOUR_VARIABLE}={flavour!r} is not a reranker flavour; valid flavours: {', '.join(FLAVOURS)}"
            )
        cfg.require(*(("base_url",) if flavour == "tei" else ("base_url", "model")))
        return cls(cfg.base_url, cfg.model, cfg.api_key, flavour=flavour, timeout=settings.request_timeout)

    # --- the Reranker protocol ----------------------------------------------------------
    def rerank(self, query: str, chunks: Sequence[Chunk], first_stage: Sequence[float] | None = None) -> list[float]:
        """One score per chunk in input order; documents the server left out get ``-inf``."""
        if not chunks:
            return []
        texts = [c.text for c in chunks]
        response = self._post(self._request_body(query, texts))
        return self._scores(response, len(texts))

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> HttpReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------
    def _request_body(self, query: str, texts: list[str]) -> dict[str, Any]:
        if self.flavour == "tei":
            # truncate=true: TEI rejects over-long inputs with 413 unless told to cut them.
            return {"query": query, "texts": texts, "truncate": True, "raw_scores": False, "return_text": False}
        body: dict[str, Any] = {"query": query, "documents": texts, "top_n": self.top_n or len(texts)}
        if self.model:
            body["model"] = self.model
        return body

    def _http(self) -> httpx.Client:
        # One client per reranker: connection reuse across the many queries of an eval run.
        with self._lock:
            if self._client is None:
                headers = {"Accept": "application/json"}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                self._client = httpx.Client(
                    timeout=httpx.Timeout(self.timeout), headers=headers, transport=self._transport
                )
            return self._client

    def _post(self, body: dict[str, Any]) -> Any:
        where = f"reranker at {_display(self.url)}"
        try:
            resp = self._http().post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise RerankError(
                f"{where} did not answer within {self.timeout:g} s ({type(exc).__name__}); "
                "raise request_timeout (RAG_APP_REQUEST_TIMEOUT) or check the server"
            ) from None
        except httpx.HTTPError as exc:
            raise RerankError(
                self._redact(f"cannot reach {where}: {type(exc).__name__}: {exc}; check {ENV_PREFIX}_BASE_URL")
            ) from None
        if resp.status_code >= 400:
            raise RerankError(
                self._redact(
                    f"{where} answered HTTP {resp.status_code}: "
                    f"{self._snippet(resp.text)}{_status_hint(resp.status_code)}"
                )
            )
        try:
            return resp.json()
        except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise RerankError(
                self._redact(
                    f"{where} answered HTTP {resp.status_code} with a body that is not JSON: "
                    f"{self._snippet(resp.text)!r}"
                )
            ) from None

    def _scores(self, payload: Any, n: int) -> list[float]:
        where = f"reranker at {_display(self.url)}"
        if isinstance(payload, dict) and isinstance(payload.get("results"), list):
            items: list[Any] = payload["results"]
        elif isinstance(payload, list):
            items = payload
        else:
            raise RerankError(
                f'{where} answered an unexpected JSON shape: expected {{"results": [{{index, relevance_score}}]}} '
                f"or a list of {{index, score}}, got {self._snippet(json.dumps(payload, ensure_ascii=False))}; "
                f"check {FLAVOUR_VARIABLE} (cohere or tei)"
            )
        scores = [-math.inf] * n
        seen: set[int] = set()
        for pos, item in enumerate(items):
            if not isinstance(item, dict):
                raise RerankError(f"{where}: result #{pos} is not an object: {self._snippet(repr(item))}")
            index = item.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                raise RerankError(f"{where}: result #{pos} has no integer 'index' (got {self._snippet(repr(index))})")
            if not 0 <= index < n:
                raise RerankError(f"{where}: result #{pos} has index {index}, outside 0..{n - 1} for {n} documents")
            if index in seen:
                raise RerankError(f"{where}: index {index} appears twice in the results")
            seen.add(index)
            raw = item.get("relevance_score", item.get("score"))
            if not isinstance(raw, (int, float)) or isinstance(raw, bool) or not math.isfinite(raw):
                raise RerankError(
                    f"{where}: result #{pos} (index {index}) has no finite 'relevance_score' or 'score' "
                    f"(got {self._snippet(repr(raw))})"
                )
            scores[index] = float(raw)
        return scores

    def _redact(self, message: str) -> str:
        return self._redactor.redact(message)

    def _snippet(self, text: str) -> str:
        """A server's text redacted, then cut (never cut first: a cut key no longer matches)."""
        return self._redactor.snippet(" ".join(text.split()), _SNIPPET, ellipsis="…")


def _display(url: str) -> str:
    """The URL without any ``user:password@`` part, for messages."""
    try:
        parsed = httpx.URL(url)
    except Exception:  # noqa: BLE001 - a broken URL is shown as given minus nothing secret
        return url.split("@")[-1]
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


def _status_hint(code: int) -> str:
    if code in (401, 403):
        return f"; check {ENV_PREFIX}_API_KEY"
    if code in (404, 405):
        return f"; check {ENV_PREFIX}_BASE_URL (the reranker POSTs to <base>/rerank)"
    if code in (400, 413, 422):
        return f"; check {ENV_PREFIX}_MODEL and {FLAVOUR_VARIABLE} (cohere sends 'documents', tei sends 'texts')"
    return ""
