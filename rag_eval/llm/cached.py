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

Budget. Before a call that would go to the network, the spent cost/tokens are compared
with the budget; at or over it the call raises ``JudgeCallError(kind="budget")``, while
cached answers are still served. Without ``ledger_dir`` the spending is this process's
own (per xdist worker). With ``ledger_dir`` (:mod:`rag_eval.llm.ledger`) spending is
summed run-wide. The check happens before the call, so N workers can each start one
call when the budget is nearly used up: the overshoot is at most one call per worker.
Threads of one process reserve before sending (the calls in flight count as spent), so
concurrency adds no overshoot beyond that of a serial run.

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

from rag_eval.llm.cache import ResponseCache, request_key
from rag_eval.llm.ledger import Ledger
from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, Usage
from rag_eval.llm.usage import REJECTED, CallRecord, cost_of, summarize, totals_by_tier
from rag_eval.tier_names import JUDGE

if TYPE_CHECKING:
    import httpx

    from rag_eval.llm.client import Accept, LLMClient
    from rag_eval.llm.endpoint import Endpoint
    from rag_eval.llm.policy import CallPolicy
    from rag_eval.redact import Redactor

log = logging.getLogger(__name__)


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
        self.budget_usd = budget_usd
        self.budget_tokens = budget_tokens
        self.ledger = Ledger(ledger_dir) if ledger_dir is not None else None
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()
        self._warned_unpriced: set[str] = set()
        self._budget_lock = threading.Lock()
        self._in_flight = (0.0, 0)  # (USD, tokens) reserved by calls being sent
        self._largest = (0.0, 0)  # the most one call has cost so far

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
        from rag_eval.errors import ConfigError
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
        tier: str = JUDGE,
        trial: int = 0,
        accept: Accept | None = None,
        answers: ChatRequest | None = None,
    ) -> ChatResponse:
        """Cached answer if there is a valid one (and not ``fresh``), else a budgeted call.

        ``accept`` (content -> problem or None) decides what is valid; ``answers`` is the
        request this one follows up (a repair): a valid reply is cached for both.
        """
        start = time.monotonic()
        key = request_key(req, trial)
        hit, replace = self._lookup(key, req, accept)
        if hit is not None:
            self._append(CallRecord(case_id, tier, req.model, 0, 0, 0.0, True, time.monotonic() - start, trial=trial))
            return ChatResponse(hit.content, hit.usage, hit.model, hit.finish_reason, 0, time.monotonic() - start)
        reserved = self._reserve(req, case_id)
        try:
            resp = self.client.complete(req, accept=accept)
        except ChatError as err:
            self._release(reserved)
            cost, priced = self._cost(req.model, err.usage)
            self._spend(
                CallRecord(
                    case_id,
                    tier,
                    req.model,
                    err.usage.prompt_tokens,
                    err.usage.completion_tokens,
                    cost,
                    False,
                    time.monotonic() - start,
                    priced,
                    err.kind,
                    err.requests,
                    trial,
                    err.usage.reported,
                )
            )
            raise JudgeCallError(str(err), kind=err.kind, case_id=case_id, attempts=err.attempts) from err
        self._release(reserved)
        cost, priced = self._cost(req.model, resp.usage)
        self._spend(
            CallRecord(
                case_id,
                tier,
                req.model,
                resp.usage.prompt_tokens,
                resp.usage.completion_tokens,
                cost,
                False,
                resp.seconds,
                priced,
                REJECTED if resp.rejected else "",
                resp.requests,
                trial,
                resp.usage.reported,
            )
        )
        if self.cache is not None and not resp.rejected:
            self._store(key, req, resp, replace=replace)
            if answers is not None:
                self._store(request_key(answers, trial), answers, resp, replace=True)
        return resp

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

    # --- budget -------------------------------------------------------------------------
    def spent(self) -> tuple[float, int]:
        """(USD, tokens) spent on real calls: run-wide with a ledger, else this process."""
        if self.ledger is not None:
            return self.ledger.spent()
        with self._lock:
            live = [r for r in self._records if not r.cached]
        return sum(r.cost for r in live), sum(r.prompt_tokens + r.completion_tokens for r in live)

    def _reserve(self, req: ChatRequest, case_id: str) -> tuple[float, int]:
        """Check the budget counting the calls in flight, and reserve this call's likely
        cost (the most a call has cost so far, at least an estimate from the request), so
        that threads sending at once never overshoot it more than one serial call would."""
        if self.budget_usd is None and self.budget_tokens is None:
            return 0.0, 0
        tokens = max(self._largest[1], sum(len(m["content"]) for m in req.messages) // 4 + (req.max_tokens or 0))
        usd = max(self._largest[0], cost_of(self.prices, req.model, Usage(tokens, 0))[0])
        with self._budget_lock:
            self._check_budget(req, case_id, self._in_flight)
            self._in_flight = (self._in_flight[0] + usd, self._in_flight[1] + tokens)
        return usd, tokens

    def _release(self, reserved: tuple[float, int]) -> None:
        if reserved != (0.0, 0):
            with self._budget_lock:
                self._in_flight = (self._in_flight[0] - reserved[0], self._in_flight[1] - reserved[1])

    def _check_budget(self, req: ChatRequest, case_id: str, in_flight: tuple[float, int] = (0.0, 0)) -> None:
        if self.budget_usd is None and self.budget_tokens is None:
            return
        cost, tokens = self.spent()
        cost, tokens = cost + in_flight[0], tokens + in_flight[1]
        scope = "run-wide" if self.ledger is not None else "in this process"
        if self.budget_usd is not None and cost >= self.budget_usd:
            raise JudgeCallError(
                f"judge budget_usd ${self.budget_usd:g} reached: ${cost:.6f} spent {scope}; "
                f"no new call for case {case_id!r} (model {req.model!r}); cached answers are still used",
                kind="budget",
                case_id=case_id,
            )
        if self.budget_tokens is not None and tokens >= self.budget_tokens:
            raise JudgeCallError(
                f"judge budget_tokens {self.budget_tokens} reached: {tokens} tokens spent {scope}; "
                f"no new call for case {case_id!r} (model {req.model!r}); cached answers are still used",
                kind="budget",
                case_id=case_id,
            )

    # --- accounting ---------------------------------------------------------------------
    def _spend(self, rec: CallRecord) -> None:
        self._append(rec)
        with self._budget_lock:
            self._largest = (
                max(self._largest[0], rec.cost),
                max(self._largest[1], rec.prompt_tokens + rec.completion_tokens),
            )
        if self.ledger is not None and (rec.cost or rec.prompt_tokens or rec.completion_tokens):
            self.ledger.add(rec.cost, rec.prompt_tokens + rec.completion_tokens)

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
        """``{tier: {"calls", "first_attempts", "retries", "cached_calls", "errors", ...}}``."""
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
