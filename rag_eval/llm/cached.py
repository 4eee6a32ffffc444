"""The cached client: :class:`~rag_eval.llm.client.LLMClient` (retries, timeouts, the
circuit breaker, redaction) plus the response cache, accounting and a spending budget.
The judge, the deepeval engine, the LLM student and the hint judge all call through it.

Cache (:mod:`rag_eval.llm.cache`). Only valid replies are stored. A caller passes
``accept`` (content -> problem or None, e.g. "the verdict does not parse"); a reply it
rejects is returned for repair but never cached, and a cached row it rejects (left by an
older version, or a faulty run) is treated as a miss and overwritten by the next valid
answer, so a rerun after a faulty run heals without ``--rag-fresh``. A valid reply that
a *follow-up* request obtained (the judge's repair call, its retry at a larger
``max_tokens``) is stored under the original request's key too (``answers``), so
rerunning an unchanged suite makes zero calls after repairs as well.

No secret reaches the cache: every stored field is redacted again here (the client
redacted the reply; a server can echo a key in ``model`` or ``finish_reason`` too, or
write it as JSON ``\\u`` escapes), and a value that still holds a secret is not stored.

Accounting (:mod:`rag_eval.llm.usage`). Every call appends a record naming its tier,
case and trial; a call counts every attempt that reached the server, with its tokens.

Budget (:mod:`rag_eval.llm.budget`). Before a call that would go to the network its most
possible cost is reserved; at or over the budget the call raises
``JudgeCallError(kind="budget")``, while cached answers are still served; concurrency sends
no call that a serial run would not.

Thread safety. One instance serves every thread of a process: the records, the cache
connection and the reservations are each behind a lock, and the client's circuit
breaker and rate limiter (:mod:`rag_eval.llm.limiter`) are shared by all threads.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rag_eval.llm.budget import Budget, BudgetReached, Reserved
from rag_eval.llm.cache import ResponseCache, request_key
from rag_eval.llm.ledger import Ledger
from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, Usage
from rag_eval.llm.usage import REJECTED, CallRecord, cost_of, summarize, totals_by_tier

if TYPE_CHECKING:
    import httpx

    from rag_eval.llm.client import Accept, LLMClient
    from rag_eval.llm.endpoint import Endpoint
    from rag_eval.llm.policy import CallPolicy
    from rag_eval.util.redact import Redactor

log = logging.getLogger(__name__)

# The usage label of a call that names no tier: the judge tier, this client's first user.
DEFAULT_TIER = "judge"


class JudgeCallError(Exception):
    """A call through the cached client failed. ``kind``: "budget" (spending budget
    reached *before* the call: the case is not run), "malformed", "length" or a
    ``ChatError`` kind.

    The message is already redacted (``LLMClient`` redacts its messages).
    """

    def __init__(self, message: str, *, kind: str, case_id: str = "", attempts: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.case_id = case_id
        self.attempts = attempts


class ClientConfig(Protocol):
    """What :meth:`CachedChatClient.from_config` reads (e.g. ``rag_eval.judge.config.JudgeConfig``)."""

    @property
    def endpoint(self) -> Endpoint: ...

    @property
    def policy(self) -> CallPolicy: ...

    @property
    def cache_dir(self) -> Path: ...

    @property
    def fresh(self) -> bool: ...

    @property
    def prices(self) -> Mapping[str, tuple[float, float]]: ...

    @property
    def budget_usd(self) -> float | None: ...

    @property
    def budget_tokens(self) -> int | None: ...

    def missing_reason(self) -> str | None: ...


class CachedChatClient:
    """``LLMClient`` + response cache + accounting + budget (see module doc)."""

    def __init__(
        self,
        client: LLMClient,
        cache_dir: Path | None,
        *,
        fresh: bool = False,
        prices: Mapping[str, tuple[float, float]] | None = None,
        budget_usd: float | None = None,
        budget_tokens: int | None = None,
        ledger_dir: Path | None = None,
    ) -> None:
        self.client = client
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.fresh = fresh
        self.prices: dict[str, tuple[float, float]] = dict(prices or {})
        ledger = Ledger(ledger_dir) if ledger_dir is not None else None
        self.budget = Budget(budget_usd, budget_tokens, self.prices, ledger, self._spent_here)
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()
        self._warned_unpriced: set[str] = set()

    @classmethod
    def from_config(
        cls,
        cfg: ClientConfig,
        *,
        ledger_dir: Path | None = None,
        redactor: Redactor | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> CachedChatClient:
        """Build from a config such as :class:`rag_eval.judge.config.JudgeConfig`
        (raises ``ConfigError`` if its endpoint is not set)."""
        from rag_eval.core.errors import ConfigError
        from rag_eval.llm.client import LLMClient  # the openai SDK costs ~1 s to import: only when calling

        reason = cfg.missing_reason()
        if reason:
            raise ConfigError(reason)
        return cls(
            LLMClient(cfg.endpoint, cfg.policy, redactor=redactor, transport=transport),
            cfg.cache_dir,
            fresh=cfg.fresh,
            prices=cfg.prices,
            budget_usd=cfg.budget_usd,
            budget_tokens=cfg.budget_tokens,
            ledger_dir=ledger_dir,
        )

    @property
    def redactor(self) -> Redactor:
        return self.client.redactor

    def __repr__(self) -> str:  # never the key
        return f"CachedChatClient({self.client!r}, cache={self.cache.path if self.cache else None}, fresh={self.fresh})"

    # --- the call -----------------------------------------------------------------------
    def complete(
        self,
        req: ChatRequest,
        *,
        case_id: str = "",
        tier: str = DEFAULT_TIER,
        trial: int = 0,
        accept: Accept | None = None,
        answers: ChatRequest | None = None,
    ) -> ChatResponse:
        """Cached answer if there is a valid one (and not ``fresh``), else a budgeted call.

        ``accept`` (content -> problem or None) decides what is valid; ``answers`` is the
        request this one follows up (a repair): a valid reply is cached for both, and the
        call counts as a repair in :func:`~rag_eval.llm.usage.summarize`.
        """
        start = time.monotonic()
        key = request_key(req, trial)
        hit, replace = self._lookup(key, req, accept)
        if hit is not None:
            self._append(CallRecord(case_id, tier, req.model, 0, 0, 0.0, True, time.monotonic() - start, trial=trial))
            return ChatResponse(hit.content, hit.usage, hit.model, hit.finish_reason, 0, time.monotonic() - start)
        try:
            reserved = self.budget.reserve(req, case_id)
        except BudgetReached as exc:
            raise JudgeCallError(str(exc), kind="budget", case_id=case_id) from None
        try:
            resp = self.client.complete(req, accept=accept)
        except ChatError as err:
            elapsed = time.monotonic() - start
            self._spend(
                self._record(req, err.usage, (case_id, tier, trial), elapsed, err.kind, err.requests, answers), reserved
            )
            raise JudgeCallError(str(err), kind=err.kind, case_id=case_id, attempts=err.attempts) from err
        except BaseException:
            self._spend(None, reserved)
            raise
        why = REJECTED if resp.rejected else ""
        self._spend(
            self._record(req, resp.usage, (case_id, tier, trial), resp.seconds, why, resp.requests, answers), reserved
        )
        if self.cache is not None and not resp.rejected:
            self._store(key, req, resp, replace=replace)
            if answers is not None:
                self._store(request_key(answers, trial), answers, resp, replace=True)
        return resp

    def _record(
        self,
        req: ChatRequest,
        usage: Usage,
        who: tuple[str, str, int],
        seconds: float,
        error: str,
        requests: int,
        answers: ChatRequest | None,
    ) -> CallRecord:
        """The record of a call that went to the network; ``who``: (case id, tier, trial)."""
        cost, priced = self._cost(req.model, usage)
        case_id, tier, trial = who
        return CallRecord(
            case_id,
            tier,
            req.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            cost,
            False,
            seconds,
            priced,
            error,
            requests,
            trial,
            usage.reported,
            answers is not None,
        )

    def _lookup(self, key: str, req: ChatRequest, accept: Accept | None) -> tuple[ChatResponse | None, bool]:
        """(a valid cached reply or None, whether a new answer replaces the row)."""
        if self.cache is None or self.fresh:
            return None, self.fresh
        hit = self._from_cache(key, req)
        if hit is not None and accept is not None and accept(hit.content):
            log.info("cache entry %s is not a valid reply; asking again", key[:12])
            return None, True
        return hit, False

    def _cost(self, model: str, usage: Usage) -> tuple[float, bool]:
        cost, priced = cost_of(self.prices, model, usage)
        if not priced and model not in self._warned_unpriced and self.budget_usd is not None:
            self._warned_unpriced.add(model)
            log.warning("model %r has no price: its calls count $0 toward budget_usd", model)
        return cost, priced

    def _from_cache(self, key: str, req: ChatRequest) -> ChatResponse | None:
        value = self.cache.get(key) if self.cache is not None else None
        if value is None:
            return None
        try:
            usage = value.get("usage") or {}
            return ChatResponse(
                content=str(value["content"]),
                usage=Usage(
                    int(usage.get("prompt_tokens", 0)),
                    int(usage.get("completion_tokens", 0)),
                    bool(usage.get("reported", True)),
                ),
                model=str(value.get("model") or req.model),
                finish_reason=value.get("finish_reason"),
                attempts=0,
                seconds=0.0,
            )
        except (KeyError, TypeError, ValueError):
            log.warning("cache entry %s has an unexpected shape; calling the endpoint again", key[:12])
            return None

    def _store(self, key: str, req: ChatRequest, resp: ChatResponse, *, replace: bool) -> None:
        value = self.redactor.obj(
            {
                "content": resp.content,
                "usage": {
                    "prompt_tokens": resp.usage.prompt_tokens,
                    "completion_tokens": resp.usage.completion_tokens,
                    "reported": resp.usage.reported,
                },
                "model": resp.model,
                "finish_reason": resp.finish_reason,
            }
        )
        model = self.redactor.text(req.model)
        if self.redactor.contains_secret(json.dumps(value, ensure_ascii=False) + model):  # never trust blindly
            log.warning("answer for model %r still contains a secret; not cached", model)
            return
        assert self.cache is not None
        try:
            self.cache.put(key, value, model=model, replace=replace)
        except (sqlite3.Error, OSError) as exc:
            # The answer is paid for and valid; a cache that cannot take it only costs a
            # repeat call next run, so warn instead of failing the case.
            log.warning("cache %s: could not store an answer (%s); it will be asked again", self.cache.path, exc)

    # --- budget (rag_eval.llm.budget) -----------------------------------------------------
    @property
    def budget_usd(self) -> float | None:
        return self.budget.usd

    @property
    def budget_tokens(self) -> int | None:
        return self.budget.tokens

    def spent(self) -> tuple[float, int]:
        """(USD, tokens) spent on real calls: run-wide with a ledger, else this process."""
        return self.budget.spent()

    def _spent_here(self) -> tuple[float, int]:
        with self._lock:
            live = [r for r in self._records if not r.cached]
        return sum(r.cost for r in live), sum(r.prompt_tokens + r.completion_tokens for r in live)

    # --- accounting ---------------------------------------------------------------------
    def _spend(self, rec: CallRecord | None, reserved: Reserved) -> None:
        """Record a call, then settle it with the budget (its spend counts before its reservation is released)."""
        if rec is not None:
            self._append(rec)
        self.budget.settle(rec, reserved)

    def _append(self, rec: CallRecord) -> None:
        with self._lock:
            self._records.append(rec)

    @property
    def records(self) -> list[CallRecord]:
        """A copy of every call made through this client, in order."""
        with self._lock:
            return list(self._records)

    def usage_for(self, case_id: str, tier: str | None = None, trial: int | None = None) -> dict[str, Any]:
        """:func:`~rag_eval.llm.usage.summarize` of the calls made for one case -- of one
        tier (``judge``, ``passk``) and one trial when given. Summing
        ``usage_for(case, tier)`` over the cases of a tier gives exactly ``totals()[tier]``."""
        return summarize(
            r
            for r in self.records
            if r.case_id == case_id and (tier is None or r.tier == tier) and (trial is None or r.trial == trial)
        )

    def totals(self) -> dict[str, dict[str, Any]]:
        """``{tier: {"calls", "first_attempts", "repairs", "retries", "cached_calls", "errors", ...}}``."""
        return totals_by_tier(self.records)

    # --- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        self.client.close()

    def __enter__(self) -> CachedChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
