"""The HTTP adapter against a scripted server: retries, timeouts, field paths, secrets."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters import AdapterConfigError, load_spec
from rag_eval.adapters.fields import FieldError, FieldPath
from rag_eval.adapters.http import HttpSystem, ServiceCallError
from rag_eval.adapters.http_config import HttpConfig, render_body
from rag_eval.contract import ContractError
from tests.support.scripted_http import Hang, ScriptedJSONServer, Status

SECRET = "sk-test-secret-value-123"


def items_reply(path: str, body: Any) -> Status:
    question = (body or {}).get("q", "")
    return Status(200, {"data": {"hits": [{"id": "c1", "doc": "d1", "text": f"about {question}", "s": 0.9},
                                          {"id": "c2", "doc": "d2", "text": "other", "s": 0.5}]}})


def table(url: str, **http: Any) -> dict[str, Any]:
    return {
        "http": {"timeout": 2.0, "max_retries": 2, **http},
        "retrieve": {
            "url": f"{url}/search",
            "body": {"q": "{question}", "k": "{top_k}"},
            "fields": {"ids": "data.hits[].id", "texts": "data.hits[].text", "scores": "data.hits[].s",
                       "doc_ids": "data.hits[].doc"},
        },
    }


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def system(data: dict[str, Any], env: dict[str, str] | None = None, sleep: Sleeps | None = None) -> HttpSystem:
    return HttpSystem(HttpConfig.parse(data, "test.toml", env or {}), sleep=sleep if sleep is not None else Sleeps(), random=lambda: 1.0)


def test_reads_ranked_items_with_the_field_paths() -> None:
    with ScriptedJSONServer(items_reply) as srv:
        result = system(table(srv.url)).retrieve("what is x", 5)

    assert [(i.id, i.doc_id, i.score) for i in result.items] == [("c1", "d1", 0.9), ("c2", "d2", 0.5)]
    assert result.items[0].text == "about what is x"
    assert srv.requests[0].json == {"q": "what is x", "k": 5}


def test_a_500_is_retried_then_the_answer_is_used() -> None:
    sleeps = Sleeps()
    with ScriptedJSONServer(items_reply) as srv:
        srv.enqueue("/search", Status(500, {"error": "boom"}))
        result = system(table(srv.url), sleep=sleeps).retrieve("q")

    assert [i.id for i in result.items] == ["c1", "c2"]
    assert len(srv.requests) == 2
    assert sleeps == [0.5]  # full jitter with random() = 1: base_delay * 2**0


def test_a_429_waits_as_long_as_retry_after_says() -> None:
    sleeps = Sleeps()
    with ScriptedJSONServer(items_reply) as srv:
        srv.enqueue("/search", Status(429, {"error": "slow down"}, {"Retry-After": "2"}))
        system(table(srv.url), sleep=sleeps).retrieve("q")

    assert sleeps == [2.0]


def test_persistent_500s_give_up_after_max_retries_with_the_kind() -> None:
    with ScriptedJSONServer(lambda p, b: Status(503, {"error": "down"})) as srv:
        with pytest.raises(ServiceCallError) as err:
            system(table(srv.url)).retrieve("q")

    assert (err.value.kind, err.value.attempts, err.value.status_code) == ("server", 3, 503)
    assert "gave up after 2 retries" in str(err.value) and "HTTP 503" in str(err.value)


def test_a_timeout_is_an_error_of_kind_timeout() -> None:
    with ScriptedJSONServer(items_reply) as srv:
        srv.enqueue("/search", Hang(2.0))
        with pytest.raises(ServiceCallError) as err:
            system(table(srv.url, timeout=0.2, max_retries=0)).retrieve("q")

    assert err.value.kind == "timeout"
    assert "raise [http] timeout in test.toml" in str(err.value)


def test_a_refused_connection_is_not_retried() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    with pytest.raises(ServiceCallError) as err:
        system(table(f"http://127.0.0.1:{port}")).retrieve("q")

    assert (err.value.kind, err.value.attempts) == ("refused", 1)
    assert "start the service or fix the url in test.toml" in str(err.value)


def test_a_body_that_is_not_json_is_malformed_and_not_retried() -> None:
    with ScriptedJSONServer(lambda p, b: Status(200, raw="<html>proxy error</html>")) as srv:
        with pytest.raises(ServiceCallError) as err:
            system(table(srv.url)).retrieve("q")

    assert (err.value.kind, err.value.attempts) == ("malformed", 1)
    assert "not JSON" in str(err.value)


def test_a_missing_field_names_the_path_and_where_it_broke() -> None:
    with ScriptedJSONServer(lambda p, b: Status(200, {"data": {"results": []}})) as srv:
        with pytest.raises(ContractError) as err:
            system(table(srv.url)).retrieve("q")

    message = str(err.value)
    assert "field 'data.hits[].id': no key 'hits' at data (found keys ['results'])" in message
    assert "fix the field paths in test.toml" in message


def test_a_secret_header_is_sent_but_never_shown() -> None:
    data = table("http://x.invalid")
    data["http"]["headers"] = {"Authorization": "Bearer ${SVC_KEY}"}
    with ScriptedJSONServer(lambda p, b: Status(401, {"error": f"bad key Bearer {SECRET}"})) as srv:
        data["retrieve"]["url"] = f"{srv.url}/search"
        sut = system(data, env={"SVC_KEY": SECRET})
        with pytest.raises(ServiceCallError) as err:
            sut.retrieve("q")

    assert srv.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert err.value.kind == "auth" and err.value.attempts == 1
    assert SECRET not in str(err.value) and "[redacted]" in str(err.value)
    assert SECRET not in repr(sut.config) + str(sut.describe())
    assert sut.describe()["headers"] == {"Authorization": "<from $SVC_KEY>"}


def test_accept_status_reads_a_404_body_as_an_answer() -> None:
    data = table("http://x")
    with ScriptedJSONServer(lambda p, b: Status(404, {"data": {"hits": []}, "detail": "nothing found"})) as srv:
        data["retrieve"]["url"] = f"{srv.url}/search"
        data["retrieve"]["accept_status"] = [404]
        assert system(data).retrieve("q").items == ()


def test_render_body_is_json_safe_for_any_question() -> None:
    question = 'say "hi" {top_k} \\ \n {x}'
    body = render_body({"q": "{question}", "k": "{top_k}", "p": "Q: {question}", "n": [1, "{top_k}"]}, question, 3)

    assert body == {"q": question, "k": 3, "p": f"Q: {question.replace('{top_k}', '3')}", "n": [1, 3]}


# --------------------------------------------------------------------------- field paths


def test_field_paths_broadcast_a_parent_field_to_its_children() -> None:
    from rag_eval.adapters.http import read_items
    from rag_eval.adapters.http_config import ListFields

    fields = ListFields.parse(
        {"ids": "r[].kids[].id", "doc_ids": "r[].doc", "metadata": {"parent": "r[].id", "t": "?r[].title"}}, "t"
    )
    data = {"r": [{"id": "p1", "doc": "d1", "kids": [{"id": "k1"}, {"id": "k2"}]}, {"id": "p2", "doc": "d2", "kids": None}]}

    items = read_items(fields, data)

    assert [(i.id, i.doc_id, i.metadata["parent"], i.metadata["t"]) for i in items] == [
        ("k1", "d1", "p1", None),
        ("k2", "d1", "p1", None),
    ]


@pytest.mark.parametrize("path", ["", "a..b", "a[x]", "a.[]", "a[]b", 5])
def test_a_bad_field_path_is_a_configuration_error(path: Any) -> None:
    with pytest.raises(AdapterConfigError, match="t.ids"):
        FieldPath.parse(path, "t.ids")


def test_a_path_into_a_non_list_says_what_it_found() -> None:
    with pytest.raises(FieldError, match=r"expected a list at data, found dict"):
        FieldPath.parse("data[].id", "t").get({"data": {"id": 1}})


# --------------------------------------------------------------------------- configuration errors


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "svc.toml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = '[retrieve]\nurl = "http://127.0.0.1:9/api"\n[retrieve.fields]\nids = "items[].id"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[retrieve]\n[retrieve.fields]\nids = 'a[].id'\n", "[retrieve]: 'url' is required"),
        ('[retrieve]\nurl = "http://h/x"\n', "[retrieve].fields: 'ids' is required"),
        (GOOD + "typo = 1\n", "[retrieve].fields: unknown key(s) 'typo'; valid: ids, texts"),
        (GOOD.replace('"items[].id"', '"items[x].id"'), "bad field path 'items[x].id' at 'items[x]'"),
        (GOOD + '[http]\nheaders = { Authorization = "Bearer ${NOT_SET_VAR}" }\n', "environment variable NOT_SET_VAR is not set"),
        (GOOD + "[http]\ntop_k = 0\n", "[http] top_k: a positive integer"),
        (GOOD + 'texts = "items[].sub[].t"\n', "has more [] than ids"),
        (GOOD.replace("http://127.0.0.1:9/api", "ftp://h/x"), "not an http(s) URL"),
        ('pipeline = "http"\nwhat = 1\n' + GOOD, "key(s) 'what' do not apply to pipeline 'http'"),
        ("gold = 'chunks'\n" + GOOD, "gold = 'chunks'; valid: corpus, ids, text"),
        ('[retrieve]\nurl = "http://h/x"\nbody = { q = "fixed" }\n[retrieve.fields]\nids = "a[].id"\n', "never sends the question"),
    ],
)
def test_bad_http_configuration_names_the_file_key_and_fix(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(AdapterConfigError) as err:
        load_spec("http", path, env={})

    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_http_without_a_config_file_says_what_to_pass() -> None:
    with pytest.raises(AdapterConfigError, match="--pipeline http needs --pipeline-config FILE.toml"):
        load_spec("http", None)


def test_the_shipped_example_configuration_loads() -> None:
    spec = load_spec(None, Path(__file__).parents[2] / "examples" / "rag_app_http.toml", env={})

    assert (spec.kind, spec.gold) == ("http", "corpus")
    assert spec.http is not None and spec.http.chat is not None
    assert list(spec.http.retrieve.stages) == ["vector", "bm25", "fused", "reranked", "context"]
