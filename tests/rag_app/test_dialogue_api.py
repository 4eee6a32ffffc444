"""POST /api/dialogue: one tutor turn per call (stateless: the conversation comes along), 422
naming the field on a bad conversation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_app.pipeline import RagPipeline
from tests.rag_app.test_api import post, serving
from tests.rag_app.test_dialogue_policy import demo_settings


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serving(RagPipeline(demo_settings(tmp_path_factory.mktemp("dialogue-api"))))


def test_a_conversation_turn_by_turn(api: str) -> None:
    turns = [{"role": "user", "content": "例13 我不会，给点提示"}]
    first = post(api, "/api/dialogue", {"turns": turns, "context": {}})
    assert first.status_code == 200
    body = first.json()
    assert body["action"] == "clarify" and body["asking"] == ["book"] and body["retrieval"] is None
    turns += [{"role": "assistant", "content": body["message"]}, {"role": "user", "content": "选择性必修第二册"}]
    second = post(api, "/api/dialogue", {"turns": turns}).json()
    assert second["action"] == "answer" and second["hint_level"] == "reminder"
    assert second["sources"][0]["n"] == 1 and second["retrieval"]["items"][0]["metadata"]["kind"] == "parent"
    assert second["candidate"] == second["message"] and second["interception"] is None


def test_stating_limits_is_a_200_answer(api: str) -> None:
    resp = post(api, "/api/dialogue", {"turns": [{"role": "user", "content": "双曲线的离心率一般怎么求？"}]})
    assert resp.status_code == 200 and resp.json()["action"] == "state_limits"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"turns": []}, "'turns' must be a non-empty list"),
        (
            {"turns": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]},
            "last turn must be the student's",
        ),
        ({"turns": [{"role": "tutor", "content": "hi"}]}, "turns[0]"),
        ({"turns": [{"role": "user", "content": "hi"}], "context": "problem"}, "'context' must be an object"),
        ({"turns": [{"role": "user", "content": "hi"}], "question": "x"}, "unknown field(s) ['question']"),
    ],
)
def test_a_bad_conversation_is_422_naming_the_field(api: str, body: object, detail: str) -> None:
    resp = post(api, "/api/dialogue", body)
    assert resp.status_code == 422 and detail in resp.json()["detail"]
