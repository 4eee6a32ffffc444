"""Retrieval metrics: hand-checkable arithmetic, edge cases, and a cross-check with pytrec_eval.

The metrics are the registered ones (``rag_eval.metrics.grouped``) on flat gold: each gold
id one requirement, which is how trec_eval takes gold (``hit_at_k`` and the others below
are that, spelled as trec_eval's measures).

trec_eval's tie rule, established by the experiment in ``test_trec_eval_breaks_ties_by_id_descending``:
equal scores are ordered by docno *descending* (``strcmp``, i.e. byte / code-point order),
the opposite of our ``order_hits`` (id ascending). The random cross-checks therefore come
in two flavours: (1) pytrec_eval gets strictly decreasing scores that encode the order
``order_hits`` produced, so both see one ranking; (2) pytrec_eval gets the raw tied scores
and our functions get the trec_eval order, which shows that the only difference is the
tie rule.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import pytest

from rag_eval.metrics.grouped import MetricSpec, grouped_compute, parse_metric_name, valid_metric_names
from rag_eval.metrics.retrieval import (
    dedupe,
    evidence_found,
    evidence_recall_at_k,
    first_rank,
    mean_with_n,
    order_hits,
    to_doc_ranking,
)

FlatMetric = Callable[[Sequence[str], AbstractSet[str], int | None], float]


def _requirements(gold: AbstractSet[str]) -> list[frozenset[str]]:
    return [frozenset({g}) for g in sorted(gold)]


def _flat(metric: str) -> FlatMetric:
    """The registered ``metric`` on flat gold, at cutoff k (None: the whole list)."""

    def score(ranked: Sequence[str], gold: AbstractSet[str], k: int | None = None) -> float:
        return grouped_compute(MetricSpec(metric, k), ranked, _requirements(gold))

    return score


def compute(name: str | MetricSpec, ranked: Sequence[str], gold: AbstractSet[str]) -> float:
    return grouped_compute(name, ranked, _requirements(gold))


hit_at_k, recall_at_k, precision_at_k, mrr, ndcg_at_k = (
    _flat(m) for m in ("hit", "recall", "precision", "mrr", "ndcg")
)

# gold at ranks 2 and 4 of 5 returned
RANKED = ["a", "g1", "b", "g2", "c"]
GOLD = {"g1", "g2"}


# --------------------------------------------------------------------------- hand-checked values


def test_hit_at_k() -> None:
    assert hit_at_k(RANKED, GOLD, 1) == 0.0
    assert hit_at_k(RANKED, GOLD, 2) == 1.0
    assert hit_at_k(RANKED, GOLD, None) == 1.0


def test_recall_at_k() -> None:
    assert recall_at_k(RANKED, GOLD, 1) == 0 / 2
    assert recall_at_k(RANKED, GOLD, 2) == 1 / 2
    assert recall_at_k(RANKED, GOLD, 4) == 2 / 2
    assert recall_at_k(RANKED, {"g1", "g2", "never"}, 10) == 2 / 3


def test_precision_at_k_divides_by_k_even_when_fewer_came_back() -> None:
    assert precision_at_k(RANKED, GOLD, 2) == 1 / 2
    assert precision_at_k(RANKED, GOLD, 5) == 2 / 5
    assert precision_at_k(RANKED, GOLD, 10) == 2 / 10  # 5 returned, 5 empty slots are misses
    assert precision_at_k(RANKED, GOLD, None) == 2 / 5  # no cutoff: over what came back (set_P)
    assert precision_at_k([], GOLD, None) == 0.0


def test_mrr_and_mrr_at_k() -> None:
    assert mrr(RANKED, GOLD) == 1 / 2
    assert mrr(RANKED, GOLD, 2) == 1 / 2
    assert mrr(RANKED, GOLD, 1) == 0.0  # first gold at rank 2 is below the cutoff
    assert mrr(["x", "y"], GOLD) == 0.0


def test_ndcg_gold_at_ranks_2_and_4() -> None:
    ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(RANKED, GOLD, 5) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert ndcg_at_k(RANKED, GOLD, 2) == pytest.approx((1 / math.log2(3)) / ideal)
    assert ndcg_at_k(RANKED, GOLD, 1) == 0.0
    # k=1: the ideal list has only one slot, so one gold on top is perfect
    assert ndcg_at_k(["g2", "a"], GOLD, 1) == 1.0
    assert ndcg_at_k(["g2", "g1"], GOLD, 10) == pytest.approx(1.0)


def test_fewer_than_k_returned() -> None:
    only = ["g1"]
    assert recall_at_k(only, GOLD, 5) == 1 / 2
    assert precision_at_k(only, GOLD, 5) == 1 / 5
    assert hit_at_k(only, GOLD, 5) == 1.0
    assert mrr(only, GOLD, 5) == 1 / 1
    assert ndcg_at_k(only, GOLD, 5) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_empty_ranking_scores_zero() -> None:
    for metric in (hit_at_k, recall_at_k, precision_at_k, mrr, ndcg_at_k):
        assert metric([], GOLD, 5) == 0.0


def test_duplicates_collapse_first_wins() -> None:
    assert dedupe(["g1", "x", "g1", "y", "x"]) == ["g1", "x", "y"]
    # without collapsing, P@2 would be 2/2 and recall 2/1
    assert precision_at_k(["g1", "g1", "x"], {"g1"}, 2) == 1 / 2
    assert recall_at_k(["g1", "g1"], {"g1"}, 2) == 1 / 1
    # the repeat of "x" does not push g1 down: ranks are counted after collapsing
    assert mrr(["x", "x", "x", "g1"], {"g1"}) == 1 / 2
    assert ndcg_at_k(["g1", "g1", "g1"], {"g1", "g2"}, 3) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_empty_gold_is_rejected() -> None:
    for metric in (hit_at_k, recall_at_k, precision_at_k, mrr, ndcg_at_k):
        with pytest.raises(ValueError, match=r"at least one requirement and no empty requirement"):
            metric(["a"], set(), 5)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_cutoff_is_rejected(k: Any) -> None:
    with pytest.raises(ValueError, match=r"cutoff k must be a positive integer"):
        recall_at_k(["a"], {"a"}, k)


def test_single_strings_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"wrap it: \['c12'\]"):
        recall_at_k("c12", {"c1"}, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"wrap it: \[\{'c1'\}\]"):
        grouped_compute("recall@5", ["c1"], ["c1"])  # type: ignore[list-item]


# --------------------------------------------------------------------------- metric names


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("recall@5", MetricSpec("recall", 5)),
        ("ndcg@10", MetricSpec("ndcg", 10)),
        ("mrr", MetricSpec("mrr", None)),
        ("mrr@10", MetricSpec("mrr", 10)),
        ("hit@3", MetricSpec("hit", 3)),
        ("precision@5", MetricSpec("precision", 5)),
        (" NDCG@10 ", MetricSpec("ndcg", 10)),
    ],
)
def test_parse_metric_name(name: str, spec: MetricSpec) -> None:
    assert parse_metric_name(name) == spec
    assert parse_metric_name(spec.name) == spec  # the canonical name round-trips


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("map@5", ""),
        ("recall", "recall needs a cutoff"),
        ("recall@0", "cutoff '0' is not a positive integer"),
        ("ndcg@x", "cutoff 'x' is not a positive integer"),
        ("hit@", "cutoff '' is not a positive integer"),
    ],
)
def test_unknown_metric_name_lists_valid_names(name: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_metric_name(name)
    message = str(info.value)
    assert f"unknown metric name {name!r}" in message
    assert why in message
    assert "hit@k, recall@k, precision@k, mrr, mrr@k, ndcg@k" in message
    assert valid_metric_names()[:6] == ("hit@k", "recall@k", "precision@k", "mrr", "mrr@k", "ndcg@k")


def test_compute_dispatches_by_spec_or_name() -> None:
    assert compute(parse_metric_name("recall@2"), RANKED, GOLD) == 1 / 2
    assert compute("precision@10", RANKED, GOLD) == 2 / 10
    assert compute("mrr", RANKED, GOLD) == 1 / 2
    assert compute("mrr@1", RANKED, GOLD) == 0.0
    assert compute("hit@1", RANKED, GOLD) == 0.0


# --------------------------------------------------------------------------- ordering and doc level


def test_order_hits_score_desc_then_id_asc_duplicates_keep_best() -> None:
    items = [("b", 1.0), ("a", 1.0), ("c", 2.0), ("a", 0.5), ("d", 0.5)]
    # c (2.0); a and b tie at 1.0 -> a first; a's second copy (0.5) collapses; d
    assert order_hits(items) == ["c", "a", "b", "d"]
    assert order_hits([]) == []


def test_order_hits_rejects_nan() -> None:
    with pytest.raises(ValueError, match=r"score of 'x' is NaN"):
        order_hits([("a", 1.0), ("x", float("nan"))])


def test_to_doc_ranking_keeps_best_rank_of_each_doc() -> None:
    doc_of = {"c1": "d1", "c2": "d2", "c3": "d1", "c4": "d3"}
    assert to_doc_ranking(["c3", "c2", "c1", "c4"], doc_of) == ["d1", "d2", "d3"]
    # doc-level metrics on the doc list: gold doc d3 is at doc rank 3, though chunk rank 4
    assert mrr(to_doc_ranking(["c3", "c2", "c1", "c4"], doc_of), {"d3"}) == 1 / 3


def test_to_doc_ranking_unknown_chunk() -> None:
    with pytest.raises(ValueError, match=r"chunk id 'c9' has no entry in doc_of \(1 chunks known\)"):
        to_doc_ranking(["c1", "c9"], {"c1": "d1"})


# --------------------------------------------------------------------------- evidence groups


def test_evidence_recall_and_found() -> None:
    groups = [{"a", "a2"}, {"b"}]  # a or a2 satisfies the first group
    ranked = ["x", "a2", "y", "b"]
    assert evidence_recall_at_k(ranked, groups, 2) == 1 / 2
    assert evidence_recall_at_k(ranked, groups, 4) == 2 / 2
    assert evidence_recall_at_k(ranked, groups, None) == 2 / 2
    assert evidence_found(ranked, groups) is True
    assert evidence_found(ranked, groups, k=3) is False
    # both alternatives of one group count once, not twice
    assert evidence_recall_at_k(["a", "a2"], [{"a", "a2"}, {"b"}, {"c"}], 5) == 1 / 3


def test_evidence_groups_are_validated() -> None:
    with pytest.raises(ValueError, match=r"no evidence groups"):
        evidence_recall_at_k(["a"], [], 5)
    with pytest.raises(ValueError, match=r"evidence group #1 is empty"):
        evidence_found(["a"], [{"a"}, set()])


def test_first_rank_counts_after_collapsing() -> None:
    assert first_rank(["x", "x", "b", "a"], {"a", "b"}) == 2
    assert first_rank(["x", "y"], {"a"}) is None
    assert first_rank([], {"a"}) is None


def test_mean_with_n() -> None:
    assert mean_with_n([]) == (None, 0)
    assert mean_with_n([1.0, 0.0, 0.5]) == ((1.0 + 0.0 + 0.5) / 3, 3)
    with pytest.raises(ValueError, match=r"value #1 is NaN"):
        mean_with_n([1.0, float("nan")])


# --------------------------------------------------------------------------- pytrec_eval cross-check

CUTOFFS = (1, 3, 5, 10)
# Ids whose lexical order differs from their numeric order, plus upper case and CJK,
# so that a wrong tie rule or a byte-vs-code-point mix-up would show.
POOL = [f"d{i}" for i in range(20)] + ["D3", "Dz", "章1", "章2", "节", "a-1", "a_1"]


@pytest.fixture(scope="module")
def pytrec_eval() -> Any:
    return pytest.importorskip("pytrec_eval")


def _measures() -> set[str]:
    cut = [f"{m}.{k}" for m in ("P", "recall", "ndcg_cut", "success") for k in CUTOFFS]
    return {*cut, "recip_rank", "set_P", "set_recall", "ndcg"}


def _random_queries(n: int, seed: int) -> dict[str, tuple[dict[str, float], set[str]]]:
    """``qid -> (scores, gold)``; few distinct score values, so ties are frequent."""
    rng = random.Random(seed)
    queries: dict[str, tuple[dict[str, float], set[str]]] = {}
    for i in range(n):
        retrieved = rng.sample(POOL, rng.randint(0, 15))
        scores = {d: rng.choice([0.0, 0.25, 0.5, 0.5, 1.0, 1.0]) for d in retrieved}
        gold = set(rng.sample(POOL, rng.randint(1, 5)))
        queries[f"q{i}"] = (scores, gold)
    return queries


def _ours(ranked: list[str], gold: set[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in CUTOFFS:
        out[f"P_{k}"] = precision_at_k(ranked, gold, k)
        out[f"recall_{k}"] = recall_at_k(ranked, gold, k)
        out[f"ndcg_cut_{k}"] = ndcg_at_k(ranked, gold, k)
        out[f"success_{k}"] = hit_at_k(ranked, gold, k)
    out["recip_rank"] = mrr(ranked, gold)
    out["set_P"] = precision_at_k(ranked, gold, None)
    out["set_recall"] = recall_at_k(ranked, gold, None)
    out["ndcg"] = ndcg_at_k(ranked, gold, None)
    return out


def _trec_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, ties by docno descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda p: (p[1], p[0]), reverse=True)]


def _with_duplicates(ranked: list[str], rng: random.Random) -> list[str]:
    """Insert repeats of earlier ids; collapsing (first wins) must give ``ranked`` back."""
    out: list[str] = []
    for d in ranked:
        out.append(d)
        if out and rng.random() < 0.3:
            out.append(rng.choice(out))
    assert dedupe(out) == ranked
    return out


def _assert_same(ours: dict[str, float], theirs: dict[str, float], qid: str) -> None:
    for measure, value in theirs.items():
        assert ours[measure] == pytest.approx(value, rel=1e-12, abs=1e-12), (qid, measure, ours[measure], value)


def test_trec_eval_breaks_ties_by_id_descending(pytrec_eval: Any) -> None:
    """The experiment behind the tie rule: four tied ids, each in turn the only gold id."""
    run = {"q": {"a": 1.0, "B": 1.0, "章": 1.0, "Z": 1.0, "d10": 1.0, "d9": 1.0}}
    # descending code-point order: 章 (U+7AE0) > d9 > d10 > a > Z > B
    expected_order = ["章", "d9", "d10", "a", "Z", "B"]
    for rank, doc in enumerate(expected_order, start=1):
        got = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"}).evaluate(run)
        assert got["q"]["recip_rank"] == 1 / rank, doc
    assert _trec_order(run["q"]) == expected_order
    # ours is the reverse on a full tie
    assert order_hits(run["q"].items()) == list(reversed(expected_order))


def test_matches_pytrec_eval_on_our_order(pytrec_eval: Any) -> None:
    """300 random queries with tied scores: order with ``order_hits``, then give pytrec_eval
    strictly decreasing scores encoding that order so both rank identically."""
    queries = _random_queries(300, seed=20240601)
    rng = random.Random(7)
    qrels = {qid: {d: 1 for d in gold} for qid, (_, gold) in queries.items()}
    rankings = {qid: order_hits(scores.items()) for qid, (scores, _) in queries.items()}
    run = {qid: {d: float(len(r) - i) for i, d in enumerate(r)} for qid, r in rankings.items()}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, _measures()).evaluate(run)
    assert len(theirs) == 300
    assert sum(1 for scores, _ in queries.values() if len(set(scores.values())) < len(scores)) > 200  # ties
    for qid, (_, gold) in queries.items():
        ranked = _with_duplicates(rankings[qid], rng)
        _assert_same(_ours(ranked, gold), theirs[qid], qid)


def test_mrr_at_k_matches_pytrec_eval_on_truncated_runs(pytrec_eval: Any) -> None:
    """trec_eval has no recip_rank cutoff: MRR@k equals recip_rank of the run cut at k."""
    queries = _random_queries(250, seed=99)
    qrels = {qid: {d: 1 for d in gold} for qid, (_, gold) in queries.items()}
    for k in (1, 3, 10):
        rankings = {qid: order_hits(scores.items()) for qid, (scores, _) in queries.items()}
        run = {qid: {d: float(len(r) - i) for i, d in enumerate(r[:k])} for qid, r in rankings.items()}
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
        for qid, (_, gold) in queries.items():
            assert mrr(rankings[qid], gold, k) == pytest.approx(theirs[qid]["recip_rank"]), (qid, k)


def test_raw_tied_scores_differ_only_by_the_tie_rule(pytrec_eval: Any) -> None:
    """pytrec_eval on the *raw* tied scores equals our metrics on trec_eval's order
    (id descending on ties); on ``order_hits``' order (id ascending) some queries differ."""
    queries = _random_queries(300, seed=31337)
    qrels = {qid: {d: 1 for d in gold} for qid, (_, gold) in queries.items()}
    run = {qid: scores for qid, (scores, _) in queries.items()}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, _measures()).evaluate(run)
    differing = 0
    for qid, (scores, gold) in queries.items():
        _assert_same(_ours(_trec_order(scores), gold), theirs[qid], qid)
        ours_asc = _ours(order_hits(scores.items()), gold)
        if any(ours_asc[m] != pytest.approx(v) for m, v in theirs[qid].items()):
            differing += 1
    assert differing > 0  # ties do change metrics: the two tie rules are not interchangeable
    # the smallest case: three tied ids, gold "a": trec_eval ranks it 3rd, we rank it 1st
    tied = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    got = pytrec_eval.RelevanceEvaluator({"q": {"a": 1}}, {"recip_rank"}).evaluate(tied)
    assert got["q"]["recip_rank"] == 1 / 3
    assert mrr(order_hits(tied["q"].items()), {"a"}) == 1 / 1
