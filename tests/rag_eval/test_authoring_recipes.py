"""The recipes' prompts and reply reader."""

from __future__ import annotations

from rag_eval.authoring.recipes import RECIPES, TASKS, PromptInput, messages, parse_reply


def test_every_recipe_has_a_chinese_and_an_english_prompt() -> None:
    for lang in ("zh", "en"):
        assert set(TASKS[lang]) == set(RECIPES)
        for recipe in RECIPES:
            system, user = messages(
                recipe, lang, PromptInput(passages=["材料一", "材料二"], question="问题", quote="原文")
            )
            assert system["role"] == "system" and user["content"].startswith(TASKS[lang][recipe])
            assert "<<<" in user["content"] and "JSON" in system["content"]


def test_a_reply_is_read_or_says_why_not() -> None:
    ok = parse_reply("standard", 'Sure! {"question": " 问？ ", "answer_points": "一点", "quote": "原文"} done')
    assert not isinstance(ok, str) and (ok.question, ok.answer_points, ok.quotes) == ("问？", ("一点",), ("原文",))
    assert parse_reply("standard", "no json") == "no JSON object in the reply"
    assert parse_reply("standard", '{"question": "q"}') == "the reply has no 'quote'"
    assert (
        parse_reply("cross-topic", '{"question": "q", "quotes": ["a"]}')
        == "'quotes' must hold two quotes, one per passage"
    )
    negative = parse_reply("negative", '{"question": "q"}')
    assert not isinstance(negative, str) and negative.quotes == ()
