"""The evidence-sufficiency decision: its arithmetic on hand-built signals, the signals
measured from a hand-built retrieval, the record's round trip and the settings."""

from __future__ import annotations

import math

import pytest

from rag_app.settings import Settings
from rag_app.sufficiency import SufficiencyPolicy, SufficiencySignals, TermWeights, decide, key_terms, measure
from rag_app.text import tokenize
from rag_app.types import ChatResult, Chunk, Hit, RetrievalResult, StageResult, Sufficiency, Trace

POLICY = SufficiencyPolicy(similarity_weight=25.0, min_score_zh=2.47, min_score_en=1.34)


def signals(
    coverage: float | None,
    top: float | None,
    terms: tuple[str, ...] = ("椭圆", "离心率"),
    missing: tuple[str, ...] = (),
) -> SufficiencySignals:
    return SufficiencySignals(
        coverage=coverage,
        unseen=0.0,
        top_similarity=top,
        similarity_threshold=0.80,
        agreement=0.4,
        rerank_top=1.2,
        rerank_margin=0.1,
        key_terms=terms,
        missing_terms=missing,
    )


def test_the_score_is_coverage_plus_weighted_similarity_margin() -> None:
    # 0.5 + 25 x (0.90 - 0.80) = 3.0 >= 2.47
    verdict = decide(signals(0.5, 0.90), POLICY)
    assert verdict.sufficient and verdict.reason == "sufficient" and verdict.language == "zh"
    assert verdict.score == pytest.approx(3.0) and verdict.min_score == 2.47
    assert "3.00 >= 2.47" in verdict.message


def test_low_coverage_near_the_threshold_is_insufficient_and_names_the_missing_terms() -> None:
    # 0.29 + 25 x 0.084 = 2.39 < 2.47: the holdout question 椭圆的离心率怎么求？ as measured
    verdict = decide(signals(0.29, 0.884, missing=("椭圆", "离心率")), POLICY)
    assert not verdict.sufficient and verdict.reason == "low_score"
    assert verdict.score == pytest.approx(0.29 + 25 * 0.084)
    assert "missing: 椭圆, 离心率" in verdict.message and "< 2.47 (zh)" in verdict.message


def test_english_questions_are_judged_against_the_english_cut() -> None:
    en = signals(0.6, 0.83, terms=("normans", "language"))
    assert en.language == "en"
    verdict = decide(en, POLICY)  # 0.6 + 25 x 0.03 = 1.35 >= 1.34, but < the zh cut 2.47
    assert verdict.sufficient and verdict.min_score == 1.34
    assert not decide(signals(0.6, 0.83), POLICY).sufficient


def test_no_vector_hit_above_the_threshold_is_never_sufficient() -> None:
    verdict = decide(signals(1.0, None), POLICY)
    assert not verdict.sufficient and verdict.reason == "no_vector_hit" and verdict.score is None


def test_unmeasured_coverage_falls_back_to_the_similarity_threshold() -> None:
    verdict = decide(signals(None, 0.801, terms=()), POLICY)
    assert verdict.sufficient and verdict.reason == "similarity_only"
    assert verdict.score is None and verdict.min_score is None
    assert "no key term" in verdict.message


def test_term_weights_are_idf_over_chunks_and_an_unseen_term_weighs_most() -> None:
    w = TermWeights({"数列": 9, "等比": 1, "frac": 9}, n_docs=9)
    assert w("数列") == pytest.approx(math.log(10 / 9.5))
    assert w("等比") == pytest.approx(math.log(10 / 1.5))
    assert w("离心率") == pytest.approx(math.log(20))
    assert w("离心率") > w("等比") > w("数列") > 0
    assert w.cjk_share == pytest.approx(2 / 3)


def test_key_terms_drop_question_and_function_words() -> None:
    assert key_terms("椭圆的离心率怎么求？", tokenize) == ["椭圆", "离", "心率"]  # jieba's cut
    assert key_terms("What was the Anglo-Norman language's final form?", tokenize) == [
        "anglo",
        "norman",
        "language",
        "final",
        "form",
    ]
    assert key_terms("这个怎么用？", tokenize) == []


def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(cid, "d", text, "child", None, "书", "节", None, None, 0, len(text))


def _retrieval(question: str, chunks: list[Chunk], vector: list[tuple[str, float]], bm25: list[str]) -> RetrievalResult:
    stages = (
        StageResult("vector", tuple(Hit(c, s, i + 1) for i, (c, s) in enumerate(vector))),
        StageResult("bm25", tuple(Hit(c, 1.0, i + 1) for i, c in enumerate(bm25))),
        StageResult("reranked", (Hit("a", 1.30, 1), Hit("b", 1.05, 2))),
    )
    return RetrievalResult(question, tuple(chunks), Trace(stages))


def test_measure_reads_coverage_similarity_agreement_and_margins_from_the_retrieval() -> None:
    chunks = [_chunk("a", "等比数列的前n项和公式。"), _chunk("b", "数列的通项。")]
    weights = TermWeights({"等比数列": 1, "数列": 2, "前": 2, "n": 2, "项": 2, "和": 1, "通项": 1}, n_docs=2)
    got = measure(
        "等比数列和椭圆有什么关系？",
        _retrieval("q", chunks, [("a", 0.91), ("b", 0.85)], ["b", "c"]),
        tokenize=tokenize,
        weights=weights,
        similarity_threshold=0.80,
    )
    assert got.key_terms == ("等比数列", "椭圆", "关系")  # 和, 有, 什么 are function/question words
    w = {t: weights(t) for t in got.key_terms}
    assert got.coverage == pytest.approx(w["等比数列"] / sum(w.values()))
    assert got.missing_terms == ("椭圆", "关系")  # both unseen, so equally heavy: question order
    assert got.unseen == pytest.approx((w["椭圆"] + w["关系"]) / sum(w.values()))
    assert got.top_similarity == 0.91 and got.similarity_margin == pytest.approx(0.11)
    assert got.agreement == 0.5  # of the vector top (a, b), BM25 has b
    assert got.rerank_top == 1.30 and got.rerank_margin == pytest.approx(0.25)


def test_an_english_question_on_a_chinese_corpus_has_no_coverage() -> None:
    chunks = [_chunk("a", "等比数列的前n项和公式。")]
    weights = TermWeights({"等比数列": 1, "公式": 1, "求和": 1, "通项": 1, "数列": 1, "frac": 1}, n_docs=1)
    assert weights.cjk_share == pytest.approx(5 / 6)  # LaTeX names are the only Latin words
    got = measure(
        "How is the sum of a geometric sequence derived?",
        _retrieval("q", chunks, [("a", 0.82)], ["a"]),
        tokenize=tokenize,
        weights=weights,
        similarity_threshold=0.80,
    )
    assert got.coverage is None and got.key_terms  # terms exist; they just cannot match Chinese text
    assert decide(got, POLICY).reason == "similarity_only"


def test_the_record_round_trips_through_chat_result_dicts() -> None:
    verdict = decide(signals(0.29, 0.884, missing=("椭圆",)), POLICY)
    assert Sufficiency.from_dict(verdict.to_dict()) == verdict
    result = ChatResult("q", "a", (), (), Trace(), "extractive-baseline", refused=True, sufficiency=verdict)
    assert ChatResult.from_dict(result.to_dict()) == result
    plain = ChatResult("q", "a", (), (), Trace(), "g")
    assert plain.to_dict()["sufficiency"] is None and ChatResult.from_dict(plain.to_dict()).sufficiency is None


def test_settings_carry_the_policy_and_an_off_switch() -> None:
    assert Settings().sufficiency is True
    assert SufficiencyPolicy.from_settings(Settings()) == POLICY
    assert Settings.load(env={}, overrides={"sufficiency": "off"}).sufficiency is False
    assert Settings.load(env={"RAG_APP_SUFFICIENCY_MIN_SCORE_ZH": "2.0"}).sufficiency_min_score_zh == 2.0
