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
"""

from __future__ import annotations

import math
from typing import AbstractSet, Sequence

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
