"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

RRF fuses ranked lists using ranks only, so the vector retriever's cosine scores and
BM25's unbounded scores never have to be put on one scale:

    score(d) = Σ over lists containing d of 1 / (k + rank_list(d)),   rank from 1.

``k`` (60 in the paper and by default) damps the advantage of the very top ranks: with
k=60 rank 1 is worth 1/61 and rank 10 still 1/70, so agreement between the two
retrievers counts for more than one retriever's confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_app.errors import ConfigError
from rag_app.types import Hit


def rrf_fuse(lists: Sequence[Sequence[str]], k: int = 60, top_k: int | None = None) -> list[Hit]:
    """Fuse ranked id lists into one ranked list of ``Hit`` (rank from 1).

    - Within one list a repeated id is collapsed to its first occurrence, and ranks
      are counted after collapsing (``[a, a, b]`` ranks ``b`` second), so a retriever
      that returns a chunk twice gains nothing from it.
    - Output is sorted by score descending, ties by chunk id ascending, so the result
      never depends on dict or set iteration order.
    - ``top_k=None`` keeps every id; ``top_k=0`` returns an empty list.
    """
    if k < 0:
        raise ConfigError(f"rrf_k must be >= 0, got {k}; set rrf_k in [tool.rag_app] or RAG_APP_RRF_K (default 60)")
    if top_k is not None and top_k < 0:
        raise ConfigError(f"fused_top_k must be >= 0, got {top_k}; set fused_top_k (default 20)")
    contributions: dict[str, list[float]] = {}
    for ranked in lists:
        seen: set[str] = set()
        rank = 0
        for chunk_id in ranked:
            if chunk_id in seen:
                continue
            seen.add(chunk_id)
            rank += 1
            contributions.setdefault(chunk_id, []).append(1.0 / (k + rank))
    # fsum is exactly rounded, hence independent of the order the lists were given in:
    # two ids with the same multiset of ranks get bit-identical scores and tie cleanly.
    scored = [(math.fsum(parts), chunk_id) for chunk_id, parts in contributions.items()]
    scored.sort(key=lambda item: (-item[0], item[1]))
    if top_k is not None:
        scored = scored[:top_k]
    return [Hit(chunk_id=chunk_id, score=score, rank=i + 1) for i, (score, chunk_id) in enumerate(scored)]
