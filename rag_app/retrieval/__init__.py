"""Retrieval stages after the two retrievers: fusion, reranking, context truncation.

Each is a small pure function or class so that it can be tested, and swapped, alone.
"""

from __future__ import annotations

from rag_app.retrieval.rerank_http import HttpReranker
from rag_app.retrieval.rerank_local import LocalReranker, LocalScore
from rag_app.retrieval.rerankers import NoReranker, apply_rerank, make_reranker
from rag_app.retrieval.rrf import rrf_fuse
from rag_app.retrieval.truncate import truncate_context

__all__ = [
    "HttpReranker",
    "LocalReranker",
    "LocalScore",
    "NoReranker",
    "apply_rerank",
    "make_reranker",
    "rrf_fuse",
    "truncate_context",
]
