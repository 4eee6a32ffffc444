"""Vector search over a real ChromaDB collection, reproducible across builds.

We give Chroma our own vectors (``embedding_function=None``) in a cosine-space HNSW
collection. Chroma is the system of record: it persists the vectors (locally, or on a
Chroma server when a client such as ``chromadb.HttpClient`` is passed in, see
``rag_app.index.chroma_server``) and answers approximate nearest-neighbour queries.
A server changes where the vectors live, not the results: exact mode scores the
vectors read back from the collection, which are the float32 vectors we added on
either backend, so embedded and server stores rank identically (tested).

**Reproducibility, measured** (chromadb 1.5.9 local, 2 CPUs, clustered unit vectors,
top-20, 200 queries): HNSW graphs are not reproducible. The graph files differ byte-wise
between any two builds from the same vectors, also with ``num_threads: 1`` (which the
local backend does not even keep in the collection configuration). Usually the rankings
still agree (5k and 20k vectors of dim 384, 2k of dim 64: identical, 1000 queries
each), but not always: 1500 vectors of dim 32 gave different top-20s for 1 of 200
queries (one build missed the true #9), and 100k vectors of dim 128 for 1 of 200 (a
miss of the true #8). Asking for more candidates does not help, since the search width
is ``max(ef_search, n_results)`` = 200 either way. A CI gate can not have retrieval
that changes between two builds of the same corpus, so:

* **Exact mode** (collections of up to ``exact_max`` vectors, default 20,000: every
  corpus this project ships): the vectors are read back from Chroma once and every
  query is scored exactly with numpy. Rankings depend only on the vectors. Memory:
  n x dim x 4 bytes (30 MB at 20k x 384); a query costs about 1 ms at that size.
* **HNSW mode** (larger collections): Chroma's HNSW search for ``k + EXTRA_CANDIDATES``
  candidates with their stored embeddings, re-scored exactly. Rankings agree between
  builds whenever HNSW finds all true neighbours (199 of 200 queries at 100k above).

Either way results are sorted by the cosine rounded to 1e-6 (descending), then by id,
so float noise and duplicate vectors can not reorder them, and the score equals
``1 - cosine distance`` as Chroma reports it, up to float32 rounding (~1e-7).

Chroma rejects ``None`` metadata values, empty metadata dicts and nested values; see
``encode_metadata``: ``None`` values are dropped and restored on read, lists/dicts are
stored as JSON text and decoded on read.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from rag_app.index.chroma_server import client_location, lost_server_error

if TYPE_CHECKING:  # chromadb takes ~1.5 s to import: only when a store is opened
    from chromadb.api import ClientAPI
    from chromadb.api.collection_configuration import CreateCollectionConfiguration
    from chromadb.api.models.Collection import Collection

HNSW_CONFIGURATION: dict[str, Any] = {
    "space": "cosine",
    "ef_construction": 200,
    "ef_search": 200,
    "max_neighbors": 32,
}
EXACT_MAX = 20_000  # collections up to this size are searched exactly (see module docstring)
EXTRA_CANDIDATES = 10  # HNSW mode: candidates beyond k, so exact re-scoring decides near the cut
SCORE_DECIMALS = 6
_READ_BATCH = 5_000

_NULL_KEYS = "_rag_null_keys"
_JSON_KEYS = "_rag_json_keys"
_PLACEHOLDER = "_rag_empty"


def make_persistent_client(path: Path) -> ClientAPI:
    """A local Chroma client at ``path`` with telemetry off."""
    import chromadb
    from chromadb.config import Settings

    Path(path).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def encode_metadata(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """Make a metadata dict acceptable to Chroma; ``decode_metadata`` restores it.

    Scalars (str, int, float, bool) are kept; ``None`` values are dropped and their keys
    listed under ``_rag_null_keys``; lists and dicts become JSON text listed under
    ``_rag_json_keys``. An empty result gets a placeholder key, since Chroma rejects
    empty dicts.
    """
    out: dict[str, Any] = {}
    nulls: list[str] = []
    jsons: list[str] = []
    for key, value in (meta or {}).items():
        if not isinstance(key, str):
            raise ValueError(f"metadata key {key!r} is not a string; Chroma needs string keys")
        if key.startswith("_rag_"):
            raise ValueError(f"metadata key {key!r}: keys starting with '_rag_' are reserved by the vector store")
        if value is None:
            nulls.append(key)
        elif isinstance(value, (str, int, float, bool)):
            out[key] = value
        elif isinstance(value, (list, tuple, dict)):
            out[key] = json.dumps(value, ensure_ascii=False, sort_keys=True)
            jsons.append(key)
        else:
            raise ValueError(
                f"metadata {key!r} = {value!r} ({type(value).__name__}): use str, int, float, bool, None, "
                "or JSON-able lists/dicts"
            )
    if nulls:
        out[_NULL_KEYS] = json.dumps(nulls, ensure_ascii=False)
    if jsons:
        out[_JSON_KEYS] = json.dumps(jsons, ensure_ascii=False)
    if not out:
        out[_PLACEHOLDER] = True
    return out


def decode_metadata(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """Inverse of ``encode_metadata``."""
    if not stored:
        return {}
    out = {k: v for k, v in stored.items() if not k.startswith("_rag_")}
    for key in json.loads(stored.get(_JSON_KEYS, "[]")):
        out[key] = json.loads(out[key])
    for key in json.loads(stored.get(_NULL_KEYS, "[]")):
        out[key] = None
    return out


def _rank(ids: Sequence[str], scores: npt.NDArray[np.floating[Any]], k: int) -> list[tuple[str, float]]:
    """Top ``k`` by score rounded to 1e-6 (descending), then id (ascending)."""
    if k <= 0 or len(ids) == 0:
        return []
    rounded = np.round(scores, SCORE_DECIMALS)
    cand = np.arange(len(ids))
    if len(ids) > k:
        # everything tied with the k-th best stays in, so the id decides among them
        kth = np.partition(rounded, len(ids) - k)[len(ids) - k]
        cand = np.flatnonzero(rounded >= kth)
    order = sorted(cand.tolist(), key=lambda j: (-rounded[j], ids[j]))[:k]
    return [(ids[j], float(scores[j])) for j in order]


class ChromaVectorStore:
    """One Chroma collection of our own vectors; see the module docstring for search modes.

    ``client`` may be any Chroma client (for example ``chromadb.HttpClient`` for a Chroma
    server); without it a ``PersistentClient`` at ``path`` is used. ``reset=True`` deletes
    the collection first, so a build never appends to a half-written one. ``create=False``
    opens an existing collection only (a missing one raises chromadb's ``NotFoundError``
    instead of appearing empty), which is how a finished index is loaded. Writes by
    other clients to the same collection after this store was opened are not seen by its
    exact mode (its vectors are read once).
    """

    def __init__(
        self,
        path: Path | None,
        collection: str,
        client: ClientAPI | None = None,
        *,
        reset: bool = False,
        create: bool = True,
        exact_max: int = EXACT_MAX,
    ) -> None:
        if client is None:
            if path is None:
                raise ValueError(f"ChromaVectorStore({collection!r}): give a path for a local store or a client")
            client = make_persistent_client(Path(path))
        self.path = Path(path) if path is not None else None
        self.name = collection
        self.client = client
        self.location = client_location(client)
        self.exact_max = exact_max
        if reset:
            self._delete_if_exists()
        if create or reset:
            self.collection: Collection = client.get_or_create_collection(
                name=collection,
                embedding_function=None,
                # HNSW_CONFIGURATION holds only keys of Chroma's CreateHNSWConfiguration
                configuration=cast("CreateCollectionConfiguration", {"hnsw": dict(HNSW_CONFIGURATION)}),
            )
        else:
            self.collection = client.get_collection(name=collection, embedding_function=None)
        self._check_space()
        self._count = int(self.collection.count())  # count() costs ~4 ms: kept, not asked per query
        self._exact: tuple[list[str], npt.NDArray[np.float32]] | None = None

    def _delete_if_exists(self) -> None:
        ChromaVectorStore.drop(self.client, self.name)

    @staticmethod
    def drop(client: ClientAPI, collection: str) -> bool:
        """Delete ``collection`` if it exists; True if it did."""
        try:
            client.delete_collection(collection)
        except Exception as exc:  # chroma raises NotFoundError / ValueError, depending on version
            if "not exist" not in str(exc).lower() and "not found" not in str(exc).lower():
                raise
            return False
        return True

    def _check_space(self) -> None:
        with warnings.catch_warnings():  # reading the configuration warns about "legacy" ef config
            warnings.simplefilter("ignore", DeprecationWarning)
            config = getattr(self.collection, "configuration", None) or {}
        hnsw = config.get("hnsw") if isinstance(config, Mapping) else None
        space = hnsw.get("space") if isinstance(hnsw, Mapping) else None
        if space is not None and space != "cosine":
            raise ValueError(
                f"Chroma collection {self.name!r} uses {space!r} distance, but scores assume cosine; "
                "delete the collection (or the index directory) so that it is rebuilt"
            )

    def describe(self) -> str:
        """Which store holds the vectors: ``http://host:port`` or ``embedded:<dir>``, and the collection.

        Safe for results files: no credentials (see ``client_location``).
        """
        return f"chroma {self.location} collection {self.name}"

    @property
    def mode(self) -> str:
        """``"exact"`` or ``"hnsw"``: how ``query`` searches at the current size."""
        return "exact" if self._count <= self.exact_max else "hnsw"

    def add(
        self,
        ids: Sequence[str],
        vectors: npt.ArrayLike,
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        documents: Sequence[str] | None = None,
    ) -> None:
        """Add vectors in batches no larger than the client's maximum batch size."""
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(ids):
            raise ValueError(
                f"ChromaVectorStore.add: {len(ids)} ids but vectors of shape {arr.shape}; need (n_ids, dim)"
            )
        if not np.all(np.isfinite(arr)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(arr), axis=1))[0])
            raise ValueError(f"ChromaVectorStore.add: vector for id {ids[bad]!r} has NaN or inf; check the embedder")
        for name, seq in (("metadatas", metadatas), ("documents", documents)):
            if seq is not None and len(seq) != len(ids):
                raise ValueError(f"ChromaVectorStore.add: {len(ids)} ids but {len(seq)} {name}")
        batch = max(1, int(self.client.get_max_batch_size()))
        for lo in range(0, len(ids), batch):
            hi = min(lo + batch, len(ids))
            self.collection.add(
                ids=[str(i) for i in ids[lo:hi]],
                embeddings=arr[lo:hi],
                metadatas=[encode_metadata(m) for m in metadatas[lo:hi]] if metadatas is not None else None,
                documents=list(documents[lo:hi]) if documents is not None else None,
            )
        self._count = int(self.collection.count())
        self._exact = None

    def count(self) -> int:
        return int(self.collection.count())

    def query(self, vector: npt.ArrayLike, k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest ids as (id, cosine similarity), score descending then id ascending."""
        q = np.asarray(vector, dtype=np.float64).reshape(-1)
        norm = float(np.linalg.norm(q))
        if not np.isfinite(norm) or norm == 0.0:
            raise ValueError("ChromaVectorStore.query: the query vector is zero or not finite; check the embedder")
        if k <= 0 or self._count == 0:
            return []
        q /= norm
        if self.mode == "exact":
            ids, unit = self._exact_vectors()
            with single_threaded_blas():
                scores = unit @ q.astype(np.float32)
            return _rank(ids, scores, k)
        # Annotated with Chroma's own element type (int32 | float32): a list is invariant.
        query_embeddings: list[npt.NDArray[np.int32 | np.float32]] = [q.astype(np.float32)]
        try:
            res = self.collection.query(
                query_embeddings=query_embeddings,
                n_results=k + EXTRA_CANDIDATES,  # may exceed the size: Chroma returns what it has
                include=["embeddings"],
            )
        except Exception as exc:
            _raise_if_server_lost(self.client, exc)
            raise
        ids = list(res["ids"][0])
        embeddings = res.get("embeddings")
        if not ids or embeddings is None:
            return []
        return _rank(ids, _unit_rows(_stored_vectors(embeddings[0])) @ q, k)

    def _exact_vectors(self) -> tuple[list[str], npt.NDArray[np.float32]]:
        """All ids and unit vectors, read from Chroma once (in pages) and kept."""
        if self._exact is None:
            ids: list[str] = []
            rows: list[npt.NDArray[np.float64]] = []
            for offset in range(0, self._count, _READ_BATCH):
                try:
                    page = self.collection.get(include=["embeddings"], limit=_READ_BATCH, offset=offset)
                except Exception as exc:
                    _raise_if_server_lost(self.client, exc)
                    raise
                ids += list(page["ids"])
                rows.append(_stored_vectors(page["embeddings"]))
            matrix = np.concatenate(rows) if rows else np.zeros((0, 0))
            # Rows in id order, whatever order Chroma returns them in: then two builds hold
            # bit-identical matrices and compute bit-identical scores.
            order = sorted(range(len(ids)), key=ids.__getitem__)
            self._exact = ([ids[j] for j in order], _unit_rows(matrix[order]).astype(np.float32))
        return self._exact

    def get(self, ids: Sequence[str]) -> dict[str, tuple[npt.NDArray[np.float32], dict[str, Any], str | None]]:
        """Stored (vector, metadata, document) by id; metadata decoded (None values restored)."""
        res = self.collection.get(ids=list(ids), include=["embeddings", "metadatas", "documents"])
        out: dict[str, tuple[npt.NDArray[np.float32], dict[str, Any], str | None]] = {}
        metas: Sequence[Mapping[str, Any] | None] = res.get("metadatas") or [None] * len(res["ids"])
        docs: Sequence[str | None] = res.get("documents") or [None] * len(res["ids"])
        embs = res.get("embeddings")
        for j, cid in enumerate(res["ids"]):
            vec = np.asarray(embs[j], dtype=np.float32) if embs is not None else np.zeros(0, dtype=np.float32)
            out[cid] = (vec, decode_metadata(metas[j]), docs[j])
        return out


def _stored_vectors(rows: Any) -> npt.NDArray[np.float64]:
    """Vectors as Chroma returned them, as float64 holding the stored float32 values exactly.

    Chroma stores float32. The embedded client hands back float32 arrays; a server sends
    JSON with the shortest decimal that rounds to each float32, which parses to a nearby
    but different float64. Rounding to float32 first recovers the stored value, so both
    backends score bit-identical inputs (without it, scores differ by ~1e-8 and rankings
    can flip at the 1e-6 rounding boundary).
    """
    return np.asarray(rows, dtype=np.float32).astype(np.float64)


def _raise_if_server_lost(client: ClientAPI, exc: BaseException) -> None:
    """A dead server becomes the one clear ``ServiceError``; other errors pass through unchanged."""
    error = lost_server_error(client, exc)
    if error is not None:
        raise error from None


def _unit_rows(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    return matrix / norms


_BLAS: Any = None


def single_threaded_blas() -> Any:
    """A context in which numpy's BLAS runs on one thread.

    The exact search is one matrix-vector product; OpenBLAS threads it above ~9k
    elements, and on a busy 2-core machine (CI with ``-n 2``) the second thread waits for
    a core while the caller spins: measured p95 7.5-12.7 ms instead of 0.4-0.7 ms at
    10k x 64 (BENCHMARKS.md, "Cost at scale"). It also makes scores reproducible across
    machines: a threaded product may split a row's dot product into partial sums by the
    core count, which changes the last float32 bit (seen at 10k x 64, not at 20k x 384);
    on one thread the scores are the same on a 2-core runner and a 16-core laptop. The
    limit costs ~0.06 ms per query.
    """
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        except Exception:  # noqa: BLE001 - no threadpoolctl or no BLAS found: leave threads alone
            _BLAS = False
    if _BLAS is False:
        import contextlib

        return contextlib.nullcontext()
    return _BLAS.limit(limits=1, user_api="blas")
