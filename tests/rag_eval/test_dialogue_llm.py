"""The dialogue tier's model calls through the cached client: only replies with text are
cached (an empty student reply heals on the rerun), and no echoed key reaches the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.core.dialogue import DialogueTurn
from rag_eval.dialogue.llm import student_completion
from rag_eval.dialogue.simulator import LLMStudent, SimulatorError
from rag_eval.llm.cached import CachedChatClient
from tests.rag_eval.test_dialogue_simulator import ITEM, clarify
from tests.rag_eval.test_judge_client import echo_body
from tests.support.leaks import assert_no_window, files_text, forms
from tests.support.llm_client import judge_llm
from tests.support.openai_server import ScriptedOpenAIServer, raw, reply

KEY = "sk-student-echo-NEVER-CACHED-42"


def student(srv: ScriptedOpenAIServer, cache: Path) -> LLMStudent:
    client = CachedChatClient(judge_llm(srv.base_url, KEY, max_retries=1), cache)
    return LLMStudent(student_completion(client, "student-m", case_id="d-1", tier="dialogue", trial=0))


def test_an_empty_student_reply_is_not_cached_and_the_rerun_heals(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue(reply(""), reply("  "))
    with pytest.raises(SimulatorError, match="no text"):
        student(openai_server, tmp_path).start(ITEM).reply(clarify("哪一册？", "book"))
    assert openai_server.calls("chat") == 2  # asked again within the retries
    openai_server.enqueue(reply("第二册的"))
    healed = student(openai_server, tmp_path).start(ITEM).reply(clarify("哪一册？", "book"))
    assert healed.text == "第二册的" and openai_server.calls("chat") == 3
    again = student(openai_server, tmp_path).start(ITEM).reply(clarify("哪一册？", "book"))
    assert again.text == "第二册的" and openai_server.calls("chat") == 3  # the valid reply is cached


def test_the_student_usage_counts_every_request_the_server_logged(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.enqueue(reply(""), reply("第二册的"), reply("再说一遍"))
    client = CachedChatClient(judge_llm(openai_server.base_url, KEY, max_retries=1), None, budget_tokens=4)
    session = LLMStudent(student_completion(client, "student-m", case_id="d-1", tier="dialogue", trial=0)).start(ITEM)
    session.reply(clarify("哪一册？", "book"))  # an empty reply, asked again: 2 requests
    with pytest.raises(SimulatorError, match="budget"):  # 4 tokens spent: the budget stops the next reply
        session.reply(DialogueTurn("answer", "先回忆一下公式", hint_level="reminder"))
    usage = client.usage_for("d-1", "dialogue")
    assert (
        (usage["calls"], usage["first_attempts"], usage["retries"]) == (openai_server.calls("chat"), 1, 1) == (2, 1, 1)
    )


def test_a_key_echoed_by_the_student_model_never_reaches_the_cache(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue(raw(echo_body(KEY, f"我的钥匙 {forms(KEY)['escapes']} 和 {KEY}")))
    said = student(openai_server, tmp_path).start(ITEM).reply(clarify("哪一册？", "book"))
    assert_no_window([files_text(tmp_path), str(said.text)], KEY)
    assert "[redacted]" in files_text(tmp_path)
