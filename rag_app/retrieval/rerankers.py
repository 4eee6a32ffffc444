"""Reranker selection, the pass-through reranker, and applying scores to a fused list.

The two real rerankers live in their own modules (``rerank_http``, ``rerank_local``);
this module is what the pipeline imports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from rag_app.errors import RerankError, unknown_name
from rag_app.interfaces import Embedder, Reranker
from rag_app.retrieval.rerank_http import HttpReranker
from rag_app.retrieval.rerank_local import LocalReranker
from rag_app.settings import RERANKERS, Settings
from rag_app.types import Chunk, Hit


class NoReranker:
    """Keeps the fused order. ``passthrough`` lets the pipeline skip the stage entirely."""

    name = "none"
    passthrough = True

    def rerank(self, query: str, chunks: Sequence[Chunk], first_stage: Sequence[float] | None = None) -> list[float]:
        """Scores n, n-1, ..., 1: the order given, expressed as scores."""
        n = len(chunks)
        return [float(n - i) for i in range(n)]


def apply_rerank(fused: Sequence[Hit], scores: Sequence[float]) -> list[Hit]:
    """Re-rank ``fused`` by ``scores`` (one per hit, same order); ties keep the fused order.

    ``-inf`` is a valid score (an HTTP reranker's "not returned"); NaN is not, since it
    has no place in an order. Both mistakes raise ``RerankError`` so the pipeline
    degrades to the fused order instead of crashing.
    """
    if len(scores) != len(fused):
        raise RerankError(f"reranker returned {len(scores)} scores for {len(fused)} chunks")
    for i, s in enumerate(scores):
        if math.isnan(s):
            raise RerankError(f"reranker returned NaN for chunk {fused[i].chunk_id!r}")
    order = sorted(range(len(fused)), key=lambda i: (-scores[i], fused[i].rank, i))
    return [Hit(chunk_id=fused[i].chunk_id, score=float(scores[i]), rank=r + 1) for r, i in enumerate(order)]


def make_reranker(
    settings: Settings,
    embedder: Embedder,
    tokenize: Callable[[str], list[str]],
    *,
    idf: Mapping[str, float] | None = None,
    env: Mapping[str, str] | None = None,
    text_of: Callable[[Chunk], str] | None = None,
) -> Reranker:
    """The reranker named by ``settings.reranker`` ("none", "local" or "http")."""
    name = settings.reranker
    if name == "none":
        return NoReranker()
    if name == "local":
        return LocalReranker(embedder, tokenize, idf=idf, text_of=text_of)
    if name == "http":
        return HttpReranker.from_env(settings, env)
    raise unknown_name("reranker", name, RERANKERS, "reranker / RAG_APP_RERANKER")
