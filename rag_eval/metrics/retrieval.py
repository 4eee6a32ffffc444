"""Retrieval metrics: small pure functions over one ranked list and one gold set.

Every metric has the same signature, ``(ranked, gold, k) -> float``, so that a metric
name such as ``"ndcg@10"`` maps to a function plus a cutoff (``parse_metric_name``) and
the caller never special-cases one metric. Definitions follow trec_eval (and therefore
pytrec_eval, ranx and BEIR); ``tests/rag_eval/test_metrics_retrieval.py`` cross-checks
them against pytrec_eval on random runs.

Conventions shared by all metrics:

* ``ranked`` is best-first. Duplicate ids are collapsed before scoring, the first
  (best-ranked) occurrence wins, so a list that repeats a gold id cannot score twice.
* ``gold`` is the non-empty set of relevant ids. The functions do not care whether the
  ids are chunk ids or doc ids; ``to_doc_ranking`` turns a chunk list into a doc list.
  An empty gold set raises ``ValueError``: negatives ("no answer in the corpus") are
  measured separately (did the system refuse), never averaged in as 0 or 1.
* ``k`` is the cutoff (``k >= 1``); ``None`` means the whole list. Relevance is binary.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

Metric = Callable[[Sequence[str], AbstractSet[str], int | None], float]

VALID_METRIC_NAMES: tuple[str, ...] = ("hit@k", "recall@k", "precision@k", "mrr", "mrr@k", "ndcg@k")


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


def _check_gold(gold: AbstractSet[str], where: str) -> None:
    if isinstance(gold, str):
        raise TypeError(f"{where}: gold must be a set of ids, got the single string {gold!r}; wrap it: {{{gold!r}}}")
    if not gold:
        raise ValueError(
            f"{where}: gold is empty. Questions without gold (negatives) are measured separately "
            "(did the system refuse / did anything pass the similarity threshold); leave them out "
            "of retrieval metrics instead of scoring them"
        )


def dedupe(ranked: Iterable[str]) -> list[str]:
    """The list with repeated ids removed, keeping each id's first (best) position."""
    _check_ranked(ranked, "dedupe")
    return list(dict.fromkeys(ranked))


def _top(ranked: Sequence[str], gold: AbstractSet[str], k: int | None, where: str) -> list[str]:
    """Validate the shared arguments and return the de-duplicated top-k."""
    _check_ranked(ranked, where)
    _check_gold(gold, where)
    _check_k(k, where)
    unique = dedupe(ranked)
    return unique if k is None else unique[:k]


# --------------------------------------------------------------------------- metrics


def hit_at_k(ranked: Sequence[str], gold: AbstractSet[str], k: int | None) -> float:
    """Hit@k (trec_eval ``success.k``) = 1 if gold ∩ top_k ≠ ∅ else 0."""
    top = _top(ranked, gold, k, "hit_at_k")
    return 1.0 if any(d in gold for d in top) else 0.0


def recall_at_k(ranked: Sequence[str], gold: AbstractSet[str], k: int | None) -> float:
    """Recall@k (trec_eval ``recall.k``) = |gold ∩ top_k| / |gold|."""
    top = _top(ranked, gold, k, "recall_at_k")
    return sum(1 for d in top if d in gold) / len(gold)


def precision_at_k(ranked: Sequence[str], gold: AbstractSet[str], k: int | None) -> float:
    """Precision@k (trec_eval ``P.k``) = |gold ∩ top_k| / k.

    Divided by k even when fewer than k ids came back: the missing slots count as
    misses, as in trec_eval, so a system cannot raise precision by returning less.
    With ``k=None`` the denominator is the number of (distinct) ids returned
    (trec_eval ``set_P``), and an empty list scores 0.
    """
    top = _top(ranked, gold, k, "precision_at_k")
    denominator = k if k is not None else len(top)
    if denominator == 0:
        return 0.0
    return sum(1 for d in top if d in gold) / denominator


def mrr(ranked: Sequence[str], gold: AbstractSet[str], k: int | None = None) -> float:
    """Reciprocal rank (trec_eval ``recip_rank``) = 1 / rank of the first gold id, 0 if none.

    Ranks start at 1. With a cutoff k this is MRR@k: a first gold id below rank k
    scores 0. The mean over questions is the MRR.
    """
    top = _top(ranked, gold, k, "mrr")
    for rank, d in enumerate(top, start=1):
        if d in gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], gold: AbstractSet[str], k: int | None) -> float:
    """nDCG@k (trec_eval ``ndcg_cut.k``) with binary relevance.

    DCG@k = Σ_{r ≤ k, ranked[r] ∈ gold} 1 / log2(r + 1), ranks r starting at 1;
    IDCG@k = Σ_{r=1}^{min(|gold|, k)} 1 / log2(r + 1) (all gold ids on top);
    nDCG@k = DCG@k / IDCG@k. With ``k=None``: no cutoff (trec_eval ``ndcg``).
    """
    top = _top(ranked, gold, k, "ndcg_at_k")
    dcg = sum(1.0 / math.log2(r + 1) for r, d in enumerate(top, start=1) if d in gold)
    n_ideal = len(gold) if k is None else min(len(gold), k)
    idcg = sum(1.0 / math.log2(r + 1) for r in range(1, n_ideal + 1))
    return dcg / idcg


_METRICS: dict[str, Metric] = {
    "hit": hit_at_k,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "mrr": mrr,
    "ndcg": ndcg_at_k,
}


# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: which metric and at which cutoff (``None``: no cutoff, mrr only)."""

    metric: str
    k: int | None

    @property
    def name(self) -> str:
        """The canonical spelling, e.g. ``recall@5`` or ``mrr``; ``parse_metric_name`` round-trips it."""
        return self.metric if self.k is None else f"{self.metric}@{self.k}"

    def __str__(self) -> str:
        return self.name


def _unknown_metric(name: str, why: str = "") -> ValueError:
    detail = f" ({why})" if why else ""
    return ValueError(
        f"unknown metric name {name!r}{detail}; valid metric names: {', '.join(VALID_METRIC_NAMES)} "
        "where k is a positive integer, e.g. 'recall@5', 'ndcg@10', 'mrr'"
    )


@functools.lru_cache(maxsize=1024)  # parsed ~100 times per case: names repeat
def parse_metric_name(name: str) -> MetricSpec:
    """Parse ``"recall@5"``, ``"ndcg@10"``, ``"mrr"``, ``"mrr@10"``, ``"hit@3"``, ``"precision@5"``.

    The one place metric names are understood (case and surrounding spaces are ignored).
    Every metric except ``mrr`` needs a cutoff: ``recall`` alone is ambiguous in a gate.
    """
    if not isinstance(name, str):
        raise TypeError(f"metric name must be a string like 'recall@5', got {name!r}")
    text = name.strip().lower()
    metric, at, k_text = text.partition("@")
    if metric not in _METRICS:
        raise _unknown_metric(name)
    if not at:
        if metric == "mrr":
            return MetricSpec("mrr", None)
        raise _unknown_metric(name, f"{metric} needs a cutoff, e.g. '{metric}@5'")
    if not k_text.isascii() or not k_text.isdigit() or int(k_text) < 1:
        raise _unknown_metric(name, f"cutoff {k_text!r} is not a positive integer")
    return MetricSpec(metric, int(k_text))


def compute(spec: MetricSpec | str, ranked: Sequence[str], gold: AbstractSet[str]) -> float:
    """Score one ranked list with the metric a spec (or a metric name) names."""
    if isinstance(spec, str):
        spec = parse_metric_name(spec)
    return _METRICS[spec.metric](ranked, gold, spec.k)


# --------------------------------------------------------------------------- ranking


def order_hits(items: Iterable[tuple[str, float]]) -> list[str]:
    """Ids ordered by score descending, ties broken by id ascending, duplicates collapsed.

    This is the project's reproducible order (METRICS.md). Duplicates keep their
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
