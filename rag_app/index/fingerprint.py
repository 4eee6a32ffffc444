"""The identity of a built index: what went into it, hashed.

Two builds share a fingerprint exactly when they would produce the same index: same
corpus bytes, same chunking settings, same embedding model, same tokenizer rules and
the same on-disk layout. Anything else gets its own directory, so a changed corpus or
setting can never be served a stale index, and switching back reuses the old one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from rag_app.text import DEFAULT_TOKENIZER

# Bump when the layout of an index directory or what is indexed changes (for example
# ``indexed_text``), so that indexes written by older code are rebuilt, not misread.
INDEX_FORMAT_VERSION = 1


def canonical_json(value: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal inputs give equal strings on every run."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"index fingerprint: chunk_config must hold only JSON values (str, int, float, bool, None, "
            f"lists, dicts with str keys) and no NaN: {exc}"
        ) from exc


def index_fingerprint(
    corpus_hash: str,
    chunk_config: Mapping[str, Any],
    embedding_model_id: str,
    *,
    tokenizer_signature: str | None = None,
) -> str:
    """First 16 hex digits of sha256 over the canonical JSON of everything that shapes the index.

    ``tokenizer_signature`` defaults to the default tokenizer's (``rag_app.text``), which
    builds the BM25 side; pass another one only when indexing with another tokenizer.
    """
    if not corpus_hash:
        raise ValueError("index_fingerprint: corpus_hash is empty; hash the corpus files first")
    if not embedding_model_id:
        raise ValueError("index_fingerprint: embedding_model_id is empty; the embedder must name its model")
    payload = {
        "index_format": INDEX_FORMAT_VERSION,
        "corpus_hash": corpus_hash,
        "chunk_config": dict(chunk_config),
        "embedding_model_id": embedding_model_id,
        "tokenizer": tokenizer_signature if tokenizer_signature is not None else DEFAULT_TOKENIZER.signature,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:16]
