"""CachedChatClient over real HTTP (scripted server): cache, accounting, budget, errors."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import warnings
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from rag_eval.llm.cached import CACHE_FILE, CachedChatClient, JudgeCallError
from rag_eval.llm.messages import ChatRequest
from rag_eval.llm.usage import CallRecord, iter_records, totals_by_tier
from tests.support.llm_client import judge_llm
from tests.support.openai_server import Reply, ScriptedOpenAIServer, rate_limited, raw, reply, status

KEY = "sk-test-judge-SECRET"


def make(base_url: str, cache_dir: Path | None, *, max_retries: int = 3, **kw: object) -> CachedChatClient:
    inner = judge_llm(base_url, KEY, max_retries=max_retries)
    return CachedChatClient(inner, cache_dir, **kw)  # type: ignore[arg-type]


def req(text: str = "Is 1+1=2?", model: str = "judge-m") -> ChatRequest:
    return ChatRequest(model, [{"role": "system", "content": "grade"}, {"role": "user", "content": text}])


def test_miss_then_hit_makes_one_call(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(reply("verdict: yes", prompt_tokens=11, completion_tokens=3))
    with make(openai_server.base_url, tmp_path) as cc:
        first = cc.complete(req(), case_id="c1")
        second = cc.complete(req(), case_id="c1")
    assert openai_server.calls("chat") == 1
    assert (second.content, second.usage, second.model, second.finish_reason) == (
        first.content,
        first.usage,
        first.model,
        first.finish_reason,
    )
    assert (first.attempts, second.attempts) == (1, 0)
    assert [r.cached for r in cc.records] == [False, True]
    # Cached calls spend nothing in this run: 11 + 3 tokens only once.
    usage = cc.usage_for("c1")
    assert (usage["calls"], usage["cached_calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (2, 1, 11, 3)


def test_a_new_client_on_the_same_dir_reuses_the_cache(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    with make(openai_server.base_url, tmp_path) as cc:
        cc.complete(req())
    with make(openai_server.base_url, tmp_path) as cc2:
        assert cc2.complete(req()).content == "OK"
    assert openai_server.calls("chat") == 1


def test_trial_index_makes_independent_calls(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(reply("trial0"), reply("trial1"))
    with make(openai_server.base_url, tmp_path) as cc:
        assert cc.complete(req(), trial=0).content == "trial0"
        assert cc.complete(req(), trial=1).content == "trial1"
        assert cc.complete(req(), trial=0).content == "trial0"
        assert cc.complete(req(), trial=1).content == "trial1"
    assert openai_server.calls("chat") == 2


def test_key_is_endpoint_independent(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as a, ScriptedOpenAIServer() as b:
        a.enqueue(reply("from a"))
        with make(a.base_url, tmp_path) as ca:
            ca.complete(req())
        with make(b.base_url, tmp_path) as cb:
            assert cb.complete(req()).content == "from a"
        assert (a.calls("chat"), b.calls("chat")) == (1, 0)


def test_request_parameters_are_part_of_the_key(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    with make(openai_server.base_url, tmp_path) as cc:
        cc.complete(req())
        cc.complete(ChatRequest("judge-m", req().messages, temperature=0.7))
        cc.complete(ChatRequest("judge-m", req().messages, response_format={"type": "json_object"}))
        cc.complete(req(model="other-m"))
    assert openai_server.calls("chat") == 4


def test_fresh_ignores_reads_and_stores_the_new_answer(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(reply("old"), reply("new"))
    with make(openai_server.base_url, tmp_path) as cc:
        assert cc.complete(req()).content == "old"
    with make(openai_server.base_url, tmp_path, fresh=True) as fresh:
        assert fresh.complete(req()).content == "new"
    with make(openai_server.base_url, tmp_path) as cc:
        assert cc.complete(req()).content == "new"
    assert openai_server.calls("chat") == 2


def test_no_cache_dir_means_no_cache(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    with make(openai_server.base_url, None) as cc:
        cc.complete(req())
        cc.complete(req())
    assert openai_server.calls("chat") == 2


def _worker(base_url: str, cache_dir: str, order: list[int]) -> tuple[int, int]:
    """One process with its own client: (real calls, cached calls) over ``order``."""
    with make(base_url, Path(cache_dir)) as cc:
        for i in order:
            assert cc.complete(req(f"question {i}")).content == f"answer to question {i}"
        recs = cc.records
    return sum(not r.cached for r in recs), sum(r.cached for r in recs)


def _answer(body: dict[str, Any]) -> Reply:
    return reply(f"answer to {body['messages'][-1]['content']}")


def test_two_processes_share_the_cache(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.set_default("chat", _answer)
    keys = list(range(50))
    orders = [keys, keys[::-1]]  # overlapping: both processes want all 50, from opposite ends
    # fork is fast (spawn re-imports openai in every child: seconds); each child still
    # builds its own client and SQLite connection inside _worker.
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        first = list(pool.map(_worker, [openai_server.base_url] * 2, [str(tmp_path)] * 2, orders))
    calls_after_first = openai_server.calls("chat")
    # Every key was answered once by someone; racing duplicates are allowed, lost entries are not.
    assert 50 <= calls_after_first <= 100
    assert sum(real for real, _ in first) == calls_after_first
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        second = list(pool.map(_worker, [openai_server.base_url] * 2, [str(tmp_path)] * 2, orders))
    assert second == [(0, 50), (0, 50)]
    assert openai_server.calls("chat") == calls_after_first
    con = sqlite3.connect(tmp_path / CACHE_FILE)
    try:
        assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 50
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        con.close()


def _forked_child(cc: CachedChatClient, conn: Connection) -> None:
    # Uses the connection-holding object inherited from the parent: it must reopen.
    hit = cc.complete(req("parent"))
    assert cc.cache is not None
    cc.cache.put("child-key", {"content": "from child"}, model="judge-m")
    conn.send((hit.content, hit.attempts))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_cache_reopens_after_fork(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    with make(openai_server.base_url, tmp_path) as cc:
        cc.complete(req("parent"))
        parent_end, child_end = ctx.Pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with the server thread running
            proc = ctx.Process(target=_forked_child, args=(cc, child_end))
            proc.start()
        proc.join(20)
        assert proc.exitcode == 0
        assert parent_end.recv() == ("OK", 0)
        assert cc.cache is not None and cc.cache.get("child-key") == {"content": "from child"}
        assert cc.complete(req("parent")).attempts == 0  # the parent's own connection still works
    assert openai_server.calls("chat") == 1


def test_secrets_never_reach_cache_or_records(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(status(500), reply("fine"))
    with make(openai_server.base_url, tmp_path, max_retries=0) as cc:
        with pytest.raises(JudgeCallError) as info:
            cc.complete(req("a"), case_id="c")
        cc.complete(req("b"), case_id="c")
        cc.complete(req("b"), case_id="c")
        records = cc.records
    assert KEY not in str(info.value)
    assert openai_server.requests_of("chat")[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    secrets = [KEY, openai_server.base_url, openai_server.root_url, f"127.0.0.1:{openai_server.port}"]
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"fine" in raw  # the answer is there (WAL or main file), so we are reading the right bytes
    for s in secrets:
        assert s.encode() not in raw
        assert s not in json.dumps([r.to_dict() for r in records])


def test_answer_echoing_the_key_is_redacted_before_it_is_returned_or_cached(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    openai_server.enqueue(reply(f"your key is {KEY}"), reply("never asked"))
    with make(openai_server.base_url, tmp_path) as cc:
        first = cc.complete(req())
        second = cc.complete(req())
    assert first.content == second.content == "your key is [redacted]"
    assert openai_server.calls("chat") == 1  # the redacted answer is valid and served from the cache
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"[redacted]" in raw and KEY.encode() not in raw


def test_cost_from_prices(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(
        reply("x", prompt_tokens=1000, completion_tokens=500), reply("y", prompt_tokens=10, completion_tokens=10)
    )
    with make(openai_server.base_url, tmp_path, prices={"judge-m": (2.0, 8.0)}) as cc:
        cc.complete(req("one"), case_id="c1", tier="judge")
        cc.complete(req("one"), case_id="c1", tier="judge")  # cached: costs 0
        cc.complete(req("two", model="unpriced-m"), case_id="c2", tier="deepeval")
    a, cached, b = cc.records
    assert a.cost == pytest.approx(1000 * 2.0 / 1e6 + 500 * 8.0 / 1e6) == pytest.approx(0.006)
    assert (a.priced, cached.cost, cached.cached) == (True, 0.0, True)
    assert (b.cost, b.priced) == (0.0, False)
    totals = cc.totals()
    assert totals["judge"]["calls"] == 2 and totals["judge"]["cached_calls"] == 1
    assert totals["judge"]["cost_usd"] == pytest.approx(0.006)
    assert (totals["judge"]["prompt_tokens"], totals["judge"]["completion_tokens"]) == (1000, 500)
    assert totals["deepeval"]["unpriced_calls"] == 1 and totals["deepeval"]["cost_usd"] == 0.0
    assert cc.usage_for("c2")["prompt_tokens"] == 10


def test_records_round_trip_through_json(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    with make(openai_server.base_url, tmp_path, prices={"judge-m": (1.0, 1.0)}) as cc:
        cc.complete(req(), case_id="c1")
        cc.complete(req(), case_id="c1")
    payload = json.loads(json.dumps([r.to_dict() for r in cc.records]))
    back = list(iter_records(payload))
    assert back == cc.records
    assert totals_by_tier(back + back)["judge"]["calls"] == 4  # merging two workers' records
    with pytest.raises(ValueError, match=r"missing key\(s\) \['cost'\]"):
        CallRecord.from_dict({k: v for k, v in payload[0].items() if k != "cost"})


def test_token_budget_stops_new_calls_but_serves_cache(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(reply("a", prompt_tokens=60, completion_tokens=40))
    with make(openai_server.base_url, tmp_path, budget_tokens=100) as cc:
        cc.complete(req("one"), case_id="c1")  # 0 spent before: allowed; 60 + 40 = 100 after
        with pytest.raises(JudgeCallError, match=r"budget_tokens 100 reached: 100 tokens spent") as info:
            cc.complete(req("two"), case_id="c2")
        assert info.value.kind == "budget"
        assert cc.complete(req("one"), case_id="c3").content == "a"  # cached: still served
    assert openai_server.calls("chat") == 1


def test_usd_budget(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(reply("a", prompt_tokens=1000, completion_tokens=500))
    with make(openai_server.base_url, tmp_path, prices={"judge-m": (2.0, 8.0)}, budget_usd=0.005) as cc:
        cc.complete(req("one"))  # spends $0.006 >= $0.005
        with pytest.raises(JudgeCallError, match=r"budget_usd \$0.005 reached: \$0.006000 spent") as info:
            cc.complete(req("two"))
    assert info.value.kind == "budget"


def test_ledger_makes_the_budget_global(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(reply("a", prompt_tokens=60, completion_tokens=40))
    ledger = tmp_path / "ledger"
    w1 = make(openai_server.base_url, tmp_path / "c1", budget_tokens=100, ledger_dir=ledger)
    w2 = make(openai_server.base_url, tmp_path / "c2", budget_tokens=100, ledger_dir=ledger)
    w1.complete(req("one"))
    assert w2.spent() == (0.0, 100)
    with pytest.raises(JudgeCallError, match="run-wide") as info:
        w2.complete(req("two"))  # w2 spent nothing itself; the run did
    assert info.value.kind == "budget"
    w1.close()
    w2.close()


def test_rate_limit_is_retried_and_recorded_once(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.enqueue(rate_limited(retry_after=1), reply("after wait"))
    with make(openai_server.base_url, tmp_path) as cc:
        assert cc.complete(req(), case_id="c").content == "after wait"
    assert openai_server.calls("chat") == 2
    (rec,) = cc.records
    assert (rec.attempts, rec.error, rec.cached) == (2, "", False)


def test_server_error_forever_becomes_judge_call_error(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.set_default("chat", lambda body: status(500))
    with make(openai_server.base_url, tmp_path, max_retries=2) as cc:
        with pytest.raises(JudgeCallError, match="HTTP 500") as info:
            cc.complete(req(), case_id="c9")
    assert (info.value.kind, info.value.attempts, info.value.case_id) == ("server", 3, "c9")
    assert openai_server.calls("chat") == 3
    assert cc.usage_for("c9")["errors"] == 1
    with make(openai_server.base_url, tmp_path) as again:  # the failure was not cached
        openai_server.reset_defaults()
        assert again.complete(req()).content == "OK"


def test_from_config_carries_cache_prices_and_budget(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    from rag_eval.judge.config import JudgeConfig

    env = {"RAG_JUDGE_MODEL": "judge-m", "RAG_JUDGE_BASE_URL": openai_server.base_url, "RAG_JUDGE_API_KEY": KEY}
    cfg = JudgeConfig.from_env(env, cache_dir=tmp_path, prices={"judge-m": (2.0, 8.0)}, budget_tokens=7)
    with CachedChatClient.from_config(cfg) as cc:
        assert cc.cache is not None and cc.cache.path == tmp_path / CACHE_FILE
        assert (cc.prices, cc.budget_tokens, cc.fresh) == ({"judge-m": (2.0, 8.0)}, 7, False)
        assert KEY not in repr(cc)


def echo_body(key: str, content: str) -> bytes:
    """A valid chat completion whose ``model`` and ``finish_reason`` echo ``key``."""
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": key,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": key}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
    ).encode()


def test_a_key_echoed_in_any_field_or_as_json_escapes_never_reaches_the_cache_files(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from tests.support.leaks import assert_no_window, files_text, forms

    escaped = forms(KEY)["escapes"]  # \u0073\u006b... as literal text in the reply
    openai_server.enqueue(
        raw(echo_body(KEY, f'{{"reason": "saw {escaped}"}}')),
        raw(echo_body(KEY.upper(), f"plain {KEY} and hex {KEY.encode().hex()}")),
    )
    with make(openai_server.base_url, tmp_path) as cc:
        first, second = cc.complete(req("a")), cc.complete(req("b"))
        assert (tmp_path / (CACHE_FILE + "-wal")).exists()
        during = files_text(tmp_path)  # the WAL holds the rows now
        assert cc.complete(req("a")).content == first.content and openai_server.calls("chat") == 2
    assert_no_window([during, files_text(tmp_path), repr(first), repr(second)], KEY)
    assert "[redacted]" in during and json.loads(first.content)["reason"] == "saw [redacted]"


def test_the_budget_at_concurrency_16_never_spends_more_than_a_serial_run(
    openai_server: ScriptedOpenAIServer,
) -> None:
    """Each call is reserved at its most (prompt bytes + max_tokens) before it is sent and
    settled on the reply: 16 threads send no call a serial run would not (issue 37.4)."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.in_flight import InFlight

    # 600 + 400 tokens per call, within the bound: the prompt is ~1,000 bytes, max_tokens 500
    openai_server.set_default(
        "chat", InFlight(0.02).answering(lambda r: reply("v", prompt_tokens=600, completion_tokens=400))
    )
    cases = [
        ChatRequest("judge-m", [{"role": "user", "content": f"case {i} " + "x" * 1000}], max_tokens=500)
        for i in range(40)
    ]

    def run(threads: int) -> tuple[int, int]:
        openai_server.reset()
        cc = make(openai_server.base_url, None, budget_tokens=2500)

        def one(r: ChatRequest) -> None:
            try:
                cc.complete(r, case_id=r.messages[0]["content"][:8])
            except JudgeCallError as exc:
                assert exc.kind == "budget"

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, cases))
        cc.close()
        return cc.spent()[1], openai_server.calls("chat")

    serial = run(1)
    assert serial == (3 * 1000, 3)  # 0, 1000 and 2000 are under 2500: the third call is the last
    spends = [run(16) for _ in range(20)]
    assert all(spend <= serial for spend in spends), spends
