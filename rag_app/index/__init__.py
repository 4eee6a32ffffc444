"""The hybrid index: BM25 over child chunks, Chroma vectors of child chunks, parents for context.

``build_or_load_index`` is the entry point; it stores each index under a fingerprint of
its inputs and reuses it while they do not change. (chromadb is imported only when a
vector store is opened.)
"""

from __future__ import annotations

from rag_app.index.bm25 import BM25Index, BM25Params
from rag_app.index.build import Index, IndexStats, build_or_load_index, indexed_text, load_index
from rag_app.index.fingerprint import INDEX_FORMAT_VERSION, index_fingerprint
from rag_app.index.progress import Progress, ProgressCallback
from rag_app.index.vector_store import ChromaVectorStore

__all__ = [
    "BM25Index",
    "BM25Params",
    "ChromaVectorStore",
    "INDEX_FORMAT_VERSION",
    "Index",
    "IndexStats",
    "Progress",
    "ProgressCallback",
    "build_or_load_index",
    "index_fingerprint",
    "indexed_text",
    "load_index",
]
