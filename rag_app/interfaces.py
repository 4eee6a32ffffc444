"""The small interfaces each pipeline component implements.

Batching, caching and retries are written once around these (see ``embeddings.cache``),
so a backend implements only the few methods below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from rag_app.types import Chunk, Usage

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors. Query and passage modes may differ (e5)."""

    @property
    def model_id(self) -> str:
        """Stable identifier that goes into cache keys and the index fingerprint."""
        ...

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vectors: ...


@runtime_checkable
class Reranker(Protocol):
    """Scores candidate chunks against the query; raises ``RerankError`` on failure."""

    @property
    def name(self) -> str: ...

    def rerank(self, query: str, chunks: Sequence[Chunk], first_stage: Sequence[float] | None = None) -> list[float]:
        """One relevance score per chunk, in the order given (higher is better).

        ``first_stage``: the fused (RRF) score of each chunk; a reranker may use it as a prior.
        """
        ...


@runtime_checkable
class Generator(Protocol):
    """Writes an answer from numbered context blocks. ``[n]`` refers to ``context[n-1]``."""

    @property
    def name(self) -> str:
        """Shown wherever results are shown, e.g. ``extractive-baseline`` or ``openai:gpt-4o-mini``."""
        ...

    @property
    def deterministic(self) -> bool:
        """True when repeated calls give the same answer (then repeated trials are pointless)."""
        ...

    def generate(
        self, question: str, context: Sequence[Chunk], history: Sequence[dict[str, str]] = ()
    ) -> tuple[str, Usage]: ...
