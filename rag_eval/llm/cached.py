"""The cached client: :class:`~rag_eval.llm.client.LLMClient` plus the response cache,
accounting (:mod:`rag_eval.llm.usage`) and the spending budget (:mod:`rag_eval.llm.budget`).
The judge, the deepeval engine, the LLM student and the hint judge all call through it;
one instance serves every thread of a process (records, cache connection and
reservations each behind a lock).

The cache is one SQLite file, ``<cache_dir>/judge-cache.sqlite3``, because ``pytest -n
N`` runs N processes that write at once: rows are atomic, WAL lets readers run while one
process writes, ``busy_timeout`` queues writers, ``INSERT OR IGNORE`` makes two workers
answering the same request harmless, and a connection is never used across ``fork``.
The key (:func:`request_key`) is the request content plus the trial index, never the
base URL or key. Only valid replies are stored: a reply the caller's ``accept`` rejects
is returned for repair, never cached, and a cached row it rejects is a miss that the
next valid answer replaces. A valid reply to a repair (``answers``) is stored under the
original request's key too, so an unchanged rerun makes zero calls. Every stored field
is redacted again here (a server can echo a key in ``model`` or ``finish_reason``, or as
JSON ``\\u`` escapes), and a value that still holds a secret is not stored. docs/judge.md
says why this is not diskcache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from rag_eval.llm.budget import Budget, BudgetReached, Ledger, Reserved
from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, Usage
from rag_eval.llm.usage import REJECTED, CallRecord, cost_of, summarize, totals_by_tier

if TYPE_CHECKING:
    from rag_eval.llm.client import Accept, LLMClient
    from rag_eval.llm.endpoint import Endpoint
    from rag_eval.llm.policy import CallPolicy
    from rag_eval.util.redact import Redactor

log = logging.getLogger(__name__)
T = TypeVar("T")
DEFAULT_TIER = "judge"  # the usage label of a call that names no tier: the client's first user


CACHE_FILE = "judge-cache.sqlite3"
CACHE_VERSION = 1  # bump when the key or value layout changes: old rows then simply miss
BUSY_TIMEOUT_MS = 30_000
# Connections inherited across fork are parked here, never closed or used: closing one
# in the child could run SQLite's cleanup against locks and WAL state the parent owns.
_ABANDONED: list[sqlite3.Connection] = []


def request_key(req: ChatRequest, trial: int) -> str:
    """SHA-256 of the canonical request body plus the trial index; nothing about the endpoint."""
    body = {"v": CACHE_VERSION, "request": req.body(), "trial": trial}
    canon = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class ResponseCache:
    """``key -> JSON value`` in one SQLite file, safe for concurrent processes (module doc)."""

    def __init__(self, cache_dir: Path) -> None:
        self.path = Path(cache_dir) / CACHE_FILE
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self._conn is not None:  # inherited across fork: park it, open our own
            _ABANDONED.append(self._conn)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # Switching to WAL needs an exclusive lock and may report "locked" without
            # waiting when another process is creating the file at the same moment.
            _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
            conn.execute("PRAGMA synchronous=NORMAL")
            _retry_locked(
                lambda: conn.execute(
                    "CREATE TABLE IF NOT EXISTS responses ("
                    " key TEXT PRIMARY KEY, value TEXT NOT NULL, model TEXT NOT NULL, created REAL NOT NULL)"
                )
            )
        except sqlite3.Error as exc:
            conn.close()
            raise OSError(f"{self.path}: cannot open the judge cache ({exc}); delete the file to rebuild it") from exc
        self._conn, self._pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._connection().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        try:
            value = json.loads(row[0]) if row is not None else None
        except ValueError:
            log.warning("judge cache %s: unreadable entry %s ignored", self.path, key[:12])
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: Mapping[str, Any], *, model: str, replace: bool = False) -> None:
        """Store ``value`` in one transaction; an existing row wins unless ``replace``."""
        row = (key, json.dumps(dict(value), sort_keys=True, ensure_ascii=False), model, time.time())
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")  # the write lock up front: no deadlock upgrading a read lock
            try:
                conn.execute(f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO responses VALUES (?, ?, ?, ?)", row)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


def _retry_locked(fn: Callable[[], T], attempts: int = 50) -> T:
    """Run ``fn``; on SQLite "locked"/"busy" wait briefly and retry (about 5 s in all)."""
    for i in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc).lower() and "busy" not in str(exc).lower()) or i == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")  # pragma: no cover


class JudgeCallError(Exception):
    """A call through the cached client failed (message already redacted). ``kind``:
    "budget" (spending budget reached *before* the call: the case is not run),
    "malformed", "length" or a ``ChatError`` kind."""

    def __init__(self, message: str, *, kind: str, case_id: str = "", attempts: int = 0) -> None:
        super().__init__(message)
        self.kind, self.case_id, self.attempts = kind, case_id, attempts


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
    """``LLMClient`` + response cache + accounting + budget (module doc)."""

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
        self.client, self.fresh = client, fresh
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
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
    ) -> CachedChatClient:
        """Build from a config such as ``JudgeConfig`` (``ConfigError`` if its endpoint is not set)."""
        from rag_eval.core.errors import ConfigError
        from rag_eval.llm.client import LLMClient  # the openai SDK costs ~1 s to import: only when calling

        reason = cfg.missing_reason()
        if reason:
            raise ConfigError(reason)
        return cls(
            LLMClient(cfg.endpoint, cfg.policy, redactor=redactor),
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
        call counts as a repair in :func:`~rag_eval.llm.usage.summarize`."""
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
        who = (case_id, tier, trial, answers is not None)
        try:
            resp = self.client.complete(req, accept=accept)
        except ChatError as err:
            self._spend(self._record(req, err.usage, who, time.monotonic() - start, err.kind, err.requests), reserved)
            raise JudgeCallError(str(err), kind=err.kind, case_id=case_id, attempts=err.attempts) from err
        except BaseException:
            self._spend(None, reserved)
            raise
        why = REJECTED if resp.rejected else ""
        self._spend(self._record(req, resp.usage, who, resp.seconds, why, resp.requests), reserved)
        if self.cache is not None and not resp.rejected:
            self._store(key, req, resp, replace=replace)
            if answers is not None:
                self._store(request_key(answers, trial), answers, resp, replace=True)
        return resp

    def _record(
        self, req: ChatRequest, usage: Usage, who: tuple[str, str, int, bool], seconds: float, error: str, sent: int
    ) -> CallRecord:
        """The record of a call that went to the network; ``who``: (case id, tier, trial, repair)."""
        cost, priced = cost_of(self.prices, req.model, usage)
        if not priced and req.model not in self._warned_unpriced and self.budget_usd is not None:
            self._warned_unpriced.add(req.model)
            log.warning("model %r has no price: its calls count $0 toward budget_usd", req.model)
        case_id, tier, trial, repair = who
        p, c = usage.prompt_tokens, usage.completion_tokens
        return CallRecord(
            case_id, tier, req.model, p, c, cost, False, seconds, priced, error, sent, trial, usage.reported, repair
        )

    def _lookup(self, key: str, req: ChatRequest, accept: Accept | None) -> tuple[ChatResponse | None, bool]:
        """(a valid cached reply or None, whether a new answer replaces the row)."""
        if self.cache is None or self.fresh:
            return None, self.fresh
        value = self.cache.get(key)
        if value is None:
            return None, False
        try:
            u = value.get("usage") or {}
            usage = Usage(
                int(u.get("prompt_tokens", 0)), int(u.get("completion_tokens", 0)), bool(u.get("reported", True))
            )
            model = str(value.get("model") or req.model)
            hit = ChatResponse(str(value["content"]), usage, model, value.get("finish_reason"), attempts=0, seconds=0.0)
        except (KeyError, TypeError, ValueError):
            log.warning("cache entry %s has an unexpected shape; calling the endpoint again", key[:12])
            return None, False
        if accept is not None and accept(hit.content):
            log.info("cache entry %s is not a valid reply; asking again", key[:12])
            return None, True
        return hit, False

    def _store(self, key: str, req: ChatRequest, resp: ChatResponse, *, replace: bool) -> None:
        usage = {"prompt_tokens": resp.usage.prompt_tokens, "completion_tokens": resp.usage.completion_tokens}
        value = self.redactor.obj(
            {
                "content": resp.content,
                "usage": {**usage, "reported": resp.usage.reported},
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

    @property
    def budget_usd(self) -> float | None:
        return self.budget.usd

    @property
    def budget_tokens(self) -> int | None:
        return self.budget.tokens

    def spent(self) -> tuple[float, int]:
        """(USD, tokens) spent on real calls: run-wide with a ledger, else this process."""
        return self.budget.spent()

    def share_budget(self, other: CachedChatClient) -> None:
        """Spend against ``other``'s budget from now on (its limits, ledger and calls in
        flight), which counts this client's calls too: one budget for a run's clients."""
        self.budget = other.budget.counting(self._spent_here)

    def share_endpoint(self, other: CachedChatClient) -> bool:
        """One breaker and rate limiter with ``other`` when both reach the same server
        (:meth:`~rag_eval.llm.client.LLMClient.share_endpoint`)."""
        return self.client.share_endpoint(other.client)

    def _spent_here(self) -> tuple[float, int]:
        live = [r for r in self.records if not r.cached]
        return sum(r.cost for r in live), sum(r.prompt_tokens + r.completion_tokens for r in live)

    def _spend(self, rec: CallRecord | None, reserved: Reserved) -> None:
        """Record a call, then settle it (its spend counts before its reservation is released)."""
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
        """:func:`~rag_eval.llm.usage.summarize` of one case's calls (of one tier and trial
        when given); summed over a tier's cases it gives exactly ``totals()[tier]``."""
        return summarize(
            r
            for r in self.records
            if r.case_id == case_id and (tier is None or r.tier == tier) and (trial is None or r.trial == trial)
        )

    def totals(self) -> dict[str, dict[str, Any]]:
        """``{tier: summarize(that tier's records)}``."""
        return totals_by_tier(self.records)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        self.client.close()

    def __enter__(self) -> CachedChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
