"""The retrieval tier for one case, on hand-built traces: metrics at every stage, and for
each way of losing the gold the stage it is blamed on and the sentence that says so."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag_eval.core.case import CaseResult
from rag_eval.core.records import Hit, StageResult, Trace
from rag_eval.core.records import RetrievalRecord as RetrievalResult
from rag_eval.core.stages import StageSpec
from rag_eval.golden.model import EvidenceGroup, EvidenceRef, GoldenItem
from rag_eval.golden.resolve import ResolvedGold
from rag_eval.tiers.retrieval.case import (
    DEFAULT_METRICS,
    RetrievalCaseConfig,
    evaluate_retrieval,
    narrate,
)

# A tiny index: documents d1..d9, each with one parent and two children.
DOCS = [f"d{i}" for i in range(1, 10)]
CHILDREN = [f"{d}::c{j}" for d in DOCS for j in (1, 2)]
PARENTS = [f"{d}::p" for d in DOCS]
DOC_OF = {**{c: c.split("::")[0] for c in CHILDREN}, **{p: p.split("::")[0] for p in PARENTS}}
KIND_OF = {**{c: "child" for c in CHILDREN}, **{p: "parent" for p in PARENTS}}

GOLD = "d1::c2"  # the gold child, under parent d1::p, in document d1
FILLER = [c for c in CHILDREN if not c.startswith("d1::")]  # 16 non-gold children of d2..d9


def stage(name: str, *ids: str) -> StageResult:
    return StageResult(name, tuple(Hit(cid, 1.0 - r / 100, r) for r, cid in enumerate(ids, 1)))


def result(**stages: list[str]) -> RetrievalResult:
    order = ("vector", "bm25", "fused", "reranked", "context")
    return RetrievalResult("q", (), Trace(tuple(stage(n, *stages[n]) for n in order if n in stages)))


def item(negative: bool = False, **kw: Any) -> GoldenItem:
    evidence = () if negative else (EvidenceGroup((EvidenceRef(chunk_id=GOLD),)),)
    return GoldenItem(
        id="case-1", question="q", evidence=evidence, tags={"scenario": "negative" if negative else "standard"}, **kw
    )


ONE_GOLD = ResolvedGold((frozenset({GOLD}),), (frozenset({"d1::p"}),), (frozenset({"d1"}),))
NO_GOLD = ResolvedGold((), (), ())


# rag_app's shape, declared here as any system would declare its own
SPEC = StageSpec((("vector", "bm25"), ("fused",), ("reranked",), ("context",)), final="context", thresholded="vector")


def run(
    res: RetrievalResult,
    gold: ResolvedGold = ONE_GOLD,
    config: RetrievalCaseConfig | None = None,
    spec: StageSpec = SPEC,
    **item_kw: Any,
) -> CaseResult:
    it = item(negative=not gold.doc_groups, **item_kw)
    return evaluate_retrieval(it, gold, res, DOC_OF, KIND_OF, config or RetrievalCaseConfig(), spec, duration=0.25)


def fillers(n: int, start: int = 0) -> list[str]:
    return FILLER[start : start + n]


# --------------------------------------------------------------------------- metrics


def test_gold_reaching_the_context_passes_with_metrics_at_every_stage() -> None:
    res = result(
        vector=[GOLD, *fillers(4)],
        bm25=[*fillers(2), GOLD],
        fused=[*fillers(1), GOLD, *fillers(3, 1)],
        reranked=[*fillers(2), GOLD],
        context=[*fillers(3), GOLD],
    )
    case = run(res)
    assert (case.outcome, case.failed_stage, case.message) == ("pass", None, "")
    assert (case.id, case.tier, case.split, case.negative, case.duration) == (
        "case-1",
        "retrieval",
        "tune",
        False,
        0.25,
    )
    m = case.metrics
    assert m["vector.mrr"] == 1 / 1 and m["bm25.mrr"] == 1 / 3 and m["fused.mrr"] == 1 / 2
    assert m["reranked.mrr"] == 1 / 3 and m["context.mrr"] == 1 / 4
    assert m["vector.recall@1"] == 1.0 and m["bm25.recall@1"] == 0.0
    assert m["context.precision@5"] == 1 / 5
    # the final stage is also reported without a prefix: the gates' 'recall@5', 'mrr'
    assert m["mrr"] == m["context.mrr"] == 1 / 4
    assert m["recall@5"] == m["context.recall@5"] == 1.0
    assert m["doc.mrr"] == m["context.doc.mrr"]
    # doc level: fillers d2::c1, d2::c2, d3::c1 are docs d2, d2, d3 -> doc ranking d2, d3, d1
    assert m["context.doc.mrr"] == 1 / 3
    # bm25 doc ranking: d2 (d2::c1, d2::c2), d1 -> rank 2
    assert m["bm25.doc.mrr"] == 1 / 2
    stages = ("vector", "bm25", "fused", "reranked", "context")
    expected = {f"{s}.{mm}" for s in stages for mm in DEFAULT_METRICS}
    expected |= {f"{s}.doc.{mm}" for s in stages for mm in DEFAULT_METRICS}
    expected |= set(DEFAULT_METRICS) | {f"doc.{mm}" for mm in DEFAULT_METRICS}
    assert set(m) == expected
    assert case.details["gold_ranks"] == [{"vector": 1, "bm25": 3, "fused": 2, "reranked": 3, "context": 4}]


def test_extra_metrics_from_the_config() -> None:
    res = result(vector=[GOLD], bm25=[], fused=[GOLD], reranked=[GOLD], context=[GOLD])
    case = run(res, config=RetrievalCaseConfig(metrics=("recall@7",)))
    assert set(case.metrics) == {
        f"{s}{p}recall@7" for s in ("vector.", "bm25.", "fused.", "reranked.", "context.", "") for p in ("", "doc.")
    }


def test_parent_kind_context_is_scored_against_the_parent_gold() -> None:
    res = result(
        vector=[GOLD],
        bm25=[GOLD],
        fused=[GOLD],
        reranked=["d2::c1", GOLD],
        context=["d2::p", "d1::p"],  # context_mode=parent: the context holds parents
    )
    case = run(res)
    assert case.outcome == "pass"
    assert case.metrics["context.mrr"] == 1 / 2  # d1::p at rank 2
    assert case.metrics["context.doc.mrr"] == 1 / 2
    assert case.details["gold_ranks"][0]["context"] == 2


def test_doc_only_gold_gives_doc_metrics_only() -> None:
    gold = ResolvedGold(None, None, (frozenset({"d1"}),))
    res = result(vector=["d1::c1"], bm25=[], fused=["d1::c1"], reranked=["d1::c1"], context=["d2::c1", "d1::c1"])
    case = run(res, gold)
    assert case.outcome == "pass"
    assert "recall@5" not in case.metrics and "context.mrr" not in case.metrics
    assert case.metrics["doc.mrr"] == 1 / 2
    assert case.details["gold"] == {"chunks": None, "parents": None, "docs": [["d1"]]}


# --------------------------------------------------------------------------- where the gold was lost


def test_never_retrieved_is_blamed_on_vector_plus_bm25() -> None:
    res = result(vector=fillers(3), bm25=fillers(5), fused=fillers(6), reranked=fillers(4), context=fillers(2))
    case = run(res)
    assert (case.outcome, case.failed_stage) == ("fail", "vector+bm25")
    assert case.message == (
        "gold evidence did not reach context: requirement 1: not in vector (top 3), not in bm25 (top 5) — never retrieved"
    )
    assert case.metrics["recall@5"] == 0.0 and case.metrics["mrr"] == 0.0


def test_cut_by_fusion_top_k() -> None:
    res = result(
        vector=fillers(3), bm25=[fillers(1)[0], GOLD], fused=fillers(6), reranked=fillers(4), context=fillers(2)
    )
    case = run(res)
    assert case.failed_stage == "fused"
    assert case.message == (
        "gold evidence did not reach context: requirement 1: not in vector (top 3), in bm25 rank 2, cut at fused (6 kept)"
    )


def test_dropped_by_the_reranker() -> None:
    res = result(
        vector=fillers(3),
        bm25=[FILLER[0], GOLD],
        fused=[*fillers(3), GOLD, *fillers(6, 3)],
        reranked=fillers(8),
        context=fillers(5),
    )
    case = run(res)
    assert case.failed_stage == "reranked"
    assert "in bm25 rank 2, in fused rank 4, cut at reranked (8 kept)" in case.message
    assert case.metrics["fused.mrr"] == 1 / 4 and case.metrics["reranked.mrr"] == 0.0


def test_cut_by_truncation() -> None:
    res = result(vector=[GOLD], bm25=[], fused=[GOLD], reranked=[*fillers(2), GOLD], context=fillers(2))
    case = run(res)
    assert case.failed_stage == "context"
    assert case.message == (
        "gold evidence did not reach context: requirement 1: in vector rank 1, not in bm25 (top 0), in fused rank 1, "
        "in reranked rank 3, cut at context (2 kept)"
    )


def test_loss_stage_names_come_from_the_declaration() -> None:
    # side-by-side stages are blamed together; every other level by its own name
    assert SPEC.labels == ("vector+bm25", "fused", "reranked", "context", "retrieval")


# two requirements: d1::c2 and d2::c1
TWO_GOLD = ResolvedGold(
    (frozenset({GOLD}), frozenset({"d2::c1"})),
    (frozenset({"d1::p"}), frozenset({"d2::p"})),
    (frozenset({"d1"}), frozenset({"d2"})),
)


def test_the_earliest_loss_over_all_requirements_is_blamed() -> None:
    # requirement 1 is cut by truncation, requirement 2 is never retrieved: retrieval failed first
    res = result(vector=[GOLD], bm25=["d3::c1"], fused=[GOLD], reranked=[GOLD, "d3::c1"], context=["d3::c1"])
    case = run(res, TWO_GOLD)
    assert case.failed_stage == "vector+bm25"
    assert case.message.startswith("gold evidence did not reach context: requirement 1: in vector rank 1")
    assert "; requirement 2: not in vector (top 1), not in bm25 (top 1) — never retrieved" in case.message
    assert case.metrics["reranked.recall@5"] == 1 / 2


def test_one_requirement_reaching_the_context_is_not_enough() -> None:
    res = result(vector=[GOLD, "d2::c1"], bm25=[], fused=[GOLD, "d2::c1"], reranked=[GOLD, "d2::c1"], context=[GOLD])
    case = run(res, TWO_GOLD)
    assert case.failed_stage == "context"
    assert case.message.startswith("gold evidence did not reach context: requirement 2: ")  # requirement 1 made it
    assert case.metrics["recall@5"] == 1 / 2


def test_require_an_earlier_stage() -> None:
    res = result(vector=[GOLD], bm25=[], fused=[GOLD], reranked=fillers(3), context=fillers(2))
    assert run(res, config=RetrievalCaseConfig(require="fused")).outcome == "pass"
    assert run(res, config=RetrievalCaseConfig(require="reranked")).failed_stage == "reranked"


def test_with_an_earlier_required_stage_later_losses_are_not_blamed() -> None:
    # requirement 1 is dropped by the reranker (after 'fused': fine), requirement 2 is cut by fusion
    res = result(vector=[GOLD], bm25=["d2::c1"], fused=[GOLD], reranked=fillers(2), context=fillers(2))
    case = run(res, TWO_GOLD, RetrievalCaseConfig(require="fused"))
    assert case.failed_stage == "fused"
    assert case.message == (
        "gold evidence did not reach fused: requirement 2: not in vector (top 1), in bm25 rank 1, cut at fused (1 kept)"
    )


def test_a_stage_missing_from_the_trace_is_not_blamed() -> None:
    # a system without a reranker: no 'reranked' stage at all
    res = result(vector=[GOLD], bm25=[], fused=[GOLD], context=fillers(2))
    case = run(res)
    assert case.failed_stage == "context"
    assert not any(k.startswith("reranked.") for k in case.metrics)


def test_narrate_directly() -> None:
    stages = {
        s.name: s
        for s in result(
            vector=[], bm25=fillers(5), fused=fillers(10), reranked=fillers(8), context=fillers(4)
        ).trace.stages
    }
    ranks: list[dict[str, int | None]] = [
        {"vector": None, "bm25": 2, "fused": 4, "reranked": None, "context": None},
        {"vector": 1, "bm25": None, "fused": 1, "reranked": 1, "context": 1},
    ]
    assert narrate(ranks, stages, SPEC) == (
        "requirement 1: not in vector (top 0), in bm25 rank 2, in fused rank 4, cut at reranked (8 kept)"
    )


# --------------------------------------------------------------------------- per-case floors


def test_per_case_floor_fails_a_case_whose_gold_did_reach_the_context() -> None:
    res = result(vector=[GOLD], bm25=[], fused=[GOLD], reranked=[GOLD], context=[*fillers(2), GOLD])
    case = run(res, config=RetrievalCaseConfig(case_min={"mrr": 0.5}))
    # mrr = 1/3 < 0.5
    assert (case.outcome, case.failed_stage) == ("fail", "retrieval")
    assert case.message == "mrr = 0.333 < 0.5 (per-case threshold)"
    assert run(res, config=RetrievalCaseConfig(case_min={"mrr": 1 / 3})).outcome == "pass"


def test_per_case_floor_on_an_earlier_stage() -> None:
    res = result(vector=fillers(3) + [GOLD], bm25=[], fused=[GOLD], reranked=[GOLD], context=[GOLD])
    case = run(res, config=RetrievalCaseConfig(case_min={"vector.recall@1": 1.0, "bm25.doc.recall@5": 0.0}))
    assert case.message == "vector.recall@1 = 0.000 < 1.0 (per-case threshold)"


def test_per_case_floor_on_a_metric_not_measured_is_not_applied() -> None:
    # doc-only gold has no chunk-level recall@5: nothing to hold to the floor
    gold = ResolvedGold(None, None, (frozenset({"d1"}),))
    res = result(vector=["d1::c1"], bm25=[], fused=["d1::c1"], reranked=["d1::c1"], context=["d1::c1"])
    assert run(res, gold, RetrievalCaseConfig(case_min={"recall@5": 1.0})).outcome == "pass"


# --------------------------------------------------------------------------- negatives


def test_negative_measure_mode_records_and_passes() -> None:
    res = result(vector=["d2::c1"], bm25=fillers(3), fused=fillers(3), reranked=fillers(2), context=fillers(2))
    case = run(res, NO_GOLD)
    assert (case.outcome, case.negative, case.failed_stage) == ("pass", True, None)
    assert case.metrics == {"negative.any_above_threshold": 1.0, "negative.empty_context": 0.0}
    assert case.details["measured_only"] is True  # measured, never judged: not a pass in pass_rate


def test_negative_nothing_retrieved() -> None:
    res = result(vector=[], bm25=[], fused=[], reranked=[], context=[])
    case = run(res, NO_GOLD, RetrievalCaseConfig(negative="empty_context"))
    assert case.outcome == "pass"
    assert case.metrics == {"negative.any_above_threshold": 0.0, "negative.empty_context": 1.0}


def test_negative_no_vector_hit_mode() -> None:
    hit = result(
        vector=["d2::c1", "d3::c1"], bm25=fillers(3), fused=fillers(3), reranked=fillers(2), context=fillers(2)
    )
    case = run(hit, NO_GOLD, RetrievalCaseConfig(negative="no_threshold_hit"))
    assert (case.outcome, case.failed_stage) == ("fail", "vector")
    assert case.message == "negative item: 2 item(s) passed the similarity threshold of vector (expected none)"
    # BM25 alone (no threshold) does not fail this mode
    bm25_only = result(vector=[], bm25=fillers(3), fused=fillers(3), reranked=fillers(2), context=fillers(2))
    assert run(bm25_only, NO_GOLD, RetrievalCaseConfig(negative="no_vector_hit")).outcome == "pass"


def test_negative_empty_context_mode() -> None:
    res = result(vector=[], bm25=fillers(3), fused=fillers(3), reranked=fillers(2), context=fillers(2))
    case = run(res, NO_GOLD, RetrievalCaseConfig(negative="empty_context"))
    # blamed on the context (the vector stage let nothing through)
    assert (case.outcome, case.failed_stage) == ("fail", "context")
    assert case.message == "negative item: 2 item(s) reached context (expected none)"


# --------------------------------------------------------------------------- details


def test_details_are_json_primitives_and_round_trip() -> None:
    res = RetrievalResult(
        "q",
        (),
        Trace(
            (
                stage("vector", GOLD),
                stage("bm25"),
                stage("fused", GOLD),
                stage("reranked", GOLD),
                stage("context", GOLD),
            )
        ),
        degraded=True,
        degradation_reason="rerank_failed",
    )
    case = run(res)
    d = case.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert CaseResult.from_dict(d) == case
    assert case.details["degraded"] is True and case.details["degradation_reason"] == "rerank_failed"
    assert case.details["stages"]["vector"] == [[GOLD, 0.99]]
    assert case.details["gold"] == {"chunks": [[GOLD]], "parents": [["d1::p"]], "docs": [["d1"]]}
    assert case.tags == {"scenario": "standard"}


def test_stages_outside_retrieval_are_ignored() -> None:
    base = result(vector=[GOLD], bm25=[], fused=[GOLD], reranked=[GOLD], context=[GOLD])
    res = RetrievalResult("q", (), Trace(base.trace.stages + (StageResult("generation", ()),)))
    case = run(res)
    assert case.outcome == "pass" and not any(k.startswith("generation.") for k in case.metrics)


@pytest.mark.parametrize("split", ["tune", "holdout"])
def test_split_and_tags_are_carried(split: str) -> None:
    res = result(vector=[GOLD], bm25=[], fused=[GOLD], reranked=[GOLD], context=[GOLD])
    case = run(res, split=split)
    assert case.split == split
