"""Reciprocal Rank Fusion: hand-checkable arithmetic, tie-breaks, and a brute-force reference."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from rag_app.errors import ConfigError
from rag_app.retrieval import rrf_fuse
from rag_app.types import Hit


def test_scores_are_sums_of_reciprocal_ranks() -> None:
    vector = ["a", "b", "c"]
    bm25 = ["c", "d", "a"]
    hits = rrf_fuse([vector, bm25], k=60)
    scores = {h.chunk_id: h.score for h in hits}
    assert scores["a"] == pytest.approx(1 / (60 + 1) + 1 / (60 + 3))
    assert scores["c"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1))
    assert scores["b"] == pytest.approx(1 / (60 + 2))
    assert scores["d"] == pytest.approx(1 / (60 + 2))
    # a and c tie exactly (same ranks, other lists) -> id order; so do b and d.
    assert [h.chunk_id for h in hits] == ["a", "c", "b", "d"]
    assert [h.rank for h in hits] == [1, 2, 3, 4]


def test_agreement_beats_a_single_top_rank() -> None:
    # x is 2nd in both lists: 2/62 ≈ 0.03226 > y's 1/61 ≈ 0.01639 (top of one list only).
    hits = rrf_fuse([["y", "x"], ["z", "x"]], k=60)
    assert hits[0] == Hit("x", 2 / 62, 1)
    assert [h.chunk_id for h in hits] == ["x", "y", "z"]


def test_k_changes_the_arithmetic() -> None:
    hits = rrf_fuse([["a", "b"], ["b"]], k=0)
    # k=0: a = 1/1, b = 1/2 + 1/1 = 1.5
    assert [(h.chunk_id, h.score) for h in hits] == [("b", 1.5), ("a", 1.0)]


def test_duplicates_within_a_list_collapse_to_first_occurrence() -> None:
    hits = rrf_fuse([["a", "a", "b"]], k=60)
    # [a, a, b] is [a, b]: b is ranked 2nd, and a counts once.
    assert [(h.chunk_id, h.score) for h in hits] == [("a", 1 / 61), ("b", 1 / 62)]


def test_top_k_and_empty_inputs() -> None:
    lists = [["a", "b", "c"], ["b"]]
    assert [h.chunk_id for h in rrf_fuse(lists, top_k=2)] == ["b", "a"]
    assert rrf_fuse(lists, top_k=0) == []
    assert rrf_fuse([]) == []
    assert rrf_fuse([[], []]) == []
    assert [h.chunk_id for h in rrf_fuse([[], ["q"]])] == ["q"]


def test_ties_are_exact_regardless_of_list_order() -> None:
    # Three lists: p has ranks (1, 2, 3), q has (3, 1, 2); same multiset of ranks,
    # so the scores must be bit-identical whatever order floats are added in.
    lists = [["p", "r", "q"], ["q", "p", "r"], ["r", "q", "p"]]
    hits = rrf_fuse(lists)
    assert len({h.score for h in hits}) == 1
    assert [h.chunk_id for h in hits] == ["p", "q", "r"]


@pytest.mark.parametrize(("k", "top_k"), [(-1, None), (60, -1)])
def test_invalid_parameters_name_the_setting(k: int, top_k: int | None) -> None:
    with pytest.raises(ConfigError, match="rrf_k|fused_top_k"):
        rrf_fuse([["a"]], k=k, top_k=top_k)


def _reference(lists: list[list[str]], k: int) -> list[tuple[str, Fraction]]:
    """Brute force with exact fractions: every id, every list, its first position."""
    ids = sorted({d for lst in lists for d in lst})
    out = []
    for d in ids:
        total = Fraction(0)
        for lst in lists:
            deduped = list(dict.fromkeys(lst))
            if d in deduped:
                total += Fraction(1, k + deduped.index(d) + 1)
        out.append((d, total))
    return sorted(out, key=lambda item: (-item[1], item[0]))


def test_matches_brute_force_reference_on_random_lists_with_ties() -> None:
    rng = random.Random(20240601)
    for _ in range(300):
        universe = [f"d{i:02d}" for i in range(rng.randint(1, 12))]
        # Few lists over few ids: many exact ties; repeats inside a list on purpose.
        lists = [[rng.choice(universe) for _ in range(rng.randint(0, 8))] for _ in range(rng.randint(1, 4))]
        k = rng.choice([0, 1, 60])
        expected = _reference(lists, k)
        got = rrf_fuse(lists, k=k)
        assert [h.chunk_id for h in got] == [d for d, _ in expected], (lists, k)
        assert [h.rank for h in got] == list(range(1, len(expected) + 1))
        for hit, (_, exact) in zip(got, expected):
            assert hit.score == pytest.approx(float(exact), rel=1e-12)
