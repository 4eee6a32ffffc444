"""OpenAIGenerator end to end against the scripted server, and make_generator."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_app.env import EndpointConfig
from rag_app.errors import ConfigError
from rag_app.generation import ExtractiveGenerator, make_generator
from rag_app.generation.openai_generator import OpenAIGenerator
from rag_app.generation.prompt import SYSTEM_PROMPT
from rag_app.generation.sources import REFUSAL_TEXT
from rag_app.interfaces import Generator
from rag_app.llm import ChatClient, ChatError
from rag_app.settings import Settings
from rag_app.types import Chunk, Usage
from tests.support.openai_server import ScriptedOpenAIServer, insufficient_quota, reply

KEY = "sk-gen-test-4242"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


def _env(base_url: str) -> dict[str, str]:
    return {"RAG_GENERATOR_BASE_URL": base_url, "RAG_GENERATOR_API_KEY": KEY, "RAG_GENERATOR_MODEL": "gpt-4o-mini"}


def _generator(base_url: str, temperature: float = 0.1) -> OpenAIGenerator:
    client = ChatClient(EndpointConfig.from_env("RAG_GENERATOR", _env(base_url)), 5.0, 0)
    assert client.timeout_setting == "RAG_GENERATOR_TIMEOUT"
    return OpenAIGenerator(client, "gpt-4o-mini", temperature=temperature, max_tokens=321)


CONTEXT = (
    Chunk(
        "c1",
        "d1",
        "二次函数的顶点式是 $y=a(x-h)^2+k$，顶点为 $(h,k)$。",
        "child",
        None,
        "必修一",
        "二次函数",
        12,
        13,
        0,
        30,
    ),
    Chunk(
        "c2",
        "d2",
        "The law of cosines: $c^2=a^2+b^2-2ab\\cos C$.",
        "child",
        None,
        "Trig Book",
        "Triangles",
        None,
        None,
        0,
        40,
    ),
)


def test_request_body_has_system_prompt_numbered_context_and_temperature(server: ScriptedOpenAIServer) -> None:
    server.enqueue(reply("  顶点是 $(h,k)$ [1]。\n", prompt_tokens=90, completion_tokens=9))
    gen = _generator(server.base_url, temperature=0.1)
    history = [{"role": "user", "content": "之前的问题"}, {"role": "assistant", "content": "之前的回答"}]
    answer, usage = gen.generate("顶点式怎么理解？", CONTEXT, history)
    assert answer == "顶点是 $(h,k)$ [1]。"  # surrounding whitespace stripped
    assert usage == Usage(prompt_tokens=90, completion_tokens=9)
    (rec,) = server.requests_of("chat")
    body = rec.json
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0.1 and body["max_tokens"] == 321
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][1:3] == history
    user = body["messages"][3]["content"]
    assert "[1] (必修一 - 二次函数, 第12-13页)\n二次函数的顶点式是" in user
    assert "[2] (Trig Book - Triangles)\nThe law of cosines" in user  # no pages known: no pages part
    assert "顶点式怎么理解？" in user


def test_name_and_determinism(server: ScriptedOpenAIServer) -> None:
    gen = _generator(server.base_url)
    assert gen.name == "openai:gpt-4o-mini" and gen.deterministic is False
    assert isinstance(gen, Generator)
    assert KEY not in repr(gen)


def test_empty_context_refuses_without_a_call(server: ScriptedOpenAIServer) -> None:
    answer, usage = _generator(server.base_url).generate("任何问题", ())
    assert (answer, usage) == (REFUSAL_TEXT, Usage())
    assert server.calls("chat") == 0


def test_client_failure_propagates(server: ScriptedOpenAIServer) -> None:
    server.enqueue(insufficient_quota())
    with pytest.raises(ChatError) as info:
        _generator(server.base_url).generate("q", CONTEXT)
    assert info.value.kind == "quota"


def test_make_generator_picks_by_settings(server: ScriptedOpenAIServer) -> None:
    offline = make_generator(Settings(generator="extractive"))
    assert isinstance(offline, ExtractiveGenerator) and offline.name == "extractive-baseline"
    online = make_generator(
        Settings(generator="openai", temperature=0.2, max_answer_tokens=99), env=_env(server.base_url)
    )
    assert isinstance(online, OpenAIGenerator)
    assert (online.name, online.temperature, online.max_tokens) == ("openai:gpt-4o-mini", 0.2, 99)
    online.generate("q", CONTEXT)
    assert server.requests_of("chat")[0].json["temperature"] == 0.2


def test_make_generator_without_configuration_names_the_variables() -> None:
    with pytest.raises(ConfigError) as info:
        make_generator(Settings(generator="openai"), env={})
    message = str(info.value)
    assert "RAG_GENERATOR_API_KEY" in message and "OPENAI_API_KEY" in message and "RAG_GENERATOR_MODEL" in message


def test_generator_timeout_and_retries_come_from_the_environment(server: ScriptedOpenAIServer) -> None:
    env = {**_env(server.base_url), "RAG_GENERATOR_TIMEOUT": "7.5", "RAG_GENERATOR_MAX_RETRIES": "0"}
    gen = make_generator(Settings(generator="openai"), env=env)
    assert isinstance(gen, OpenAIGenerator)
    assert (gen.client.timeout, gen.client.max_retries) == (7.5, 0)
    default = make_generator(Settings(generator="openai", request_timeout=12.0), env=_env(server.base_url))
    assert isinstance(default, OpenAIGenerator) and default.client.timeout == 12.0  # RAG_APP_REQUEST_TIMEOUT


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("RAG_GENERATOR_TIMEOUT", "soon"),
        ("RAG_GENERATOR_TIMEOUT", "0"),
        ("RAG_GENERATOR_MAX_RETRIES", "-1"),
        ("RAG_GENERATOR_MAX_RETRIES", "2.5"),
    ],
)
def test_a_bad_timeout_or_retry_count_is_a_start_up_error_naming_the_variable(
    server: ScriptedOpenAIServer, name: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=f"{name}='{value}' is not valid: expected .*; fix or unset {name}"):
        make_generator(Settings(generator="openai"), env={**_env(server.base_url), name: value})


def test_an_answer_echoing_the_key_is_redacted(server: ScriptedOpenAIServer) -> None:
    server.enqueue(reply(f"答案 [1]，顺便说一句 {KEY}"))
    answer, _ = _generator(server.base_url).generate("q", CONTEXT)
    assert KEY not in answer and answer == "答案 [1]，顺便说一句 [redacted]"


def test_a_non_json_200_echoing_the_key_after_padding_leaks_nothing(server: ScriptedOpenAIServer) -> None:
    """Issue 26 #1, the in-process generator: the body was cut to 120 characters, then redacted."""
    from tests.rag_app.leaks import leaks
    from tests.support.openai_server import raw

    long_key = KEY + "-padded-to-be-distinctive"
    env = {**_env(server.base_url), "RAG_GENERATOR_API_KEY": long_key}
    gen = OpenAIGenerator(ChatClient(EndpointConfig.from_env("RAG_GENERATOR", env), 5.0, 0), "gpt-4o-mini")
    server.enqueue(raw(("x" * 100 + f" key={long_key} " + "y" * 100).encode()))

    with pytest.raises(ChatError) as info:
        gen.generate("顶点式怎么理解？", CONTEXT)

    assert "body is not JSON" in str(info.value) and leaks(str(info.value), long_key) == []
