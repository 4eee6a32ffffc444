"""The deterministic tier for one case, on hand-built chat results: which checks ran, the
stage a failure is blamed on, and retrieval losses taking precedence."""

from __future__ import annotations

import json
from typing import Any

from rag_app.generation.sources import REFUSAL_TEXT, build_sources
from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord as ChatResult
from rag_eval.core.records import Chunk, Hit, StageResult, Trace, Usage
from rag_eval.core.stages import StageSpec
from rag_eval.golden.model import EvidenceGroup, EvidenceRef, GoldenItem
from rag_eval.golden.resolve import ResolvedGold
from rag_eval.metrics.deterministic import CHECK_NAMES
from rag_eval.tiers.deterministic.case import CITATION_CHECKS, DeterministicCaseConfig, evaluate_deterministic


def chunk(cid: str, text: str, page: int) -> Chunk:
    doc = cid.split("::")[0]
    # the pages label is the system's (its adapter supplies it), shown as given
    return Chunk(
        cid, doc, text, "child", f"{doc}::p", "必修一", "1.1 集合", page, page, 0, len(text), pages_label=f"第{page}页"
    )


GOLD_CHUNK = chunk("d1::c2", "一个集合有 n 个元素时，子集个数为 2^n，真子集个数为 2^n-1。", 3)
OTHER = chunk("d2::c1", "空集是任何集合的子集。", 5)
DOC_OF = {"d1::c2": "d1", "d2::c1": "d2", "d3::c1": "d3", "d1::p": "d1", "d2::p": "d2"}
KIND_OF = {"d1::c2": "child", "d2::c1": "child", "d3::c1": "child", "d1::p": "parent", "d2::p": "parent"}
GOLD = ResolvedGold((frozenset({"d1::c2"}),), (frozenset({"d1::p"}),), (frozenset({"d1"}),))
NO_GOLD = ResolvedGold((), (), ())

GOOD_ANSWER = "含 n 个元素的集合有 2^n 个子集，真子集有 2^n-1 个[1]。"


def trace(**stages: list[str]) -> Trace:
    out = [
        StageResult(n, tuple(Hit(c, 1.0, r) for r, c in enumerate(stages.get(n, []), 1)))
        for n in ("vector", "bm25", "fused", "reranked", "context")
    ]
    return Trace(tuple(out) + (StageResult("generation", ()),))


def chat(
    answer: str, context: list[Chunk], *, refused: bool = False, stages: dict[str, list[str]] | None = None, **kw: Any
) -> ChatResult:
    ids = [c.chunk_id for c in context]
    stages = (
        stages if stages is not None else {"vector": ids, "bm25": ids, "fused": ids, "reranked": ids, "context": ids}
    )
    return ChatResult(
        question=kw.pop("question", "一个集合有n个元素，它的子集有多少个？"),
        answer=answer,
        sources=kw.pop("sources", () if refused else tuple(build_sources(context))),
        context_used=tuple(context),
        trace=trace(**stages),
        generator="scripted",
        refused=refused,
        usage=Usage(12, 7),
        **kw,
    )


def item(negative: bool = False, **kw: Any) -> GoldenItem:
    evidence = () if negative else (EvidenceGroup((EvidenceRef(chunk_id="d1::c2"),)),)
    return GoldenItem(
        id="det-1",
        question="q",
        evidence=evidence,
        tags={"scenario": "negative" if negative else "standard"},
        expected_action=kw.pop("expected_action", "refuse" if negative else "answer"),
        **kw,
    )


def run(it: GoldenItem, result: ChatResult, gold: ResolvedGold = GOLD, skip: tuple[str, ...] = ()) -> CaseResult:
    return evaluate_deterministic(
        it, gold, result, DOC_OF, KIND_OF, DeterministicCaseConfig(skip_checks=skip), spec=SPEC, duration=0.5
    )


SPEC = StageSpec((("vector", "bm25"), ("fused",), ("reranked",), ("context",)), final="context", thresholded="vector")


def failed_checks(case: CaseResult) -> list[str]:
    return [c["name"] for c in case.details["checks"] if not c["passed"]]


# --------------------------------------------------------------------------- passing


def test_a_good_answer_passes_every_check() -> None:
    case = run(item(must_contain=("2^n-1",)), chat(GOOD_ANSWER, [GOLD_CHUNK]))
    assert (case.outcome, case.failed_stage, case.message) == ("pass", None, "")
    assert (case.tier, case.id, case.negative, case.duration) == ("deterministic", "det-1", False, 0.5)
    assert case.metrics == {
        "check.answer_not_empty": 1.0,
        "check.expected_action": 1.0,
        "check.sources_present": 1.0,
        "check.citations_resolve": 1.0,
        "check.source_pages_within_context": 1.0,
        "check.no_duplicate_sources": 1.0,
        "check.must_contain": 1.0,
        "check.numbers_grounded": 1.0,
    }
    assert set(k[len("check.") :] for k in case.metrics) <= set(CHECK_NAMES)


def test_details_show_what_the_generator_saw() -> None:
    case = run(item(), chat(GOOD_ANSWER, [GOLD_CHUNK]))
    d = case.details
    assert d["answer"] == GOOD_ANSWER and d["refused"] is False and d["generator"] == "scripted"
    assert d["sources"] == [
        {
            "n": 1,
            "chunk_id": "d1::c2",
            "doc_id": "d1",
            "book": "必修一",
            "section": "1.1 集合",
            "page_start": 3,
            "page_end": 3,
        }
    ]
    assert d["context"] == [{"chunk_id": "d1::c2", "label": "必修一 - 1.1 集合 第3页", "text": GOLD_CHUNK.text}]
    assert d["usage"] == {"prompt_tokens": 12, "completion_tokens": 7}
    round_tripped = json.loads(json.dumps(case.to_dict()))
    assert CaseResult.from_dict(round_tripped) == case


def test_a_negative_that_refuses_passes() -> None:
    case = run(item(negative=True), chat(REFUSAL_TEXT, [], refused=True, stages={}), NO_GOLD)
    assert (case.outcome, case.negative) == ("pass", True)
    assert case.metrics["check.expected_action"] == 1.0
    assert "check.numbers_grounded" not in case.metrics  # a refusal claims no numbers


# --------------------------------------------------------------------------- failing: generation or citation


def test_a_citation_failure_is_blamed_on_citation() -> None:
    case = run(item(), chat("子集有 2^n 个[2]。", [GOLD_CHUNK]))
    assert (case.outcome, case.failed_stage) == ("fail", "citation")
    assert failed_checks(case) == ["citations_resolve"]
    assert case.message == "citations_resolve: [2] does not resolve: the context has 1 chunk"
    assert case.metrics["check.citations_resolve"] == 0.0


def test_wrong_source_pages_are_a_citation_failure() -> None:
    bad_source = build_sources([GOLD_CHUNK])[0]
    from dataclasses import replace

    case = run(item(), chat(GOOD_ANSWER, [GOLD_CHUNK], sources=(replace(bad_source, page_start=7, page_end=8),)))
    assert case.failed_stage == "citation"
    assert failed_checks(case) == ["source_pages_within_context"]
    assert CITATION_CHECKS == {"citations_resolve", "source_pages_within_context", "no_duplicate_sources"}


def test_a_content_failure_is_blamed_on_generation() -> None:
    case = run(item(must_contain=("真子集",), must_not_contain=("2^n-1",)), chat(GOOD_ANSWER, [GOLD_CHUNK]))
    assert case.failed_stage == "generation"
    assert failed_checks(case) == ["must_not_contain"]
    assert case.message == "must_not_contain: forbidden content in the answer: '2^n-1'"


def test_a_hallucinated_number_is_a_generation_failure() -> None:
    case = run(item(), chat("子集有 2^n 个，共 17 个[1]。", [GOLD_CHUNK]))
    assert case.failed_stage == "generation"
    assert failed_checks(case) == ["numbers_grounded"]
    assert case.message.startswith("numbers_grounded: numbers not in the context: 17")


def test_citation_and_generation_failures_together_are_generation() -> None:
    case = run(item(must_contain=("真子集个数",)), chat("子集有 2^n 个[3]。", [GOLD_CHUNK]))
    assert case.failed_stage == "generation"
    assert failed_checks(case) == ["citations_resolve", "must_contain"]
    assert case.message.count("; ") == 1


def test_a_negative_that_answers_fails_on_expected_action() -> None:
    case = run(
        item(negative=True),
        chat("空集是任何集合的子集[1]。", [OTHER], stages={"vector": ["d2::c1"], "context": ["d2::c1"]}),
        NO_GOLD,
    )
    assert (case.outcome, case.failed_stage) == ("fail", "generation")
    assert failed_checks(case) == ["expected_action"]
    assert case.message == "expected_action: expected 'refuse', the system answered"


# --------------------------------------------------------------------------- retrieval loss first


def test_a_retrieval_loss_is_the_earliest_failing_stage() -> None:
    # the gold chunk was dropped by the reranker; the answer then misses the required phrase
    stages = {
        "vector": ["d1::c2", "d2::c1"],
        "bm25": [],
        "fused": ["d1::c2", "d2::c1"],
        "reranked": ["d2::c1"],
        "context": ["d2::c1"],
    }
    case = run(item(must_contain=("2^n-1",)), chat("空集是任何集合的子集[1]。", [OTHER], stages=stages))
    assert failed_checks(case) == ["must_contain"]
    assert case.failed_stage == "reranked"


def test_never_retrieved_gold_takes_precedence_over_a_citation_failure() -> None:
    stages = {
        "vector": ["d2::c1"],
        "bm25": ["d3::c1"],
        "fused": ["d2::c1"],
        "reranked": ["d2::c1"],
        "context": ["d2::c1"],
    }
    case = run(item(), chat("空集是任何集合的子集[4]。", [OTHER], stages=stages))
    assert failed_checks(case) == ["citations_resolve"]
    assert case.failed_stage == "vector+bm25"


def test_a_retrieval_loss_alone_does_not_fail_the_deterministic_case() -> None:
    stages = {"vector": ["d2::c1"], "bm25": [], "fused": ["d2::c1"], "reranked": ["d2::c1"], "context": ["d2::c1"]}
    case = run(item(), chat("空集是任何集合的子集[1]。", [OTHER], stages=stages))
    assert (case.outcome, case.failed_stage) == ("pass", None)


def test_gold_in_the_context_keeps_the_generation_blame() -> None:
    case = run(item(must_contain=("真子集个数为",)), chat("子集有 2^n 个[1]。", [GOLD_CHUNK]))
    assert case.failed_stage == "generation"


def test_parent_context_counts_as_reaching_the_context() -> None:
    parent = Chunk(
        "d1::p",
        "d1",
        GOLD_CHUNK.text,
        "parent",
        None,
        "必修一",
        "1.1 集合",
        3,
        3,
        0,
        len(GOLD_CHUNK.text),
        pages_label="第3页",
    )
    stages = {"vector": ["d1::c2"], "bm25": [], "fused": ["d1::c2"], "reranked": ["d1::c2"], "context": ["d1::p"]}
    case = run(item(must_contain=("真子集个数为",)), chat("子集有 2^n 个[1]。", [parent], stages=stages))
    assert case.failed_stage == "generation"


# --------------------------------------------------------------------------- config


def test_skipped_checks_neither_run_nor_fail() -> None:
    answer = "子集有 2^n 个，共 17 个[1]。"
    case = run(item(), chat(answer, [GOLD_CHUNK]), skip=("numbers_grounded",))
    assert case.outcome == "pass"
    assert "check.numbers_grounded" not in case.metrics
    assert all(c["name"] != "numbers_grounded" for c in case.details["checks"])
