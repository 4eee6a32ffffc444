"""The tutor's LLM path against a scripted OpenAI-compatible server: the use case's system
prompt with the turn's layer, the conversation and numbered material go out; a leaking
reply is rewritten into the offline hint; a refusal states the limits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_app.env import EndpointConfig
from rag_app.generation import REFUSAL_TEXT
from rag_app.generation.openai_generator import OpenAIGenerator
from rag_app.generation.prompt import SYSTEM_PROMPT
from rag_app.generation.tutor_prompt import LEVEL_RULES
from rag_app.llm import ChatClient
from rag_app.pipeline import RagPipeline
from tests.rag_app.test_dialogue_policy import PROFIT, demo_settings
from tests.support.openai_server import ScriptedOpenAIServer, reply


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture
def tutor(server: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> RagPipeline:
    env = {
        "RAG_GENERATOR_BASE_URL": server.base_url,
        "RAG_GENERATOR_API_KEY": "sk-tutor-test-77",
        "RAG_GENERATOR_MODEL": "m",
    }
    client = ChatClient(EndpointConfig.from_env("RAG_GENERATOR", env), 5.0, 0)
    cache = Path(tmp_path_factory.getbasetemp()) / "dialogue-llm-cache"  # shared by the tests: built once
    return RagPipeline(demo_settings(cache), generator=OpenAIGenerator(client, "m", max_tokens=200))


CONTEXT = {"book": "必修第一册", "problem": PROFIT}


def test_the_request_carries_the_layer_the_conversation_and_the_material(
    server: ScriptedOpenAIServer, tutor: RagPipeline
) -> None:
    server.enqueue(reply("先把日利润写成售价 $x$ 的函数，再看开口方向和对称轴 [1]。"))
    turns = [
        {"role": "user", "content": "这道利润的题我不会，先给点提示"},
        {"role": "assistant", "content": "【知识提醒】先回忆一下：…… [1]"},
        {"role": "user", "content": "别提示了，直接告诉我答案吧"},
    ]
    turn = tutor.dialogue(turns, CONTEXT)
    assert (turn.action, turn.hint_level, turn.interception) == ("answer", "approach", None)
    assert turn.message == "【思路提示】先把日利润写成售价 $x$ 的函数，再看开口方向和对称轴 [1]。" == turn.candidate
    (rec,) = server.requests_of("chat")
    assert rec.json is not None
    messages = rec.json["messages"]
    system = messages[0]["content"]
    assert system.startswith(SYSTEM_PROMPT) and LEVEL_RULES["approach"] in system and "绝对不要给出最终答案" in system
    assert messages[1:3] == [dict(t) for t in turns[:2]]
    assert (
        "[1] (必修第一册 - 3.5 二次函数的最值" in messages[3]["content"]
        and "直接告诉我答案吧" in messages[3]["content"]
    )
    assert turn.sources[0].section == "3.5 二次函数的最值"


def test_a_leaking_reply_is_rewritten_into_the_offline_hint(server: ScriptedOpenAIServer, tutor: RagPipeline) -> None:
    server.enqueue(reply("设售价为 x 元，利润 y=-10(x-40)(x-100)，所以最大日利润为 9000 元 [1]。"))
    turn = tutor.dialogue([{"role": "user", "content": "直接告诉我答案吧"}], {**CONTEXT, "forbidden": ["9000"]})
    assert turn.interception == "rewritten" and turn.candidate is not None and "9000" in turn.candidate
    assert "9000" not in turn.message and "-10(x-40)(x-100)" not in turn.message
    assert turn.message.startswith("【") and "[1]" in turn.message  # the extractive hint, cited


def test_the_worked_solution_of_the_material_is_caught_without_a_forbidden_list(
    server: ScriptedOpenAIServer, tutor: RagPipeline
) -> None:
    server.enqueue(reply("最大日利润为 $30\\times300=9000$ 元 [1]。"))
    turn = tutor.dialogue([{"role": "user", "content": "最大利润是多少？"}], CONTEXT)
    assert turn.interception == "rewritten" and "9000" not in turn.message


def test_a_model_refusal_states_the_limits(server: ScriptedOpenAIServer, tutor: RagPipeline) -> None:
    server.enqueue(reply(REFUSAL_TEXT))
    turn = tutor.dialogue([{"role": "user", "content": "这道利润的题我不会，先给点提示"}], CONTEXT)
    assert turn.action == "state_limits" and turn.message == REFUSAL_TEXT and turn.usage.completion_tokens > 0


def test_clarifying_turns_need_no_model_call(server: ScriptedOpenAIServer, tutor: RagPipeline) -> None:
    turn = tutor.dialogue([{"role": "user", "content": "例13 我不会，给点提示"}], {})
    assert turn.action == "clarify" and server.calls("chat") == 0
