"""Preset: Dify's knowledge-base retrieval API as an HTTP adapter configuration.

``POST {DIFY_BASE_URL}/datasets/{DIFY_DATASET_ID}/retrieve`` with
``Authorization: Bearer $DIFY_API_KEY`` (Dify's documented request; the base URL
includes ``/v1``, default ``https://api.dify.ai/v1``; ``/v1`` is added if missing). The
answer's ``records[]`` are read as ranked items: ``segment.id``, ``segment.content``,
``score``, ``segment.document_id``; with ``parent_child = true`` the matched
``records[].child_chunks[]`` (``id``, ``content``, ``score``) are the items, each
carrying its parent segment's document and id. Retrieval only: Dify's retrieve API
gives no answer, so the answer tiers skip with that reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.http_config import HttpConfig

DIFY_KEYS: tuple[str, ...] = (
    "base_url",
    "dataset_id",
    "api_key_env",
    "search_method",
    "top_k",
    "reranking_enable",
    "score_threshold_enabled",
    "score_threshold",
    "parent_child",
    "timeout",
    "max_retries",
)
SEARCH_METHODS: tuple[str, ...] = ("hybrid_search", "semantic_search", "full_text_search", "keyword_search")
DEFAULT_BASE_URL = "https://api.dify.ai/v1"


def dify_http_table(table: Mapping[str, Any], source: str, env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The ``[dify]`` options (all optional) as the HTTP adapter's configuration tables."""
    where = f"{source} [dify]"
    unknown = sorted(set(table) - set(DIFY_KEYS))
    if unknown:
        raise AdapterConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(DIFY_KEYS)}"
        )
    base = str(table.get("base_url") or (env.get("DIFY_BASE_URL") or "").strip() or DEFAULT_BASE_URL).rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    dataset = str(table.get("dataset_id") or "${DIFY_DATASET_ID}")
    key_var = str(table.get("api_key_env") or "DIFY_API_KEY")
    method = str(table.get("search_method", "hybrid_search"))
    if method not in SEARCH_METHODS:
        raise AdapterConfigError(f"{where} search_method = {method!r}; valid: {', '.join(SEARCH_METHODS)}")
    top_k = table.get("top_k", 10)
    retrieval_model: dict[str, Any] = {
        "search_method": method,
        "reranking_enable": bool(table.get("reranking_enable", False)),
        "top_k": "{top_k}",
        "score_threshold_enabled": bool(table.get("score_threshold_enabled", False)),
    }
    if "score_threshold" in table:
        retrieval_model["score_threshold"] = table["score_threshold"]
    if table.get("parent_child", False):
        fields = {
            "ids": "records[].child_chunks[].id",
            "texts": "records[].child_chunks[].content",
            "scores": "records[].child_chunks[].score",
            "doc_ids": "records[].segment.document_id",
            "metadata": {"parent_id": "records[].segment.id", "title": "?records[].segment.document.name"},
        }
    else:
        fields = {
            "ids": "records[].segment.id",
            "texts": "records[].segment.content",
            "scores": "records[].score",
            "doc_ids": "records[].segment.document_id",
            "metadata": {"title": "?records[].segment.document.name", "position": "?records[].segment.position"},
        }
    http: dict[str, Any] = {"headers": {"Authorization": f"Bearer ${{{key_var}}}"}, "top_k": top_k}
    for key in ("timeout", "max_retries"):
        if key in table:
            http[key] = table[key]
    return {
        "http": http,
        "retrieve": {
            "url": f"{base}/datasets/{dataset}/retrieve",
            "method": "POST",
            "body": {"query": "{question}", "retrieval_model": retrieval_model},
            "fields": fields,
        },
    }


def dify_config(table: Mapping[str, Any], source: str, env: Mapping[str, str] = os.environ) -> HttpConfig:
    return HttpConfig.parse(dify_http_table(table, source, env), source, env, preset="dify")
