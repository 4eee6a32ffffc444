"""Where the judge's chat client used to live: it moved to :mod:`rag_eval.llm`.

:mod:`rag_eval.llm.cached` (the cached client and its budget), :mod:`rag_eval.llm.cache`
(the SQLite response cache), :mod:`rag_eval.llm.ledger` (run-wide spending) and
:mod:`rag_eval.llm.usage` (accounting). The names are re-exported here for the callers
that still import them from this module.
"""

from __future__ import annotations

from rag_eval.llm.cache import CACHE_FILE, CACHE_VERSION, ResponseCache, request_key
from rag_eval.llm.cached import CachedChatClient, JudgeCallError
from rag_eval.llm.ledger import LEDGER_FILE, Ledger
from rag_eval.llm.usage import CallRecord, cost_of, iter_records, summarize, totals_by_tier

__all__ = [
    "CACHE_FILE", "CACHE_VERSION", "LEDGER_FILE", "CachedChatClient", "CallRecord", "JudgeCallError", "Ledger",
    "ResponseCache", "cost_of", "iter_records", "request_key", "summarize", "totals_by_tier",
]
