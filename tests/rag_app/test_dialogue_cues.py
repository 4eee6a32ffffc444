"""The student's wording: intent, cues and the filler left out of the retrieval query."""

from __future__ import annotations

import pytest

from rag_app.dialogue.cues import ATTEMPT, DONT_KNOW, has_any, intent_of, language, states_problem, topic_text


@pytest.mark.parametrize(
    ("opening", "problem", "intent"),
    [
        ("等比数列求和的时候，为什么老是要单独讨论 q=1？", "", "concept"),  # q=1 is a condition, not a stated problem
        ("What is the difference between mutually exclusive events and independent events?", "", "concept"),
        ("这个二次函数的最大值和最小值怎么求？", "求 f(x)=x^2-6x+5 的最大值和最小值。", "solve_problem"),
        ("求曲线 y=x^2 的切线方程", "", "solve_problem"),  # the curve is stated
        ("例13 我不会，给点提示", "", "solve_problem"),
        ("I'm stuck on a homework problem.", "", "solve_problem"),
        ("Which rule do I use for the triangle problem from class?", "", "solve_problem"),
        ("What variable is associated with all problems solved within logarithmic space?", "", "concept"),
        ("这题和上次那道切线题有什么不一样？", "", "compare_problems"),
        ("上次老师讲的那道数列题我还是不懂", "", "solve_problem"),  # an earlier problem, but no second one to compare
    ],
)
def test_intent_of_the_opening(opening: str, problem: str, intent: str) -> None:
    assert intent_of(opening, problem) == intent


def test_states_problem_needs_a_defined_object() -> None:
    assert states_problem("求 $f(x)=x^3-3x$ 的极值") and states_problem("y = x+1/(x-1) 的最小值")
    assert not states_problem("为什么要讨论 q=1") and not states_problem("二次函数的顶点式")


def test_cues_ignore_width_case_and_spaces() -> None:
    assert has_any("我 不 记 得 了", DONT_KNOW) and has_any("I FORGOT the numbers", DONT_KNOW)
    assert has_any("我算出 A=60° 就结束了，对吗？", ATTEMPT)
    assert not has_any("能再具体一点吗？", ATTEMPT)


def test_language_and_topic_text() -> None:
    assert language("例13 我不会") == "zh" and language("Can you explain it?") == "en"
    assert topic_text("这道利润的题我不会，先给点提示") == "利润的题"
    assert topic_text("有道题我做不出来") == ""
    assert topic_text("Who was elected in 1859?") == "Who was elected in 1859?"  # nothing to remove: unchanged
