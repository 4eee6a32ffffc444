"""rag_eval.metrics.claims: RAGChecker's claim-level metrics, written as hand arithmetic."""

from __future__ import annotations

import pytest

from rag_eval.metrics.claims import (
    GENERATOR,
    KEYS,
    LOWER_IS_BETTER,
    OVERALL,
    RETRIEVER,
    ClaimChecks,
    Tri,
    case_metrics,
    f1,
    pooled,
    tri_all,
    tri_any,
    unknown_counts,
)

T, F, U = True, False, None


def checks(a: list[Tri], g: list[Tri], r: list[list[Tri]], gg: list[list[Tri]], n: int) -> ClaimChecks:
    return ClaimChecks(tuple(a), tuple(g), tuple(map(tuple, r)), tuple(map(tuple, gg)), n)


# Three chunks; chunk 1 and 2 hold reference claims (relevant), chunk 3 none (irrelevant).
# Answer claims: 1 right on [1]; 2 wrong on [2] (relevant noise); 3 wrong on [3] only
# (irrelevant noise); 4 wrong in no chunk (hallucination); 5 right in no chunk (self-knowledge).
CASE = checks(
    a=[T, F, F, F, T],
    g=[T, F, F],
    r=[[T, F, F], [F, T, F], [F, F, T], [F, F, F], [F, F, F]],
    gg=[[T, F, F], [F, T, F], [F, F, F]],
    n=3,
)


def test_every_metric_equals_hand_arithmetic() -> None:
    m = case_metrics(CASE)
    assert m == pytest.approx(
        {
            "answer_precision": 2 / 5,
            "answer_recall": 1 / 3,
            "answer_f1": 2 * (2 / 5) * (1 / 3) / (2 / 5 + 1 / 3),
            "claim_recall": 2 / 3,  # reference claims 1, 2 are in some chunk
            "context_precision": 2 / 3,  # chunks 1, 2 relevant
            "context_utilization": 1 / 2,  # of claims 1, 2 (in context) the answer states 1
            "noise_sensitivity_relevant": 1 / 5,
            "noise_sensitivity_irrelevant": 1 / 5,
            "hallucination": 1 / 5,
            "self_knowledge": 1 / 5,
            "context_faithfulness": 3 / 5,
        }
    )


def test_a_wrong_claim_on_a_relevant_and_an_irrelevant_chunk_is_relevant_noise_only() -> None:
    c = checks(a=[F], g=[T], r=[[T, T]], gg=[[T, F]], n=2)
    m = case_metrics(c)
    assert (m["noise_sensitivity_relevant"], m["noise_sensitivity_irrelevant"]) == (1.0, 0.0)


def test_an_undecided_claim_is_left_out_of_the_denominators_and_counted() -> None:
    # Claim 2: the reference check is unknown; it is in chunk 1, so faithfulness counts it.
    c = checks(a=[T, U], g=[T], r=[[T], [T]], gg=[[T]], n=1)
    m = case_metrics(c)
    assert m["answer_precision"] == 1 / 1  # 1 decided claim, not 1/2
    assert m["context_faithfulness"] == 2 / 2
    assert m["noise_sensitivity_relevant"] == 0 / 1  # claim 2's "wrong on a relevant chunk" is unknown
    assert m["self_knowledge"] == 0 / 2  # claim 2 is in a chunk: decided False whatever a is
    assert unknown_counts(c) == {"unknown_claims": 1, "unknown_facts": 0}


def test_an_unknown_chunk_check_only_decides_through_kleene_logic() -> None:
    assert tri_any([F, U, T]) is True and tri_any([F, U]) is None and tri_any([]) is False
    assert tri_all(T, U) is None and tri_all(F, U) is False and tri_all(T, T) is True
    c = checks(a=[F], g=[F], r=[[U, F]], gg=[[U, F]], n=2)
    m = case_metrics(c)
    assert "claim_recall" not in m and "hallucination" not in m and "context_faithfulness" not in m
    assert m["context_precision"] == 0 / 1  # chunk 2 decided irrelevant, chunk 1 unknown
    assert unknown_counts(c) == {"unknown_claims": 1, "unknown_facts": 1}


def test_empty_claim_lists_make_metrics_absent_not_zero() -> None:
    no_answer_claims = checks(a=[], g=[T], r=[], gg=[[T]], n=1)
    m = case_metrics(no_answer_claims)
    assert "answer_precision" not in m and "hallucination" not in m and "answer_f1" not in m
    assert m["answer_recall"] == 1.0 and m["claim_recall"] == 1.0
    no_reference = checks(a=[U, U], g=[], r=[[T], [F]], gg=[], n=1)
    assert case_metrics(no_reference) == {"context_faithfulness": 1 / 2}
    nothing_in_context = checks(a=[T], g=[T], r=[[T]], gg=[[F]], n=1)
    assert "context_utilization" not in case_metrics(nothing_in_context)  # 0/0


def test_f1_is_zero_when_both_are_zero_and_absent_when_one_is() -> None:
    assert f1(0.0, 0.0) == 0.0 and f1(0.5, None) is None and f1(1.0, 0.5) == 2 * 0.5 / 1.5


def test_pooled_is_the_mean_over_the_cases_that_have_the_metric() -> None:
    m = pooled([{"hallucination": 0.5, "answer_recall": 1.0}, {"hallucination": 0.0}])
    assert m == {"hallucination": 0.25, "answer_recall": 1.0}


def test_the_direction_table_covers_every_key_and_the_groups_partition_them() -> None:
    assert set(LOWER_IS_BETTER) == set(KEYS) == set(OVERALL + RETRIEVER + GENERATOR)
    assert {k for k, low in LOWER_IS_BETTER.items() if low} == {
        "noise_sensitivity_relevant",
        "noise_sensitivity_irrelevant",
        "hallucination",
    }


def test_rows_must_match_the_claims_and_chunks() -> None:
    with pytest.raises(ValueError, match="one row per answer claim"):
        checks(a=[T], g=[], r=[], gg=[], n=0)
    with pytest.raises(ValueError, match="needs 2 entries"):
        checks(a=[T], g=[], r=[[T]], gg=[], n=2)
