"""Ranked lists and gold, before any metric: de-duplication, the project's reproducible
order, chunk to document rankings, evidence groups, first ranks and a mean that says its n.

The metrics themselves (hit, recall, precision, MRR, nDCG) are each one function in
``rag_eval.metrics.grouped``, registered there with their name pattern and direction.

Conventions shared by every function here:

* ``ranked`` is best-first. Duplicate ids are collapsed, the first (best-ranked)
  occurrence wins, so a list that repeats a gold id cannot score twice.
* An empty gold set or evidence group raises ``ValueError``: negatives ("no answer in
  the corpus") are measured separately (did the system refuse), never averaged in as 0 or 1.
* ``k`` is the cutoff (``k >= 1``); ``None`` means the whole list. Relevance is binary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

# --------------------------------------------------------------------------- helpers


def _check_ranked(ranked: Iterable[str], where: str) -> None:
    # A str is a Sequence[str]: "c12" would silently be scored as ["c", "1", "2"].
    if isinstance(ranked, str):
        raise TypeError(
            f"{where}: ranked must be a list of ids, got the single string {ranked!r}; wrap it: [{ranked!r}]"
        )


def _check_k(k: int | None, where: str) -> None:
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{where}: cutoff k must be a positive integer or None (whole list), got {k!r}")


def dedupe(ranked: Iterable[str]) -> list[str]:
    """The list with repeated ids removed, keeping each id's first (best) position."""
    _check_ranked(ranked, "dedupe")
    return list(dict.fromkeys(ranked))


# --------------------------------------------------------------------------- ranking


def order_hits(items: Iterable[tuple[str, float]]) -> list[str]:
    """Ids ordered by score descending, ties broken by id ascending, duplicates collapsed.

    This is the project's reproducible order (METRICS.md of the steering docs). Duplicates keep their
    best-ranked occurrence, i.e. the highest score.

    trec_eval (and pytrec_eval) break ties the other way: by docno *descending*
    (``strcmp``, i.e. byte order, which for UTF-8 is Python's code-point order).
    Metrics of tied runs can therefore differ between the two. The tests compare on
    equal footing by handing pytrec_eval strictly decreasing scores that encode the
    order this function produced; a separate test feeds raw tied scores and shows
    that pytrec_eval then agrees with score-descending/id-descending order instead.

    A NaN score raises ``ValueError``: NaN compares false both ways, so the sort
    order would depend on the input order.
    """
    pairs: list[tuple[str, float]] = []
    for doc_id, score in items:
        if isinstance(score, float) and math.isnan(score):
            raise ValueError(f"order_hits: score of {doc_id!r} is NaN; fix the scorer that produced it")
        pairs.append((doc_id, score))
    pairs.sort(key=lambda p: (-p[1], p[0]))
    return dedupe(p[0] for p in pairs)


def to_doc_ranking(ranked_chunk_ids: Sequence[str], doc_of: Mapping[str, str]) -> list[str]:
    """Map a ranked chunk list to a ranked doc list; each doc keeps its first (best) rank.

    Use it for doc-level metrics (gold given as doc ids): several chunks of one doc
    count once, at the position of the doc's best chunk.
    """
    _check_ranked(ranked_chunk_ids, "to_doc_ranking")
    docs: list[str] = []
    for chunk_id in ranked_chunk_ids:
        try:
            docs.append(doc_of[chunk_id])
        except KeyError:
            raise ValueError(
                f"to_doc_ranking: chunk id {chunk_id!r} has no entry in doc_of ({len(doc_of)} chunks known); "
                "build doc_of from the same index the ranked list came from"
            ) from None
    return dedupe(docs)


# --------------------------------------------------------------------------- evidence groups


def _check_groups(groups: Sequence[AbstractSet[str]], where: str) -> None:
    if not groups:
        raise ValueError(
            f"{where}: no evidence groups; a golden item without evidence is a negative, "
            "measure it separately (did the system refuse)"
        )
    for i, group in enumerate(groups):
        if isinstance(group, str):
            raise TypeError(
                f"{where}: evidence group #{i} is the string {group!r}, expected a set of ids: {{{group!r}}}"
            )
        if not group:
            raise ValueError(f"{where}: evidence group #{i} is empty and can never be satisfied; remove it or add ids")


def evidence_recall_at_k(ranked: Sequence[str], groups: Sequence[AbstractSet[str]], k: int | None) -> float:
    """Evidence recall@k = (number of groups with at least one id in top_k) / (number of groups).

    Each group is one piece of required evidence given as alternatives (e.g. the same
    theorem in two books); any one id of the group satisfies it.
    """
    _check_ranked(ranked, "evidence_recall_at_k")
    _check_groups(groups, "evidence_recall_at_k")
    _check_k(k, "evidence_recall_at_k")
    unique = dedupe(ranked)
    top = set(unique if k is None else unique[:k])
    return sum(1 for group in groups if top & set(group)) / len(groups)


def evidence_found(ranked: Sequence[str], groups: Sequence[AbstractSet[str]], k: int | None = None) -> bool:
    """True when every evidence group has at least one id in top_k (evidence recall@k = 1)."""
    return evidence_recall_at_k(ranked, groups, k) == 1.0


def first_rank(ranked: Sequence[str], ids: AbstractSet[str]) -> int | None:
    """1-based rank of the first of ``ids`` in ``ranked`` (after collapsing duplicates); None if absent.

    "Where was the gold chunk lost": compare this rank across the stages of one trace.
    """
    _check_ranked(ranked, "first_rank")
    if isinstance(ids, str):
        raise TypeError(f"first_rank: ids must be a set of ids, got the single string {ids!r}; wrap it: {{{ids!r}}}")
    for rank, d in enumerate(dedupe(ranked), start=1):
        if d in ids:
            return rank
    return None


# --------------------------------------------------------------------------- aggregation


def mean_with_n(values: Sequence[float]) -> tuple[float | None, int]:
    """The mean and the number of values; the mean is None when there are none.

    A mean over 0 cases is not a number, and reporting it as 0.0 (or 1.0) would
    let a gate pass or fail on nothing. NaN raises: it would poison the mean silently.
    """
    n = len(values)
    for i, v in enumerate(values):
        if math.isnan(v):
            raise ValueError(
                f"mean_with_n: value #{i} is NaN; a failed measurement must be counted as an error, not averaged"
            )
    if n == 0:
        return None, 0
    return math.fsum(values) / n, n
