"""The response cache: one SQLite file, ``<cache_dir>/judge-cache.sqlite3``.

One file because ``pytest -n N`` runs N processes that write at the same time: SQLite
gives atomic rows (no torn or lost entries) where a directory of JSON files would need
its own locking. WAL mode lets readers run while one process writes, ``busy_timeout``
makes writers queue instead of failing, ``BEGIN IMMEDIATE`` takes the write lock up
front (no deadlock upgrading a read lock), and ``INSERT OR IGNORE`` makes two workers
answering the same request at once harmless: the first row wins and both answers were
valid. A connection is never used across ``fork``: the cache notices a new pid and
opens a fresh one; within a process one lock serialises the threads.

The key is the SHA-256 of the canonical JSON of the request body (model, messages,
temperature, response format, extra parameters) plus the trial index. The base URL and
the API key are *not* part of it: the same question to the same model is the same
question whether it goes through a proxy or not, and neither secret ends up on disk.
The trial index keeps repeated trials independent (trial 1 is not served trial 0's
answer). What is stored, and that no secret is, is the cached client's business
(:mod:`rag_eval.llm.cached`).
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
from typing import Any, TypeVar

from rag_eval.llm.messages import ChatRequest

log = logging.getLogger(__name__)
T = TypeVar("T")

CACHE_FILE = "judge-cache.sqlite3"
CACHE_VERSION = 1  # bump when the key or value layout changes: old rows then simply miss
BUSY_TIMEOUT_MS = 30_000

# Connections inherited across fork are parked here, never closed or used: closing one
# in the child could run SQLite's cleanup against locks and WAL state the parent owns.
_ABANDONED: list[sqlite3.Connection] = []


def request_key(req: ChatRequest, trial: int) -> str:
    """Cache key: request content + trial index; nothing about the endpoint."""
    canon = json.dumps(
        {"v": CACHE_VERSION, "request": req.body(), "trial": trial},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
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
                conn.execute(
                    f"{verb} INTO responses (key, value, model, created) VALUES (?, ?, ?, ?)",
                    (key, text, model, time.time()),
                )
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
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or i == attempts - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")  # pragma: no cover
