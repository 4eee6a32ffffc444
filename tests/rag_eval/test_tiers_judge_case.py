"""rag_eval.tiers.judge.case: per-case limits follow each metric's direction."""

from __future__ import annotations

from rag_eval.core.records import AnswerRecord, Trace
from rag_eval.golden.model import GoldenItem
from rag_eval.tiers.judge.case import JudgeCaseConfig, judge_case
from rag_eval.tiers.judge.details import JudgeDetails

ITEM = GoldenItem(id="q1", question="等差数列的通项公式是什么？")
CHAT = AnswerRecord(
    question=ITEM.question, answer="a_n = a_1 + (n-1)d [1]", sources=(), context_used=(), trace=Trace(), generator="g"
)
DETAILS = JudgeDetails("judge-m", "native", CHAT.answer, judge={}, judge_calls=1, judge_mode="json_schema")
LIMITS = JudgeCaseConfig({"faithfulness": 0.5, "hallucination": 0.2, "noise_sensitivity_relevant": 0.1})


def test_a_lower_is_better_metric_fails_above_its_limit_not_below() -> None:
    case = judge_case(
        ITEM, CHAT, {"faithfulness": 0.9, "hallucination": 0.0, "noise_sensitivity_relevant": 0.0}, DETAILS, LIMITS
    )
    assert case.outcome == "pass" and case.message == ""  # was: hallucination 0.0 < 0.2 failed a perfect case
    case = judge_case(
        ITEM, CHAT, {"faithfulness": 0.9, "hallucination": 0.5, "noise_sensitivity_relevant": 0.0}, DETAILS, LIMITS
    )
    assert case.outcome == "fail"
    assert case.message == "hallucination = 0.500 > 0.2 (per-case threshold, lower is better)"


def test_a_higher_is_better_metric_fails_below_its_floor_and_an_absent_one_is_not_judged() -> None:
    case = judge_case(ITEM, CHAT, {"faithfulness": 0.25}, DETAILS, LIMITS)
    assert case.outcome == "fail" and case.message == "faithfulness = 0.250 < 0.5 (per-case threshold)"
