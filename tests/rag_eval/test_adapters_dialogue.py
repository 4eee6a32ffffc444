"""The optional dialogue call on the Python and HTTP adapters: signature checked at
start-up, a wrong shape shown with the expected one, field paths for HTTP, and no dialogue
call meaning the tier is skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters import AdapterConfigError
from rag_eval.adapters.http import HttpSystem
from rag_eval.adapters.http_config import HttpConfig, render_body
from rag_eval.adapters.python import PythonSystem
from rag_eval.core.contract import ContractError
from tests.support.scripted_http import ScriptedJSONServer, Status

SOURCE = """
class Tutor:
    def retrieve(self, question, top_k=None):
        return {"items": []}
    def dialogue(self, turns, context):
        return {"action": "clarify", "message": "哪一册？", "asked_conditions": ["book"], "intent": "solve_problem"}

class NoDialogue:
    def retrieve(self, question, top_k=None):
        return {"items": []}

class OneArgDialogue(NoDialogue):
    def dialogue(self, turns):
        return {}

class BadShape(NoDialogue):
    def dialogue(self, turns, context):
        return {"action": "explain", "message": "?"}
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "tutors_mod.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "tutors_mod"


def test_a_python_dialogue_call_is_coerced_to_a_turn(module: str) -> None:
    system = PythonSystem(f"{module}:Tutor", {}, "test")
    assert system.converses
    turn = system.dialogue([{"role": "user", "content": "例13怎么做？"}], {})
    assert (turn.action, turn.asked_conditions, turn.intent) == ("clarify", ("book",), "solve_problem")


def test_a_python_system_without_a_dialogue_call_does_not_converse(module: str) -> None:
    system = PythonSystem(f"{module}:NoDialogue", {}, "test")
    assert not system.converses
    with pytest.raises(AdapterConfigError, match="has no dialogue method; expected `def dialogue"):
        system.dialogue([], {})


def test_a_dialogue_call_of_the_wrong_signature_fails_at_start_up(module: str) -> None:
    with pytest.raises(
        AdapterConfigError,
        match=r"OneArgDialogue.dialogue\(self, turns\) cannot be called as dialogue\(turns, context\)",
    ):
        PythonSystem(f"{module}:OneArgDialogue", {}, "test")


def test_a_wrong_dialogue_shape_names_the_expected_one(module: str) -> None:
    system = PythonSystem(f"{module}:BadShape", {}, "test")
    with pytest.raises(ContractError, match=r"'action' is 'explain', expected one of clarify, answer, state_limits"):
        system.dialogue([{"role": "user", "content": "?"}], {})


def config(url: str = "http://127.0.0.1:9/api", **dialogue: Any) -> dict[str, Any]:
    table = {"url": f"{url}/dialogue", "fields": {"action": "action", "message": "message"}, **dialogue}
    return {"retrieve": {"url": f"{url}/retrieve", "fields": {"ids": "items[].id"}}, "dialogue": table}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fields": {"message": "message"}}, r"\[dialogue\].fields: 'action' is required"),
        ({"body": {"question": "{question}"}}, r"the template never sends the conversation; put \"\{turns\}\" in it"),
        ({"method": "GET"}, r"method = 'GET': the conversation is sent as a JSON body"),
        ({"fields": {"action": "a", "message": "m", "mood": "x"}}, r"unknown key\(s\) 'mood'"),
        ({"fields": {"action": "turns[].action", "message": "m"}}, r"one value per turn"),
    ],
)
def test_bad_dialogue_endpoints_are_configuration_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(AdapterConfigError, match=message):
        HttpConfig.parse(config(**change), "tutor.toml", env={})


def test_the_body_sends_the_turns_and_the_context_as_values() -> None:
    turns = [{"role": "user", "content": 'say "hi"'}]
    body = render_body(
        {"turns": "{turns}", "context": "{context}", "q": "{question}"}, 'say "hi"', None, turns, {"problem": "p"}
    )
    assert body == {"turns": turns, "context": {"problem": "p"}, "q": 'say "hi"'}


@pytest.fixture
def service() -> Iterator[ScriptedJSONServer]:
    def answer(path: str, body: Any) -> Status:
        last = body["turns"][-1]["content"]
        if "例" in last:
            return Status(200, {"out": {"action": "clarify", "text": "哪一册？", "ask": ["book"]}})
        return Status(
            200,
            {
                "out": {
                    "action": "answer",
                    "text": "想想对称轴。",
                    "level": "reminder",
                    "hits": [{"id": "c1", "doc": "bixiu1"}],
                }
            },
        )

    with ScriptedJSONServer(answer) as server:
        yield server


def test_an_http_dialogue_turn_is_read_through_its_field_paths(service: ScriptedJSONServer) -> None:
    fields = {"action": "out.action", "message": "out.text", "asked_conditions": "?out.ask", "hint_level": "?out.level"}
    cfg = HttpConfig.parse(
        config(service.url, fields=fields, retrieval={"ids": "?out.hits[].id", "doc_ids": "?out.hits[].doc"}),
        "tutor.toml",
        env={},
    )
    system = HttpSystem(cfg)
    assert system.converses and "dialogue_endpoint" in system.describe()
    ask = system.dialogue([{"role": "user", "content": "例13"}], {"book": None})
    assert (ask.action, ask.asked_conditions, ask.retrieval) == ("clarify", ("book",), None)
    hint = system.dialogue([{"role": "user", "content": "二次函数"}], {})
    assert hint.hint_level == "reminder" and hint.retrieval is not None
    assert [(i.id, i.doc_id) for i in hint.retrieval.items] == [("c1", "bixiu1")]
    assert service.requests[0].json == {"turns": [{"role": "user", "content": "例13"}], "context": {"book": None}}


def test_a_wrong_field_path_names_the_path_and_the_config(service: ScriptedJSONServer) -> None:
    system = HttpSystem(
        HttpConfig.parse(
            config(service.url, fields={"action": "reply.action", "message": "reply.text"}), "tutor.toml", env={}
        )
    )
    with pytest.raises(ContractError, match=r"field 'reply.action': no key 'reply'.*fix the field paths in tutor.toml"):
        system.dialogue([{"role": "user", "content": "x"}], {})


def test_an_http_system_without_dialogue_does_not_converse() -> None:
    cfg = HttpConfig.parse(
        {"retrieve": {"url": "http://127.0.0.1:9/r", "fields": {"ids": "items[].id"}}}, "svc.toml", env={}
    )
    assert not HttpSystem(cfg).converses
