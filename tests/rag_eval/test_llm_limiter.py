"""Bounded concurrency in one process against the scripted server: one rate limiter per
endpoint that a 429 slows for every thread, the breaker shared by all threads, the
budget reserved before sending, the RAG_JUDGE_CONCURRENCY setting."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rag_eval.core.errors import ConfigError
from rag_eval.llm.cached import CachedChatClient, JudgeCallError
from rag_eval.llm.client import LLMClient
from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.messages import ChatError, ChatRequest
from rag_eval.llm.policy import DEFAULT_PAUSE_S, CallPolicy, RateLimited, RateLimiter
from tests.support.openai_server import Reply, ScriptedOpenAIServer, Step, one_request_per, status

THREADS, CALLS = 8, 24


def client(srv: ScriptedOpenAIServer, *, concurrency: int = 4, max_retries: int = 40, breaker: int = 5) -> LLMClient:
    policy = CallPolicy(timeout=5.0, max_retries=max_retries, breaker_after=breaker, concurrency=concurrency)
    return LLMClient(Endpoint("RAG_JUDGE", base_url=srv.base_url, model="judge-m", api_key="sk-limiter-test"), policy)


def request(i: int) -> ChatRequest:
    return ChatRequest("judge-m", [{"role": "user", "content": f"question {i}"}], max_tokens=100)


def one_per(seconds: float) -> tuple[Callable[[Any], Step], list[int]]:
    return one_request_per(seconds, lambda req: Reply("ok", prompt_tokens=100, completion_tokens=10))


def run_threads(fn: Callable[[int], object], n: int = CALLS) -> list[object]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(fn, range(n)))


def test_a_429_slows_every_thread_fewer_429s_than_independent_loops(openai_server: ScriptedOpenAIServer) -> None:
    respond, refused = one_per(0.05)
    openai_server.set_default("chat", respond)
    loops = [client(openai_server, concurrency=1) for _ in range(THREADS)]  # N independent retry loops
    run_threads(lambda i: loops[i % THREADS].complete(request(i)))
    independent = refused[0]
    refused[0] = 0
    shared = client(openai_server, concurrency=THREADS)  # one client, one limiter, same number of threads
    answers = run_threads(lambda i: shared.complete(request(i)).content)
    assert answers == ["ok"] * CALLS and openai_server.calls("chat") == 2 * CALLS + independent + refused[0]
    # Strictly fewer, not a fixed ratio: how many 429s each side gets depends on how the
    # threads are scheduled (under a loaded CI machine 39 against 75 was seen); the exact
    # holding and spacing are checked on a fake clock below.
    assert refused[0] < independent, (refused[0], independent)


class FakeClock:
    """A clock that only the limiter's sleeps move (``advance=False``: it never moves, so
    every wait is measured from the same instant)."""

    def __init__(self, *, advance: bool = True) -> None:
        self.now, self.advance = 0.0, advance
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(round(seconds, 6))
            if self.advance:
                self.now += seconds


def limiter(clock: FakeClock, concurrency: int = 4) -> RateLimiter:
    return RateLimiter(concurrency, clock=clock, sleep=clock.sleep)


def test_a_429_holds_every_thread_until_retry_after_then_lets_them_through_one_at_a_time() -> None:
    clock = FakeClock(advance=False)
    shared = limiter(clock, concurrency=THREADS)
    shared.hold(0.5)

    def send(i: int) -> None:
        with shared.slot(deadline=100.0):
            pass

    run_threads(send, THREADS)
    # Nobody went before Retry-After; then one every 0.5 s, whichever thread it was.
    assert sorted(clock.sleeps) == [0.5 * k for k in range(1, THREADS + 1)]


def test_each_answer_that_is_not_a_429_halves_the_spacing_until_none_is_left() -> None:
    clock = FakeClock()
    one = limiter(clock, concurrency=1)
    one.hold(0.4)
    waits: list[float] = []
    for _ in range(12):
        before = len(clock.sleeps)
        with one.slot(deadline=100.0):
            pass
        waits.append(clock.sleeps[before] if len(clock.sleeps) > before else 0.0)
        one.passed()
    # the first waits out the hold, the second the spacing reserved when the first went
    # (0.4); from then on each waits half the one before, until no wait is left
    assert waits[:5] == [0.4, 0.4, 0.2, 0.1, 0.05]
    assert waits[-1] == 0.0 and all(a >= b for a, b in zip(waits, waits[1:]))


def test_a_429_without_retry_after_pauses_for_the_default() -> None:
    clock = FakeClock()
    one = limiter(clock)
    one.hold(None)
    with one.slot(deadline=100.0):
        pass
    assert clock.sleeps == [DEFAULT_PAUSE_S]


def test_a_wait_past_the_deadline_raises_at_once_without_sleeping() -> None:
    clock = FakeClock()
    one = limiter(clock)
    one.hold(30.0)
    with pytest.raises(RateLimited, match="past the time budget"):
        with one.slot(deadline=10.0):
            pass
    assert clock.sleeps == []
    with one.slot(deadline=40.0):  # the refused call took no slot with it
        pass
    assert clock.sleeps == [30.0]


def test_the_breaker_opens_for_every_thread(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.set_default("chat", lambda req: status(503))
    shared = client(openai_server, concurrency=4, max_retries=0, breaker=3)

    def call(i: int) -> str:
        try:
            shared.complete(request(i))
        except ChatError as exc:
            return exc.kind
        return "ok"

    kinds = run_threads(call)
    assert kinds.count("breaker") >= CALLS - 3 - 4  # at most threshold + the calls already in flight were sent
    assert openai_server.calls("chat") == CALLS - kinds.count("breaker") <= 3 + 4


def test_the_budget_is_never_overshot_by_calls_in_flight(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.latency = 0.2  # calls overlap
    openai_server.set_default("chat", lambda req: Reply("ok", prompt_tokens=100, completion_tokens=10))
    cached = CachedChatClient(client(openai_server, concurrency=THREADS), None, budget_tokens=500)

    def call(i: int) -> str:
        try:
            return cached.complete(request(i), case_id=f"c{i}").content
        except JudgeCallError as exc:
            return exc.kind

    outcomes = run_threads(call, 16)
    spent = cached.spent()[1]
    assert spent <= 550  # what a serial run spends: it stops once 500 are reached (5 calls of 110)
    assert outcomes.count("ok") == openai_server.calls("chat") == spent // 110
    assert outcomes.count("budget") == 16 - outcomes.count("ok")


def test_one_cached_client_serves_many_threads(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    openai_server.latency = 0.05
    cached = CachedChatClient(client(openai_server, concurrency=4), tmp_path)
    answers = run_threads(lambda i: cached.complete(request(i % 4), case_id=f"c{i % 4}").content)
    assert answers == ["OK"] * CALLS and len(cached.records) == CALLS
    total = cached.totals()["judge"]
    assert total["calls"] == CALLS and total["calls"] - total["cached_calls"] == openai_server.calls("chat") >= 4
    assert cached.cache is not None and len(cached.cache) == 4
    before = openai_server.calls("chat")
    run_threads(lambda i: cached.complete(request(i % 4), case_id=f"c{i % 4}"))
    assert openai_server.calls("chat") == before  # every answer now comes from the cache


def test_concurrency_setting() -> None:
    assert CallPolicy.from_env("RAG_JUDGE", {}).concurrency == 4
    assert CallPolicy.from_env("RAG_JUDGE", {"RAG_JUDGE_CONCURRENCY": "1"}).concurrency == 1
    with pytest.raises(ConfigError, match="RAG_JUDGE_CONCURRENCY='0' is not valid"):
        CallPolicy.from_env("RAG_JUDGE", {"RAG_JUDGE_CONCURRENCY": "0"})


def test_same_server_ignores_case_default_ports_a_trailing_slash_and_the_key() -> None:
    def ep(url: str, key: str = "k") -> Endpoint:
        return Endpoint("RAG_JUDGE", base_url=url, model="m", api_key=key)

    assert ep("HTTP://Host.Example/v1/").same_server(ep("http://host.example:80/v1", key="other"))
    assert not ep("http://host.example/v1").same_server(ep("http://host.example:8080/v1"))
    assert not ep("http://host.example/v1").same_server(ep("https://host.example/v1"))
    assert not ep("http://host.example/v1").same_server(ep("http://host.example/v2"))
    assert not ep("").same_server(ep(""))


def _student(srv: ScriptedOpenAIServer, *, breaker: int = 5) -> LLMClient:
    policy = CallPolicy(timeout=5.0, max_retries=3, breaker_after=breaker, concurrency=4)
    endpoint = Endpoint("RAG_SIMULATOR", base_url=srv.base_url + "/", model="student-m", api_key="sk-student")
    return LLMClient(endpoint, policy)


@pytest.mark.parametrize("shared", [True, False])
def test_a_429_to_the_judge_holds_the_student_on_the_same_server(
    openai_server: ScriptedOpenAIServer, shared: bool
) -> None:
    """The student's client and the judge's, on one server: once they share (as the dialogue
    tier makes them), the judge's 429 with Retry-After 1 holds the student's next call too;
    unshared, the student's call goes at once (the control: the test can tell them apart)."""
    judge, student = client(openai_server), _student(openai_server)
    if shared:
        assert student.share_endpoint(judge)
    openai_server.enqueue(status(429, headers={"Retry-After": "1"}))
    judged = threading.Thread(target=judge.complete, args=(request(0),))
    judged.start()
    while not openai_server.calls("chat"):
        threading.Event().wait(0.005)
    threading.Event().wait(0.05)  # the 429 is back at the judge's client
    student.complete(ChatRequest("student-m", [{"role": "user", "content": "a turn"}]))
    judged.join()
    first, *rest = openai_server.requests_of("chat")
    asked = [r.received_at - first.received_at for r in rest if r.json["model"] == "student-m"]
    assert len(asked) == 1 and len(rest) == 2  # the student's call and the judge's retry
    assert (asked[0] >= 0.9) is shared, asked


def test_the_student_on_the_judges_server_finds_the_judges_breaker_open(openai_server: ScriptedOpenAIServer) -> None:
    judge = client(openai_server, max_retries=0, breaker=2)
    student = _student(openai_server, breaker=5)
    assert student.share_endpoint(judge)
    openai_server.enqueue(status(503), status(503))
    for i in range(2):
        with pytest.raises(ChatError):
            judge.complete(request(i))
    with pytest.raises(ChatError) as info:
        student.complete(ChatRequest("student-m", [{"role": "user", "content": "a turn"}]))
    assert (info.value.kind, info.value.requests, openai_server.calls("chat")) == ("breaker", 0, 2)


def test_clients_of_different_servers_share_nothing(openai_server: ScriptedOpenAIServer) -> None:
    with ScriptedOpenAIServer() as other:
        judge, student = client(openai_server, max_retries=0, breaker=1), _student(other)
        assert student.share_endpoint(judge) is False
        openai_server.enqueue(status(503))
        with pytest.raises(ChatError):
            judge.complete(request(0))
        assert (
            student.complete(ChatRequest("student-m", [{"role": "user", "content": "a turn"}])).content
            and other.calls("chat") == 1
        )
