"""Grouped retrieval metrics: with alternatives, hand-checkable arithmetic; the registry
(names, directions, a metric registered from outside); one pass equals one metric at a
time. With one id per requirement they are trec_eval's metrics: test_metrics_retrieval.py
checks that against pytrec_eval."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest

from rag_eval.metrics import grouped
from rag_eval.metrics.grouped import (
    RankProfile,
    RetrievalMetric,
    grouped_compute,
    grouped_compute_all,
    parse_metric_name,
    register,
    valid_metric_names,
)

NAMES = [
    "hit@1",
    "hit@5",
    "recall@1",
    "recall@3",
    "recall@10",
    "precision@1",
    "precision@5",
    "precision@10",
    "mrr",
    "mrr@3",
    "mrr@10",
    "ndcg@1",
    "ndcg@3",
    "ndcg@5",
    "ndcg@10",
]
DEFAULT = ("hit@1", "hit@5", "recall@1", "recall@5", "recall@10", "precision@5", "mrr", "mrr@10", "ndcg@5", "ndcg@10")


def test_spec_or_name() -> None:
    assert grouped_compute(parse_metric_name("recall@2"), ["a", "b"], [{"a"}, {"z"}]) == 1 / 2
    assert grouped_compute("recall@2", ["a", "b"], [{"a"}, {"z"}]) == 1 / 2


# --------------------------------------------------------------------------- alternatives

# requirement 1: any of a1, a2; requirement 2: b
GROUPS = [frozenset({"a1", "a2"}), frozenset({"b"})]


def test_recall_counts_satisfied_requirements() -> None:
    assert grouped_compute("recall@1", ["a2", "b"], GROUPS) == 1 / 2
    assert grouped_compute("recall@2", ["a2", "b"], GROUPS) == 2 / 2
    # both alternatives of requirement 1, requirement 2 missing: still one of two
    assert grouped_compute("recall@3", ["a1", "a2", "x"], GROUPS) == 1 / 2


def test_hit_is_any_gold_id() -> None:
    assert grouped_compute("hit@1", ["x", "a2"], GROUPS) == 0.0
    assert grouped_compute("hit@2", ["x", "a2"], GROUPS) == 1.0


def test_precision_counts_every_gold_id_over_k() -> None:
    # a1 and a2 are both relevant ids; 3 gold ids among the top 4, divided by k=4
    assert grouped_compute("precision@4", ["a1", "x", "a2", "b"], GROUPS) == 3 / 4
    # fewer than k came back: missing slots are misses
    assert grouped_compute("precision@5", ["a1"], GROUPS) == 1 / 5


def test_mrr_is_the_first_gold_id() -> None:
    assert grouped_compute("mrr", ["x", "y", "a2", "b"], GROUPS) == 1 / 3
    assert grouped_compute("mrr@2", ["x", "y", "a2", "b"], GROUPS) == 0.0
    assert grouped_compute("mrr", ["x"], GROUPS) == 0.0


def test_ndcg_credits_only_the_first_hit_of_a_requirement() -> None:
    # ranks: a1 (gain 1), a2 (same requirement: gain 0), b (gain 1)
    dcg = 1 / math.log2(1 + 1) + 0 + 1 / math.log2(3 + 1)
    ideal = 1 / math.log2(1 + 1) + 1 / math.log2(2 + 1)  # two requirements on top
    assert grouped_compute("ndcg@3", ["a1", "a2", "b"], GROUPS) == pytest.approx(dcg / ideal)
    # the flat metric would count a2 as well; the grouped one must not exceed 1
    assert grouped_compute("ndcg@3", ["a1", "b", "a2"], GROUPS) == pytest.approx(1.0)


def test_ndcg_ideal_is_cut_at_k() -> None:
    # k = 1: the ideal holds one gain, so one requirement at rank 1 is perfect
    assert grouped_compute("ndcg@1", ["a2", "b"], GROUPS) == 1.0
    assert grouped_compute("ndcg@2", ["x", "b"], GROUPS) == pytest.approx(
        (1 / math.log2(2 + 1)) / (1 / math.log2(2) + 1 / math.log2(3))
    )


def test_an_id_shared_by_two_requirements_credits_one_of_them() -> None:
    groups = [frozenset({"s", "a"}), frozenset({"s", "b"})]
    # s satisfies one requirement at rank 1, b the other at rank 2: ideal ordering
    assert grouped_compute("ndcg@2", ["s", "b"], groups) == pytest.approx(1.0)
    # s alone covers both for recall (each requirement has an id in the top 1)
    assert grouped_compute("recall@1", ["s"], groups) == 1.0
    # but only one nDCG gain: 1 / (1 + 1/log2(3))
    assert grouped_compute("ndcg@2", ["s", "x"], groups) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_duplicates_in_the_ranking_collapse() -> None:
    assert grouped_compute("precision@2", ["a1", "a1", "b"], GROUPS) == 2 / 2
    assert grouped_compute("ndcg@2", ["a1", "a1", "b"], GROUPS) == pytest.approx(1.0)


def test_empty_ranking_scores_zero() -> None:
    for name in NAMES:
        assert grouped_compute(name, [], GROUPS) == 0.0


@pytest.mark.parametrize("groups", [[], [frozenset()], [frozenset({"a"}), frozenset()]])
def test_no_requirement_or_an_empty_requirement_is_an_error(groups: list[frozenset[str]]) -> None:
    with pytest.raises(ValueError, match="at least one requirement and no empty requirement"):
        grouped_compute("recall@5", ["a"], groups)


def test_unknown_metric_name() -> None:
    with pytest.raises(ValueError, match="unknown metric name 'recal@5'"):
        grouped_compute("recal@5", ["a"], GROUPS)


# --------------------------------------------------------------------------- all metrics in one pass


def random_groups(rng: random.Random) -> tuple[list[str], list[frozenset[str]]]:
    """Requirements with alternatives, ids shared between requirements, duplicate ranks."""
    pool = [f"d{i}" for i in range(rng.randint(1, 30))]
    groups = [frozenset(rng.sample(pool, rng.randint(1, min(3, len(pool))))) for _ in range(rng.randint(1, 4))]
    ranked = [rng.choice(pool) for _ in range(rng.randint(0, 25))]
    return ranked, groups


@pytest.mark.parametrize("names", [NAMES, DEFAULT, ["ndcg@10", "mrr", "recall@1"], ["recall@50", "precision@30"], []])
def test_one_pass_equals_each_metric_alone_bit_for_bit(names: list[str]) -> None:
    rng = random.Random(20261206)
    for _ in range(500):
        ranked, groups = random_groups(rng)
        alone = [grouped_compute(m, ranked, groups) for m in names]
        together = grouped_compute_all(names, ranked, groups)
        assert [x.hex() for x in together] == [x.hex() for x in alone], (names, ranked, groups)


def test_one_pass_takes_specs_and_names_and_the_hand_checked_cases() -> None:
    specs = [parse_metric_name("recall@2"), "ndcg@3", "mrr@2", "precision@4"]
    assert grouped_compute_all(specs, ["x", "a2", "b"], GROUPS) == [
        grouped_compute(s, ["x", "a2", "b"], GROUPS) for s in specs
    ]
    groups = [frozenset({"s", "a"}), frozenset({"s", "b"})]
    assert grouped_compute_all(["recall@1", "ndcg@2"], ["s", "x"], groups) == [
        1.0,
        pytest.approx(1 / (1 + 1 / math.log2(3))),
    ]


def test_one_pass_raises_what_each_metric_raises() -> None:
    with pytest.raises(ValueError, match="at least one requirement and no empty requirement"):
        grouped_compute_all(["recall@5"], ["a"], [frozenset()])
    with pytest.raises(ValueError, match="unknown metric name 'recal@5'"):
        grouped_compute_all(["mrr", "recal@5"], ["a"], GROUPS)
    with pytest.raises(TypeError, match="single string"):
        grouped_compute_all(["mrr"], "a1", GROUPS)


# --------------------------------------------------------------------------- the registry


def _all_found(p: RankProfile, k: int | None) -> float:
    """1 when every requirement has an id in the top k."""
    return 1.0 if p.satisfied_upto[p.cut(k)] == p.requirements else 0.0


def _first_rank(p: RankProfile, k: int | None) -> float:
    """The rank of the first gold id, the list's length + 1 when none is in the top k."""
    return float(p.first_gold) if p.first_gold is not None and p.first_gold <= p.cut(k) else float(p.cut(k) + 1)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A copy of the registry for one test; the built-in one is back afterwards."""
    monkeypatch.setattr(grouped, "_REGISTRY", dict(grouped._REGISTRY))
    yield grouped._REGISTRY
    parse_metric_name.cache_clear()


def test_the_builtin_metrics_are_the_registered_ones() -> None:
    assert valid_metric_names() == ("hit@k", "recall@k", "precision@k", "mrr", "mrr@k", "ndcg@k")
    assert [m.name for m in grouped.registered()] == ["hit", "recall", "precision", "mrr", "ndcg"]
    assert not any(grouped.lower_is_better(n) for n in ("hit@3", "recall@5", "precision@5", "mrr", "ndcg@10"))


def test_a_registered_metric_is_parsed_computed_and_directed(registry: object) -> None:
    register(RetrievalMetric("allfound", _all_found))
    register(RetrievalMetric("firstrank", _first_rank, cutoff_optional=True, lower_is_better=True))
    assert valid_metric_names()[-3:] == ("allfound@k", "firstrank", "firstrank@k")
    assert parse_metric_name("AllFound@3").name == "allfound@3"
    # GROUPS: {a1, a2} and {b}; "b" at rank 3 meets the second requirement
    assert grouped_compute_all(["allfound@2", "allfound@3", "firstrank", "recall@2"], ["a2", "x", "b"], GROUPS) == [
        0.0,
        1.0,
        1.0,
        1 / 2,
    ]
    assert grouped_compute("firstrank@1", ["x", "a1"], GROUPS) == 1 + 1
    assert grouped.lower_is_better("firstrank@3") and not grouped.lower_is_better("allfound@3")
    with pytest.raises(ValueError, match="allfound needs a cutoff"):
        parse_metric_name("allfound")


def test_a_taken_or_badly_spelled_name_is_refused(registry: object) -> None:
    with pytest.raises(ValueError, match="'recall' is registered already"):
        register(RetrievalMetric("recall", _all_found))
    for bad in ("Recall", "r2", "r@k", "doc.r", ""):
        with pytest.raises(ValueError, match="lower-case letters without"):
            register(RetrievalMetric(bad, _all_found))
    assert register(RetrievalMetric("hit", grouped.hit)) == RetrievalMetric("hit", grouped.hit)  # the same again
