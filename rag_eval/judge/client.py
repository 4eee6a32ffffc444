"""The judge's chat client: a disk cache, token/cost accounting and a budget on top of
:class:`rag_eval.llm.client.LLMClient` (which does retries, timeouts, the circuit
breaker and redaction).

Cache. One SQLite file, ``<cache_dir>/judge-cache.sqlite3``, because ``pytest -n N``
runs N processes that write at the same time: SQLite gives atomic rows (no torn or lost
entries) where a directory of JSON files would need its own locking. WAL mode lets
readers run while one process writes, ``busy_timeout`` makes writers queue instead of
failing, ``BEGIN IMMEDIATE`` takes the write lock up front (no deadlock upgrading a read
lock), and ``INSERT OR IGNORE`` makes two workers answering the same request at once
harmless: the first row wins and both answers were valid. A connection is never used
across ``fork``: the cache notices a new pid and opens a fresh one.

The key is the SHA-256 of the canonical JSON of the request body (model, messages,
temperature, response format, extra parameters) plus the trial index. The base URL and
the API key are *not* part of it: the same question to the same model is the same
question whether it goes through a proxy or not, and neither secret ends up on disk.
The trial index keeps repeated trials independent (trial 1 is not served trial 0's
answer). Stored per row: content, usage, model name, finish reason.

Only valid replies are stored. A caller passes ``accept`` (content -> problem or None,
e.g. "the verdict does not parse"); a reply it rejects is returned for repair but never
cached, and a cached row it rejects (left by an older version, or a faulty run) is
treated as a miss and overwritten by the next valid answer, so a rerun after a faulty
run heals without ``--rag-fresh``. The content was redacted by the client before it gets
here: no secret reaches the cache.

Accounting. Every call appends a :class:`CallRecord` (JSON-serialisable so pytest-xdist
workers can ship them to the controller on test reports) naming the tier, the case and
the trial that made it, so :meth:`CachedChatClient.usage_for` sums exactly one case of
one tier (a passk trial's judge calls are never a judge case's). Cached answers cost
nothing and count no tokens: the totals say what *this run* spent. A server that sends
no ``usage`` gives records with ``usage_reported=False``, counted as
``calls_without_usage`` so a 0 there reads as "unknown", not "free".

Budget. Before a call that would go to the network, the spent cost/tokens are compared
with the budget; at or over it the call raises ``JudgeCallError(kind="budget")``, while
cached answers are still served. Without ``ledger_dir`` the spending is this process's
own (per xdist worker). With ``ledger_dir`` (one directory per run, shared by all
workers) spending is summed in a ledger file updated under ``fcntl.flock``, so the
budget is global. The check happens before the call, so N workers can each start one
call when the budget is nearly used up: the overshoot is at most one call per worker.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, TypeVar

from rag_eval.llm.messages import ChatError, ChatRequest, ChatResponse, Usage

try:  # POSIX only; the global ledger is optional
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import httpx

    from rag_eval.judge.config import JudgeConfig
    from rag_eval.llm.client import Accept, LLMClient
    from rag_eval.redact import Redactor

log = logging.getLogger(__name__)
T = TypeVar("T")

CACHE_FILE = "judge-cache.sqlite3"
LEDGER_FILE = "judge-ledger.json"
CACHE_VERSION = 1  # bump when the key or value layout changes: old rows then simply miss
BUSY_TIMEOUT_MS = 30_000

# Connections inherited across fork are parked here, never closed or used: closing one
# in the child could run SQLite's cleanup against locks and WAL state the parent owns.
_ABANDONED: list[sqlite3.Connection] = []


class JudgeCallError(Exception):
    """A judge call failed. ``kind``: "budget" (spending budget reached *before* the
    call: the case is not run), "malformed", "length" or a ``ChatError`` kind.

    The message is already redacted (``LLMClient`` redacts its messages).
    """

    def __init__(self, message: str, *, kind: str, case_id: str = "", attempts: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.case_id = case_id
        self.attempts = attempts


@dataclass(frozen=True)
class CallRecord:
    """One judge call as accounting sees it.

    ``cached`` calls have zero tokens and cost (nothing was spent in this run).
    ``priced`` is False when the model has no price: its ``cost`` is 0 but unknown, not
    free. ``error`` is the failure kind of a call that reached the endpoint and failed.
    ``usage_reported`` is False when the server sent no token counts.
    """

    case_id: str
    tier: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    cached: bool
    seconds: float
    priced: bool = True
    error: str = ""
    attempts: int = 0
    trial: int = 0
    usage_reported: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallRecord:
        """Inverse of :meth:`to_dict`; unknown keys are ignored (newer writer), missing
        required keys raise ``ValueError`` naming them."""
        names = {f.name for f in fields(cls)}
        required = ("case_id", "tier", "model", "prompt_tokens", "completion_tokens", "cost", "cached", "seconds")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"CallRecord.from_dict: missing key(s) {missing} in {dict(data)!r}")
        return cls(**{k: v for k, v in data.items() if k in names})


def summarize(records: Iterable[CallRecord]) -> dict[str, Any]:
    """calls, cached_calls, errors, prompt_tokens, completion_tokens, cost_usd (+ alias
    ``cost``), unpriced_calls, calls_without_usage over ``records``."""
    out: dict[str, Any] = {
        "calls": 0, "cached_calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "cost_usd": 0.0, "unpriced_calls": 0, "calls_without_usage": 0,
    }
    for r in records:
        out["calls"] += 1
        out["cached_calls"] += int(r.cached)
        out["errors"] += int(bool(r.error))
        out["prompt_tokens"] += r.prompt_tokens
        out["completion_tokens"] += r.completion_tokens
        out["cost_usd"] += r.cost
        out["unpriced_calls"] += int(not r.priced and not r.cached)
        out["calls_without_usage"] += int(not r.usage_reported and not r.cached and not r.error)
    out["cost"] = out["cost_usd"]
    return out


def totals_by_tier(records: Iterable[CallRecord]) -> dict[str, dict[str, Any]]:
    """``{tier: summarize(records of that tier)}``; also for records merged from workers."""
    by: dict[str, list[CallRecord]] = {}
    for r in records:
        by.setdefault(r.tier, []).append(r)
    return {tier: summarize(rs) for tier, rs in sorted(by.items())}


def cost_of(prices: Mapping[str, tuple[float, float]], model: str, usage: Usage) -> tuple[float, bool]:
    """(USD, priced) for ``usage`` of ``model``; prices are USD per 1M tokens."""
    price = prices.get(model)
    if price is None:
        return 0.0, False
    return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000, True


def request_key(req: ChatRequest, trial: int) -> str:
    """Cache key: request content + trial index; nothing about the endpoint."""
    canon = json.dumps(
        {"v": CACHE_VERSION, "request": req.body(), "trial": trial},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class ResponseCache:
    """``key -> JSON value`` in SQLite, safe for concurrent processes (see module doc)."""

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
            self._conn = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # Switching to WAL needs an exclusive lock and may report "locked" without
            # waiting when another process is creating the file at the same moment.
            _retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
            conn.execute("PRAGMA synchronous=NORMAL")
            _retry_locked(lambda: conn.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, value TEXT NOT NULL, model TEXT NOT NULL, created REAL NOT NULL)"
            ))
        except sqlite3.Error as exc:
            conn.close()
            raise OSError(f"{self.path}: cannot open the judge cache ({exc}); delete the file to rebuild it") from exc
        self._conn, self._pid = conn, os.getpid()
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._connection().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            log.warning("judge cache %s: unreadable entry %s ignored", self.path, key[:12])
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: Mapping[str, Any], *, model: str, replace: bool = False) -> None:
        """Store ``value``; an existing row wins unless ``replace`` (the --rag-fresh run)."""
        text = json.dumps(dict(value), sort_keys=True, ensure_ascii=False)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(f"{verb} INTO responses (key, value, model, created) VALUES (?, ?, ?, ?)",
                             (key, text, model, time.time()))
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


class Ledger:
    """Run-wide spending shared by processes: ``{"cost_usd", "tokens"}`` in a JSON file.

    Updates hold an exclusive ``flock`` on a side lock file and replace the ledger
    atomically (write temp + ``os.replace``), so readers never see half a file.
    """

    def __init__(self, ledger_dir: Path) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            raise OSError("a shared judge ledger needs fcntl (POSIX); drop ledger_dir to budget per process")
        self.dir = Path(ledger_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / LEDGER_FILE
        self._lock_path = self.dir / (LEDGER_FILE + ".lock")

    def _locked(self) -> _FileLock:
        return _FileLock(self._lock_path)

    def _read(self) -> tuple[float, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return 0.0, 0
        except (OSError, ValueError) as exc:
            raise OSError(f"{self.path}: unreadable judge ledger ({exc}); delete it to reset spending") from exc
        return float(data.get("cost_usd", 0.0)), int(data.get("tokens", 0))

    def spent(self) -> tuple[float, int]:
        with self._locked():
            return self._read()

    def add(self, cost: float, tokens: int) -> None:
        with self._locked():
            old_cost, old_tokens = self._read()
            tmp = self.path.with_name(f"{LEDGER_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"cost_usd": old_cost + cost, "tokens": old_tokens + tokens}), encoding="utf-8")
            os.replace(tmp, self.path)


class _FileLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    def __enter__(self) -> _FileLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)


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

    @classmethod
    def from_config(
        cls,
        cfg: JudgeConfig,
        *,
        ledger_dir: Path | None = None,
        redactor: Redactor | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> CachedChatClient:
        """Build from a :class:`rag_eval.judge.config.JudgeConfig` (raises ConfigError if unset)."""
        from rag_eval.judge.config import make_chat_client

        return cls(
            make_chat_client(cfg, redactor=redactor, transport=transport), cfg.cache_dir, fresh=cfg.fresh,
            prices=cfg.prices,
            budget_usd=cfg.budget_usd, budget_tokens=cfg.budget_tokens, ledger_dir=ledger_dir,
        )

    def __repr__(self) -> str:  # never the key
        return f"CachedChatClient({self.client!r}, cache={self.cache.path if self.cache else None}, fresh={self.fresh})"

    # --- the call -----------------------------------------------------------------------
    def complete(
        self,
        req: ChatRequest,
        *,
        case_id: str = "",
        tier: str = "judge",
        trial: int = 0,
        accept: Accept | None = None,
    ) -> ChatResponse:
        """Cached answer if there is a valid one (and not ``fresh``), else a budgeted call.

        ``accept`` (content -> problem or None) decides what is valid: see the module doc.
        """
        start = time.monotonic()
        key = request_key(req, trial)
        replace = self.fresh
        if self.cache is not None and not self.fresh:
            hit = self._from_cache(key, req)
            if hit is not None and accept is not None and accept(hit.content):
                log.info("judge cache entry %s is not a valid reply; asking again", key[:12])
                hit, replace = None, True
            if hit is not None:
                self._append(CallRecord(case_id, tier, req.model, 0, 0, 0.0, True, time.monotonic() - start,
                                        trial=trial))
                return ChatResponse(hit.content, hit.usage, hit.model, hit.finish_reason, 0, time.monotonic() - start)
        self._check_budget(req, case_id)
        try:
            resp = self.client.complete(req, accept=accept)
        except ChatError as err:
            self._append(CallRecord(case_id, tier, req.model, 0, 0, 0.0, False, time.monotonic() - start,
                                    req.model in self.prices, err.kind, err.attempts, trial))
            raise JudgeCallError(str(err), kind=err.kind, case_id=case_id, attempts=err.attempts) from err
        cost, priced = cost_of(self.prices, req.model, resp.usage)
        if not priced and req.model not in self._warned_unpriced and self.budget_usd is not None:
            self._warned_unpriced.add(req.model)
            log.warning("judge model %r has no price: its calls count $0 toward budget_usd", req.model)
        self._append(CallRecord(case_id, tier, req.model, resp.usage.prompt_tokens, resp.usage.completion_tokens,
                                cost, False, resp.seconds, priced, "", resp.attempts, trial, resp.usage.reported))
        if self.ledger is not None:
            self.ledger.add(cost, resp.usage.total)
        if self.cache is not None and not resp.rejected:
            self._store(key, req, resp, replace=replace)
        return resp

    def _from_cache(self, key: str, req: ChatRequest) -> ChatResponse | None:
        value = self.cache.get(key) if self.cache is not None else None
        if value is None:
            return None
        try:
            usage = value.get("usage") or {}
            return ChatResponse(
                content=str(value["content"]),
                usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                            bool(usage.get("reported", True))),
                model=str(value.get("model") or req.model),
                finish_reason=value.get("finish_reason"),
                attempts=0,
                seconds=0.0,
            )
        except (KeyError, TypeError, ValueError):
            log.warning("judge cache entry %s has an unexpected shape; calling the endpoint again", key[:12])
            return None

    def _store(self, key: str, req: ChatRequest, resp: ChatResponse, *, replace: bool) -> None:
        if self.client.redactor.contains_secret(resp.content):  # the client redacts; never trust it blindly
            log.warning("judge answer for model %r still contains a secret; not cached", req.model)
            return
        value = {
            "content": resp.content,
            "usage": {"prompt_tokens": resp.usage.prompt_tokens, "completion_tokens": resp.usage.completion_tokens,
                      "reported": resp.usage.reported},
            "model": resp.model,
            "finish_reason": resp.finish_reason,
        }
        assert self.cache is not None
        try:
            self.cache.put(key, value, model=req.model, replace=replace)
        except (sqlite3.Error, OSError) as exc:
            # The answer is paid for and valid; a cache that cannot take it only costs a
            # repeat call next run, so warn instead of failing the case.
            log.warning("judge cache %s: could not store an answer (%s); it will be asked again", self.cache.path, exc)

    # --- budget -------------------------------------------------------------------------
    def spent(self) -> tuple[float, int]:
        """(USD, tokens) spent on real calls: run-wide with a ledger, else this process."""
        if self.ledger is not None:
            return self.ledger.spent()
        with self._lock:
            live = [r for r in self._records if not r.cached]
        return sum(r.cost for r in live), sum(r.prompt_tokens + r.completion_tokens for r in live)

    def _check_budget(self, req: ChatRequest, case_id: str) -> None:
        if self.budget_usd is None and self.budget_tokens is None:
            return
        cost, tokens = self.spent()
        scope = "run-wide" if self.ledger is not None else "in this process"
        if self.budget_usd is not None and cost >= self.budget_usd:
            raise JudgeCallError(
                f"judge budget_usd ${self.budget_usd:g} reached: ${cost:.6f} spent {scope}; "
                f"no new call for case {case_id!r} (model {req.model!r}); cached answers are still used",
                kind="budget", case_id=case_id,
            )
        if self.budget_tokens is not None and tokens >= self.budget_tokens:
            raise JudgeCallError(
                f"judge budget_tokens {self.budget_tokens} reached: {tokens} tokens spent {scope}; "
                f"no new call for case {case_id!r} (model {req.model!r}); cached answers are still used",
                kind="budget", case_id=case_id,
            )

    # --- accounting ---------------------------------------------------------------------
    def _append(self, rec: CallRecord) -> None:
        with self._lock:
            self._records.append(rec)

    @property
    def records(self) -> list[CallRecord]:
        """A copy of every call made through this client, in order."""
        with self._lock:
            return list(self._records)

    def usage_for(self, case_id: str, tier: str | None = None, trial: int | None = None) -> dict[str, Any]:
        """:func:`summarize` of the calls made for one case -- of one tier (``"judge"``,
        ``"passk"``) and one trial when given. Summing ``usage_for(case, tier)`` over the
        cases of a tier gives exactly ``totals()[tier]``."""
        return summarize(r for r in self.records if r.case_id == case_id and (tier is None or r.tier == tier)
                         and (trial is None or r.trial == trial))

    def totals(self) -> dict[str, dict[str, Any]]:
        """``{tier: {"calls", "cached_calls", "errors", "prompt_tokens", "completion_tokens", "cost_usd", ...}}``."""
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


def _retry_locked(fn: Callable[[], T], attempts: int = 50) -> T:
    """Run ``fn``; on SQLite "locked"/"busy" wait briefly and retry (about 5 s in all)."""
    for i in range(attempts):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or i == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")  # pragma: no cover


def iter_records(dicts: Iterable[Mapping[str, Any]]) -> Iterator[CallRecord]:
    """Records back from ``to_dict`` payloads (e.g. collected from xdist workers)."""
    for d in dicts:
        yield CallRecord.from_dict(d)
