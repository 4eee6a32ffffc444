"""Corpus loading (Markdown books, JSONL) and structure-aware parent/child chunking."""

from __future__ import annotations

from rag_app.corpus.chunker import ChunkConfig, chunk_document, chunk_documents
from rag_app.corpus.jsonl import load_jsonl_file, parse_jsonl_line
from rag_app.corpus.loader import corpus_hash, load_corpus
from rag_app.corpus.markdown import load_markdown_file, parse_markdown

__all__ = [
    "ChunkConfig",
    "chunk_document",
    "chunk_documents",
    "corpus_hash",
    "load_corpus",
    "load_jsonl_file",
    "load_markdown_file",
    "parse_jsonl_line",
    "parse_markdown",
]
