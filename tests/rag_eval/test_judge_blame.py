"""rag_eval.judge.blame: one line per finding in chain order, and the run's shares.

The four scenarios of issue 24 go through the native judge over real HTTP (scripted
OpenAI-compatible server): the verdict's details are what a case result keeps.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rag_eval.core.case import CaseResult, Outcome
from rag_eval.core.records import Chunk, Hit, StageResult, Trace
from rag_eval.golden.model import EvidenceRef, KeyFact
from rag_eval.judge.blame import (
    RUN_KEY,
    FactTrail,
    Finding,
    fact_trails,
    findings,
    run_block,
    shares,
    side_of,
    summary_line,
)
from rag_eval.judge.native import JudgeInput, NativeJudge
from rag_eval.llm.cached import CachedChatClient
from tests.support.llm_client import judge_llm
from tests.support.openai_server import ScriptedOpenAIServer, reply

CONTEXT = [
    Chunk("c1", "d1", "等差数列的通项公式为 a_n = a_1 + (n-1)d。"),
    Chunk("c2", "d1", "d 为公差。"),
    Chunk("c5", "d2", "等比数列的通项公式为 a_n = a_1 q^(n-1)。"),
]
FACTS = (
    KeyFact("a_n = a_1 + (n-1)d", EvidenceRef(chunk_id="c1")),
    KeyFact("n 从 1 开始", EvidenceRef(chunk_id="c7")),
    KeyFact("首项为 a_1", EvidenceRef(chunk_id="c9")),
)
TRACE = Trace(
    (
        StageResult("dense", (Hit("c1", 0.9, 1), Hit("c7", 0.5, 6))),
        StageResult("fused", (Hit("c1", 0.9, 1), Hit("c2", 0.8, 2), Hit("c5", 0.7, 3), Hit("c7", 0.4, 4))),
    )
)


def claim(text: str, verdict: str, chunks: list[int], reference: str) -> dict[str, Any]:
    return {"claim": text, "verdict": verdict, "chunks": chunks, "reference": reference, "reason": "r"}


def fact(i: int, verdict: str, context: str, chunks: list[int]) -> dict[str, Any]:
    return {
        "index": i,
        "fact": FACTS[i - 1].fact,
        "verdict": verdict,
        "context": context,
        "chunks": chunks,
        "reason": "r",
    }


def verdict(claims: list[dict[str, Any]], facts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"claims": claims, "key_facts": facts, "relevance": {"verdict": "relevant", "reason": "r"}, "citations": []}


@pytest.fixture
def judge() -> Iterator[tuple[ScriptedOpenAIServer, NativeJudge]]:
    with ScriptedOpenAIServer() as srv:
        chat = judge_llm(srv.base_url)
        yield srv, NativeJudge(CachedChatClient(chat, cache_dir=None), "judge-m")
        chat.close()


def judged(
    judge: tuple[ScriptedOpenAIServer, NativeJudge], obj: dict[str, Any], facts: tuple[KeyFact, ...] = FACTS
) -> tuple[dict[str, Any], dict[str, float]]:
    srv, native = judge
    srv.enqueue(reply(json.dumps(obj, ensure_ascii=False)))
    item = JudgeInput(
        "seq-1", "通项公式？", [(c.chunk_id, c.text) for c in CONTEXT], "答案。", [f.fact for f in facts], ""
    )
    v = native.judge(item)
    return v.details, v.metrics


def lines(details: dict[str, Any], trails: tuple[FactTrail, ...] = ()) -> list[str]:
    return [f.line for f in findings(details, trails)]


def test_trails_follow_each_key_fact_through_the_stages_and_into_the_context() -> None:
    trails = fact_trails(FACTS, TRACE, CONTEXT)
    assert trails[0] == FactTrail((("dense", 1), ("fused", 1)), True)
    assert trails[1] == FactTrail((("dense", 6), ("fused", 4)), False)
    assert trails[2] == FactTrail((("dense", None), ("fused", None)), False)
    by_doc = fact_trails((KeyFact("x", EvidenceRef(doc_id="d2", quote="等比")), KeyFact("y")), TRACE, CONTEXT)
    assert by_doc == (FactTrail((), True), FactTrail((), None))


def test_a_fact_that_never_reached_the_context_is_blamed_on_retrieval_and_the_stage_that_lost_it(
    judge: tuple[ScriptedOpenAIServer, NativeJudge],
) -> None:
    details, metrics = judged(
        judge,
        verdict(
            [claim("a_n = a_1 + (n-1)d", "yes", [1], "yes")],
            [fact(1, "covered", "yes", [1]), fact(2, "not_covered", "no", []), fact(3, "not_covered", "no", [])],
        ),
    )
    assert lines(details, fact_trails(FACTS, TRACE, CONTEXT)) == [
        "retriever: key fact 3 is in no retrieved chunk",
        "context: key fact 2 was in fused rank 4 but cut before the context",
    ]
    assert side_of(findings(details, fact_trails(FACTS, TRACE, CONTEXT))) == "retriever"
    assert metrics["claim_recall"] == 1 / 3 and metrics["answer_recall"] == 1 / 3
    # A stage that dropped it is named; without a trace only "not in the context" is known.
    dropped = fact_trails(FACTS, Trace((TRACE.stages[0], StageResult("rerank", (Hit("c1", 1.0, 1),)))), CONTEXT)
    assert lines(details, dropped) == [
        "retriever: key fact 2 was in dense rank 6 but not in rerank",
        "retriever: key fact 3 is in no retrieved chunk",
    ]
    assert lines(details)[:2] == [
        "retriever: key fact 2 is in no chunk of the context",
        "retriever: key fact 3 is in no chunk of the context",
    ]


def test_a_fact_in_the_context_but_not_in_the_answer_is_the_generators(
    judge: tuple[ScriptedOpenAIServer, NativeJudge],
) -> None:
    details, metrics = judged(
        judge,
        verdict(
            [claim("a_n = a_1 + (n-1)d", "yes", [1], "yes")],
            [fact(1, "covered", "yes", [1]), fact(2, "partially_covered", "yes", [1, 2])],
        ),
        FACTS[:2],
    )
    found = findings(details, fact_trails(FACTS[:2], TRACE, CONTEXT))
    assert [f.line for f in found] == ["generator: key fact 2 is in chunk [1], [2] but not in the answer"]
    assert side_of(found) == "generator"
    assert metrics["context_utilization"] == 1 / 2  # facts 1, 2 in the context; only 1 covered


def test_a_wrong_claim_on_an_irrelevant_chunk_is_noise(judge: tuple[ScriptedOpenAIServer, NativeJudge]) -> None:
    details, metrics = judged(
        judge,
        verdict(
            [claim("a_n = a_1 + (n-1)d", "yes", [1], "yes"), claim("通项是 a_1 q^(n-1)", "yes", [3], "no")],
            [fact(1, "covered", "yes", [1])],
        ),
        FACTS[:1],
    )
    assert lines(details) == ['noise: claim "通项是 a_1 q^(n-1)" is wrong and rests on chunk [3] (irrelevant)']
    assert metrics["noise_sensitivity_irrelevant"] == 1 / 2 and metrics["noise_sensitivity_relevant"] == 0 / 2
    assert metrics["context_precision"] == 1 / 3  # only chunk 1 entails a key fact


def test_an_unsupported_claim_is_a_hallucination_and_an_undecidable_one_is_counted(
    judge: tuple[ScriptedOpenAIServer, NativeJudge],
) -> None:
    details, metrics = judged(
        judge,
        verdict(
            [
                claim("a_n = a_1 + (n-1)d", "yes", [1], "yes"),
                claim("公差必须为正", "no", [], "no"),
                claim("这是常用公式", "unknown", [], "unknown"),
            ],
            [fact(1, "covered", "yes", [1])],
        ),
        FACTS[:1],
    )
    assert lines(details) == [
        'hallucination: claim "公差必须为正" is in no chunk and not in the reference',
        "unknown: 1 claim and 0 key facts could not be decided",
    ]
    assert details["diagnosis"]["unknown_claims"] == 1
    assert metrics["hallucination"] == 1 / 2 and metrics["answer_precision"] == 1 / 2  # 2 decided claims
    assert metrics["context_faithfulness"] == 1 / 2


def test_lines_are_in_chain_order_and_long_claims_are_cut() -> None:
    long = "很长的断言" * 30
    details = verdict(
        [claim(long, "no", [], "no"), claim("b", "yes", [2], "no")],
        [fact(1, "not_covered", "yes", [1]), fact(2, "not_covered", "no", [])],
    )
    details["diagnosis"] = {"context_chunks": 2}
    kinds = [f.kind for f in findings(details)]
    assert kinds == ["retriever", "generator", "noise", "hallucination"]
    hallucination = findings(details)[-1].line
    assert hallucination.startswith('hallucination: claim "很长的断言') and '…" is in no chunk' in hallucination
    assert len(hallucination.split('"')[1]) == 80


def test_a_verdict_without_claim_level_fields_gives_no_blame() -> None:
    assert findings({"claims": [{"claim": "c", "verdict": "no", "reason": ""}], "key_facts": []}) == ()


def test_shares_split_the_failing_cases_by_side() -> None:
    r, g = Finding("context", "context: …"), Finding("hallucination", "hallucination: …")
    out = shares([[r], [g], [r, g], [g], [Finding("unknown", "unknown: …")]])
    assert out["counts"] == {"retriever": 1, "generator": 2, "both": 1, "unexplained": 1}
    assert out["shares"] == {"retriever": 1 / 5, "generator": 2 / 5, "both": 1 / 5, "unexplained": 1 / 5}
    assert shares([]) == {"failing": 0, "counts": {"retriever": 0, "generator": 0, "both": 0, "unexplained": 0}}


def _judged(cid: str, outcome: Outcome, side: str | None, verdict: dict[str, Any]) -> CaseResult:
    return CaseResult(
        id=cid, tier="judge", outcome=outcome, details={"blame": [], "blame_side": side, "judge": verdict}
    )


def test_the_run_block_splits_failing_cases_and_counts_second_calls_and_unknowns() -> None:
    diag = {"unknown_claims": 2, "unknown_facts": 1, "inconsistent": 0, "context_chunks": 3}
    cases = [
        _judged("a", "fail", "retriever", {"diagnosis": diag}),
        _judged("b", "fail", None, {"diagnosis": diag, "claims_second_call": 0}),
        _judged("c", "pass", None, {"claims_second_call": 4}),
        CaseResult(id="d", tier="judge", outcome="fail", details={"judge": {}}),  # deepeval: not diagnosed
        CaseResult(id="a", tier="retrieval", outcome="fail"),
    ]
    block = run_block(cases)[RUN_KEY]
    assert block == {
        "diagnosed": 3,
        "failing": 2,
        "second_calls": 2,
        "unknown_claims": 4,
        "unknown_facts": 2,
        "counts": {"retriever": 1, "generator": 0, "both": 0, "unexplained": 1},
        "shares": {"retriever": 0.5, "generator": 0.0, "both": 0.0, "unexplained": 0.5},
    }
    assert summary_line(block) == (
        "judge blame: 2 failing of 3 diagnosed — retriever 1 (50%), generator 0 (0%), "
        "both 0 (0%), unexplained 1 (50%); 2 second calls for claims; "
        "4 claims and 2 key facts undecided"
    )


def test_without_a_failing_case_shares_are_absent_and_without_diagnosis_there_is_no_block() -> None:
    block = run_block([_judged("a", "pass", None, {})])[RUN_KEY]
    assert "shares" not in block and block["failing"] == 0
    assert summary_line(block) == "judge blame: 0 failing of 1 diagnosed; 0 second calls for claims"
    assert run_block([CaseResult(id="a", tier="judge", outcome="fail")]) == {}
    assert summary_line(None) == ""
