"""Reading a conversation back: given, unavailable, asked, rounds and earlier hint levels."""

from __future__ import annotations

from rag_app.dialogue.conversation import Conversation, declared_unavailable
from rag_app.dialogue.levels import next_level

BOOKS = ("必修第一册", "选择性必修第二册")


def _conv(*messages: str, **context: str) -> Conversation:
    turns = tuple({"role": "user" if i % 2 == 0 else "assistant", "content": m} for i, m in enumerate(messages))
    return Conversation(turns, context, books=BOOKS)


def test_detected_slots_and_answers_to_questions() -> None:
    conv = _conv("有道题我做不出来", "【需要确认】这道题是哪一册、哪一道题（例几）？", "选择性必修第二册 例17")
    assert conv.given["book"] == "选择性必修第二册" and conv.given["problem"] == "例17"
    assert conv.asked == ["book", "problem"] and conv.clarify_rounds == 1 and not conv.unavailable


def test_a_cannot_answer_reply_makes_the_asked_slots_unavailable() -> None:
    conv = _conv("有道题我做不出来", "【需要确认】这道题是哪一册、哪一道题（例几）？", "我不记得了")
    assert conv.unavailable == {"book", "problem"} and "problem" not in conv.given
    assert conv.has("book") and conv.has("problem")  # neither is asked again


def test_a_reply_with_only_the_book_does_not_answer_the_problem() -> None:
    conv = _conv("有道题我做不出来", "【需要确认】这道题是哪一册、哪一道题（例几）？", "必修第一册")
    assert conv.given == {"book": "必修第一册"} and not conv.has("problem")


def test_an_answer_in_words_fills_a_slot_no_detector_knows() -> None:
    conv = _conv(
        "这题和上次那道切线题有什么不一样？",
        "【需要确认】上次那道题的题目是什么？",
        "上次是求 y=x^3 在点 (1,1) 处的切线",
    )
    assert "y=x^3" in conv.given["old_problem"] and conv.given["point"] == "point"


def test_declared_unavailable_up_front() -> None:
    assert declared_unavailable("这道题的区间我忘抄了，最小值怎么求？") == {"interval"}
    assert {"statement", "interval", "angle"} <= declared_unavailable("I forgot the numbers.")
    assert declared_unavailable("这道题的区间是 [1,4]，最小值怎么求？") == set()


def test_levels_and_the_request_since_the_last_hint() -> None:
    conv = _conv("错位相减法什么时候用？", "【知识提醒】先回忆一下：… [1]", "那具体分哪几步做？")
    assert conv.levels == ["reminder"] and conv.since_last_answer == ["那具体分哪几步做？"]


def test_next_level_starts_from_the_wording_and_deepens_by_one() -> None:
    assert next_level([], ["判断奇偶性要用什么定义？"]) == "reminder"
    assert next_level([], ["求切线方程，我不知道从哪下手"]) == "approach"
    assert next_level([], ["例13 我算出来是 1/2，哪里错了？"]) == "wrong_direction"
    assert next_level(["reminder"], ["别提示了，直接告诉我答案吧"]) == "approach"  # a demand gets the next hint
    assert next_level(["reminder"], ["我算出 A=60° 就结束了，对吗？"]) == "wrong_direction"
    assert next_level(["approach", "wrong_direction"], ["还是不会"]) == "wrong_direction"  # the deepest layer stays
