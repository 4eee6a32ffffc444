"""Embeddings from any OpenAI-compatible ``POST /v1/embeddings`` (OpenAI, vLLM, TEI, llama.cpp, ...).

Configuration (see ``rag_app.env``): ``RAG_EMBEDDING_BASE_URL`` / ``RAG_EMBEDDING_API_KEY``
(falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``) and the model from the
``embedding_model`` setting or else ``RAG_EMBEDDING_MODEL``. The setting wins, as for
``reranker_model``, so that the settings dump in a result file names the model asked for.

Retries and timeouts are the openai SDK's own (``max_retries``, default 2, and an
``openai.Timeout``), not a loop written here:

* retried, with exponential backoff from 0.5 s (at most 8 s, 0-25 % jitter): timeouts,
  connection errors (refused and reset included: about 1.5 s in all for a port nothing
  listens on), 408, 409, 429, 5xx; ``Retry-After`` / ``retry-after-ms`` honoured when
  it is seconds *or an HTTP date*, up to two minutes (a longer one is not waited for);
  ``x-should-retry`` obeyed;
* not retried: other 4xx, malformed answers.
* each attempt gets ``request_timeout`` seconds, and at most ``CONNECT_TIMEOUT_S`` to
  connect, so a host that drops packets costs 3 s per attempt, not the whole timeout.

Errors name the number of attempts made (read from the SDK's ``x-stainless-retry-count``
header of the last request) and what to change.

Query/passage modality (``rag_app.embeddings.modality``): a request field such as
``input_type`` or text prefixes such as e5's ``"query: "`` / ``"passage: "``, from the
``embedding_*`` settings.

Vectors are L2-normalised here: many servers return unnormalised vectors, and the
vector store scores by cosine = dot product of unit vectors.

The API key never appears in a message or ``repr``: every message goes through
:meth:`OpenAIEmbedder._redact`, because servers sometimes echo the key back.
"""

from __future__ import annotations

import base64
import errno
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_app.embeddings.modality import Modality, Mode
from rag_app.env import EndpointConfig
from rag_app.errors import ConfigError, ServiceError
from rag_app.interfaces import Vectors
from rag_app.redact import Redactor
from rag_app.settings import Settings

log = logging.getLogger(__name__)

FAMILY = "openai"
ENV_PREFIX = "RAG_EMBEDDING"
MAX_INPUTS_PER_REQUEST = 2048  # OpenAI's documented limit; other servers accept at least that
CONNECT_TIMEOUT_S = 3.0
RETRYABLE_STATUS = frozenset({408, 409, 429})  # plus every 5xx: what the SDK retries
RETRY_COUNT_HEADER = "x-stainless-retry-count"  # the SDK numbers its attempts in this header
_DIM_PROBE_TEXT = "dimension probe"
_SNIPPET = 300  # characters of a server's error text quoted in a message (after redaction)


class OpenAIEmbedder:
    """``Embedder`` over an OpenAI-compatible embeddings endpoint; queries and passages are
    told apart as ``modality`` says (by default not at all: one vector per text)."""

    family = FAMILY

    def __init__(
        self,
        config: EndpointConfig,
        *,
        timeout: float = 30.0,
        max_retries: int = 2,
        modality: Modality = Modality(),  # noqa: B008 - a frozen dataclass: one shared immutable default is safe
    ) -> None:
        config.require()
        if timeout <= 0 or max_retries < 0:
            raise ConfigError(f"request_timeout must be > 0 and retries >= 0, got {timeout} and {max_retries}")
        self.config = config
        self._redactor = Redactor([config.api_key])
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.modality = modality
        self._dim: int | None = None
        self._client: Any = None
        # Why the address is in model_id: two servers may serve different weights (or a
        # different quantisation, or a different `dimensions` default) under one model
        # name -- "bge-m3" on a laptop vs a GPU box. model_id keys the cache and the
        # index fingerprint, so leaving the server out could silently mix their vectors.
        # The cost is that one model behind two URLs is cached twice. The key is never
        # part of it; neither is the URL path (not host-identifying; keeps ids short).
        # The modality is, when set: a query embedded with a prefix is another vector.
        self._model_id = f"openai:{config.model}@{config.address}{modality.tag}"

    @classmethod
    def from_settings(cls, settings: Settings, env: Mapping[str, str] | None = None) -> OpenAIEmbedder:
        """Endpoint from the environment (``RAG_EMBEDDING_*``), model from settings first."""
        cfg = EndpointConfig.from_env(ENV_PREFIX, os.environ if env is None else env)
        if settings.embedding_model:
            cfg = EndpointConfig(
                cfg.base_url,
                settings.embedding_model,
                cfg.api_key,
                cfg.prefix,
                cfg.base_url_var,
                "embedding_model setting",
                cfg.api_key_var,
            )
        missing = cfg.missing()
        if missing:
            missing = [
                m + " or the embedding_model setting (RAG_APP_EMBEDDING_MODEL)" if m == f"{ENV_PREFIX}_MODEL" else m
                for m in missing
            ]
            raise ConfigError(
                f"embedder 'openai' is not configured: set {'; '.join(missing)}. A local server that "
                "needs no key still needs a non-empty key variable, e.g. RAG_EMBEDDING_API_KEY=none. "
                "Or use an offline embedder: embedder = 'auto'."
            )
        return cls(cfg, timeout=settings.request_timeout, modality=Modality.from_settings(settings))

    # --- Embedder protocol ------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def address(self) -> str:
        return self.config.address

    @property
    def dim(self) -> int:
        """Learned from the first answer; before any, one probe request finds it out."""
        if self._dim is None:
            self._request([_DIM_PROBE_TEXT], "query")
        assert self._dim is not None  # set by _request
        return self._dim

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + MAX_INPUTS_PER_REQUEST]), "passage")
            for i in range(0, len(texts), MAX_INPUTS_PER_REQUEST)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def embed_query(self, text: str) -> Vectors:
        return self._request([text], "query")[0]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model_id={self._model_id!r}, timeout={self.timeout:g}, max_retries={self.max_retries})"

    # --- one request (the SDK retries) ------------------------------------------------------
    def _request(self, texts: list[str], mode: Mode) -> Vectors:
        import openai  # noqa: PLC0415 - lazy: the SDK costs ~0.5 s to import and most runs are offline

        # The API rejects "" ("input cannot be an empty string"); a space embeds as "nothing".
        inputs = [t if t.strip() else " " for t in self.modality.texts(texts, mode)]
        extra = self.modality.extra_body(mode)
        try:
            raw = self._sdk().embeddings.with_raw_response.create(
                input=inputs, model=self.config.model, encoding_format="float", extra_body=extra or None
            )
            response = raw.parse()
        except openai.APIError as exc:
            detail, retryable = self._classify(exc)
            raise self._error(detail, _attempts(exc), retryable) from None
        return self._parse(response, len(inputs), int(getattr(raw, "retries_taken", 0)) + 1)

    def _sdk(self) -> Any:
        if self._client is None:
            import openai  # noqa: PLC0415

            self._client = openai.OpenAI(
                api_key=self.config.api_key,
                base_url=self.config.base_url,
                max_retries=self.max_retries,
                timeout=self._timeouts(),
            )
        return self._client

    def _timeouts(self) -> Any:
        """``request_timeout`` per read/write, but at most CONNECT_TIMEOUT_S to connect.

        A host that drops packets (firewall, wrong IP) never refuses; without a short
        connect timeout it would hold the run for the whole request timeout.
        """
        import openai  # noqa: PLC0415

        return openai.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT_S))

    def _classify(self, exc: Exception) -> tuple[str, bool]:
        """(what went wrong and what to change, was it a kind the SDK retries?)."""
        import openai  # noqa: PLC0415

        if isinstance(exc, openai.APITimeoutError):
            return (
                f"no response within {self.timeout:g}s, or no connection within "
                f"{min(self.timeout, CONNECT_TIMEOUT_S):g}s (raise request_timeout (RAG_APP_REQUEST_TIMEOUT) if "
                "the server is slow; check the address if it never answers)",
                True,
            )
        if isinstance(exc, openai.APIConnectionError):
            if _is_refused(exc):
                return "connection refused: nothing listens there; start the server or fix " + (
                    self.config.base_url_var or f"{ENV_PREFIX}_BASE_URL"
                ), True
            return f"connection failed ({self._redactor.snippet(_root_cause(exc), _SNIPPET)})", True
        if isinstance(exc, openai.APIStatusError):
            code = exc.status_code
            message = self._redactor.snippet(_server_message(exc), _SNIPPET)
            if code == 429 and _error_code(exc) == "insufficient_quota":
                return (
                    f"HTTP 429 insufficient_quota: {message} (add credit or use another key; waiting will not help)",
                    True,
                )
            if code in RETRYABLE_STATUS or code >= 500:
                return f"HTTP {code}: {message}", True
            if code in (401, 403):
                return f"HTTP {code}: {message}; check {self.config.api_key_var or ENV_PREFIX + '_API_KEY'}", False
            if code == 404:
                return (
                    f"HTTP 404: {message}; "
                    f"check the model name ({self.config.model_var or ENV_PREFIX + '_MODEL'}) and that "
                    f"{self.config.base_url_var or ENV_PREFIX + '_BASE_URL'} ends in /v1",
                    False,
                )
            if code == 400 and (self.modality.field and self.modality.field in message):
                return (
                    f"HTTP 400: {message}; the server refuses the {self.modality.field!r} field: "
                    "unset embedding_input_type_field",
                    False,
                )
            return f"HTTP {code}: {message}", False
        return f"{type(exc).__name__}: {exc}", False

    def _error(self, detail: str, attempts: int, retryable: bool) -> ServiceError:
        tail = f" (gave up after the retry limit, max_retries={self.max_retries})" if retryable and attempts > 1 else ""
        return ServiceError(
            self._redact(
                f"embeddings endpoint {self.address} (model {self.config.model!r}) failed after {attempts} "
                f"attempt{'s' if attempts != 1 else ''}: {detail}{tail}"
            )
        )

    def _redact(self, text: str) -> str:
        return self._redactor.redact(text)

    # --- the answer ---------------------------------------------------------------------
    def _parse(self, response: Any, n: int, attempts: int) -> Vectors:
        def malformed(why: str) -> ServiceError:
            return self._error(f"malformed response: {why}; is this an OpenAI-compatible endpoint?", attempts, False)

        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != n:
            got = len(data) if isinstance(data, list) else type(data).__name__
            raise malformed(f"{got} embeddings for {n} inputs")
        # Servers may answer out of order; "index" says which input each vector belongs to.
        indices = [getattr(item, "index", i) for i, item in enumerate(data)]
        if sorted(indices) != list(range(n)):
            raise malformed(f"indices {indices[:10]} are not 0..{n - 1}")
        rows: list[Any] = [None] * n
        for index, item in zip(indices, data):
            rows[index] = _as_floats(getattr(item, "embedding", None))
        lengths = {len(r) if r is not None else -1 for r in rows}
        if len(lengths) != 1 or min(lengths) <= 0:
            raise malformed(f"embedding lengths {sorted(lengths)} (expected one positive length)")
        matrix = np.asarray(rows, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.isfinite(matrix).all() or (norms == 0).any():
            raise malformed("a vector is all zeros or not finite")
        dim = matrix.shape[1]
        if self._dim is not None and dim != self._dim:
            raise malformed(f"dimension changed from {self._dim} to {dim} between requests")
        self._dim = dim
        return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def _as_floats(value: Any) -> list[float] | None:
    """A float list, or a base64 float32 string (servers that ignore ``encoding_format``)."""
    if isinstance(value, str):
        try:
            return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(float).tolist()
        except ValueError:
            return None
    if isinstance(value, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return [float(x) for x in value]
    return None


def _is_refused(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError) or getattr(cur, "errno", None) == errno.ECONNREFUSED:
            return True
        if "connection refused" in str(cur).lower() or "connect call failed" in str(cur).lower():
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _root_cause(exc: BaseException) -> str:
    """The innermost chained exception, e.g. the socket error under the SDK's wrapper."""
    seen = {id(exc)}
    cur = exc
    nxt = cur.__cause__ or cur.__context__
    while nxt is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        cur, nxt = nxt, nxt.__cause__ or nxt.__context__
    return f"{type(cur).__name__}: {cur}"  # uncut: the caller's Redactor.snippet redacts, then cuts


def _server_message(exc: Any) -> str:
    """The server's whole error text (uncut: ``Redactor.snippet`` redacts, then cuts)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return str(getattr(exc, "message", exc))


def _error_code(exc: Any) -> str | None:
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    return str(err.get("code")) if isinstance(err, dict) and err.get("code") else None


def _attempts(exc: Any) -> int:
    """How many requests the SDK sent: its retry number on the last request, plus one."""
    request = getattr(exc, "request", None)
    headers = getattr(request, "headers", None) or {}
    try:
        return int(headers.get(RETRY_COUNT_HEADER, 0)) + 1
    except (TypeError, ValueError):
        return 1
