"""Retrieval metrics over gold given as requirements with alternatives.

Each requirement is a set of alternative ids (any one suffices). When every
requirement has exactly one alternative these reduce to the flat trec_eval
definitions in ``retrieval.py`` (the tests check that); with alternatives:

- recall@k    = satisfied requirements in top k / requirements
- hit@k       = 1 if any gold id is in the top k
- precision@k = gold ids (any alternative) in the top k / k
- mrr         = 1 / rank of the first gold id (0 if none; cutoff k if given)
- ndcg@k      = Σ_r gain_r / log2(r+1), gain 1 only for the first id of each not-yet
                credited requirement, over the ideal min(#requirements, k) gains

``grouped_compute_all`` scores one ranked list with several metrics in one pass over it
(a case's ten metrics at each stage: ~40 calls per case of ``grouped_compute`` before),
with the same arithmetic in the same order, so every value is bit-identical.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

from rag_eval.metrics.retrieval import MetricSpec, dedupe, evidence_recall_at_k, parse_metric_name

Groups = Sequence[AbstractSet[str]]


def grouped_compute(spec: MetricSpec | str, ranked: Sequence[str], groups: Groups) -> float:
    """Score one ranked list against requirement groups with the named metric."""
    if isinstance(spec, str):
        spec = parse_metric_name(spec)
    if not groups or any(not g for g in groups):
        raise ValueError("gold must have at least one requirement and no empty requirement")
    ranked = dedupe(ranked)
    top = ranked if spec.k is None else ranked[: spec.k]
    gold: set[str] = set().union(*groups)
    if spec.metric == "recall":
        return evidence_recall_at_k(ranked, groups, spec.k)
    if spec.metric == "hit":
        return 1.0 if any(i in gold for i in top) else 0.0
    if spec.metric == "precision":
        assert spec.k is not None
        return sum(1 for i in top if i in gold) / spec.k
    if spec.metric == "mrr":
        return next((1.0 / r for r, i in enumerate(top, 1) if i in gold), 0.0)
    if spec.metric == "ndcg":
        assert spec.k is not None
        credited: set[int] = set()
        dcg = 0.0
        for r, i in enumerate(top, 1):
            new = [gi for gi, g in enumerate(groups) if i in g and gi not in credited]
            if new:
                credited.update(new[:1])
                dcg += 1.0 / math.log2(r + 1)
        ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(groups), spec.k) + 1))
        return dcg / ideal
    raise ValueError(f"unsupported metric {spec.name!r}")


def grouped_compute_all(specs: Iterable[MetricSpec | str], ranked: Sequence[str], groups: Groups) -> list[float]:
    """``[grouped_compute(s, ranked, groups) for s in specs]``, looking at the ranked list once.

    Each rank of the de-duplicated list is looked at once: whether it holds a gold id, the
    requirements it satisfies, its nDCG gain. Every metric is then a prefix of those, summed
    in rank order as ``grouped_compute`` sums it (identical floats; the tests check it).
    """
    parsed = [parse_metric_name(s) if isinstance(s, str) else s for s in specs]
    if not parsed:
        return []
    if any(s.k is not None and (isinstance(s.k, bool) or not isinstance(s.k, int) or s.k < 1) for s in parsed):
        return [grouped_compute(s, ranked, groups) for s in parsed]  # its error, exactly
    if not groups or any(not g for g in groups):
        raise ValueError("gold must have at least one requirement and no empty requirement")
    ranked = dedupe(ranked)
    gold: set[str] = set().union(*groups)
    sets = [set(g) for g in groups]
    depth = len(ranked) if any(s.k is None for s in parsed) else min(len(ranked), max(s.k or 0 for s in parsed))
    first_gold: int | None = None  # rank of the first gold id
    gold_upto = [0]  # gold ids among the first r ranks, r = 0..depth
    satisfied_at = [0] * (depth + 1)  # requirements first satisfied at rank r
    dcg_upto = [0.0]  # nDCG's DCG over the first r ranks, summed in rank order
    met: set[int] = set()
    credited: set[int] = set()
    dcg = 0.0
    for r, i in enumerate(ranked[:depth], 1):
        is_gold = i in gold
        gold_upto.append(gold_upto[-1] + (1 if is_gold else 0))
        if is_gold:
            if first_gold is None:
                first_gold = r
            holding = [gi for gi, g in enumerate(sets) if i in g]
            fresh = [gi for gi in holding if gi not in met]
            met.update(fresh)
            satisfied_at[r] = len(fresh)
            new = [gi for gi in holding if gi not in credited]
            if new:
                credited.update(new[:1])
                dcg += 1.0 / math.log2(r + 1)
        dcg_upto.append(dcg)
    out: list[float] = []
    for spec in parsed:
        k = depth if spec.k is None else min(spec.k, depth)
        if spec.metric == "recall":
            out.append(sum(satisfied_at[: k + 1]) / len(groups))
        elif spec.metric == "hit":
            out.append(1.0 if first_gold is not None and first_gold <= k else 0.0)
        elif spec.metric == "precision":
            assert spec.k is not None
            out.append(gold_upto[k] / spec.k)
        elif spec.metric == "mrr":
            out.append(1.0 / first_gold if first_gold is not None and first_gold <= k else 0.0)
        elif spec.metric == "ndcg":
            assert spec.k is not None
            ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(groups), spec.k) + 1))
            out.append(dcg_upto[k] / ideal)
        else:
            raise ValueError(f"unsupported metric {spec.name!r}")
    return out
