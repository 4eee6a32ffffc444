"""No secret reaches any output, measured from outside.

Scripted servers on 127.0.0.1 echo the keys back everywhere they can: inside the
reasons of valid judge verdicts, in unparseable 200 replies, in 401 and 500 error
bodies, and in the generator's answers (rag_app with ``generator=openai``, whose
answers quote the judge's key, which rag_app itself does not know). The gate runs
through the pytester sandbox with every output asked for; then stdout, the results
file, the HTML report, the Markdown summary, the JUnit file and every file under the
cache folders are read as bytes and searched for each key in every form it travels in
(exact, URL-encoded, base64 and base64 of ``user:key``).
"""

from __future__ import annotations

import base64
import itertools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from tests.rag_eval._plugin_sandbox import POSITIVE_IDS, Sandbox
from tests.support.judge_replies import native_verdict
from tests.support.leaks import leaked
from tests.support.openai_server import Raw, Reply, ScriptedOpenAIServer, Status, Step, reply

JUDGE_KEY = "sk-judge/ECHOED+key=1"
GENERATOR_KEY = "sk-gen-ECHOED-generator-key"
THRESHOLDS = """
[retrieval]
pass_rate = { min = 0.0 }

[judge]
faithfulness = { min = 0.5 }
error_rate = { max = 1.0 }
"""


def forms(secret: str) -> list[bytes]:
    """The key as it may travel: exact, URL-encoded, base64, and inside base64("user:" + key)."""
    raw = secret.encode()
    basic = base64.b64encode(b"user:" + raw).decode()
    return [
        raw,
        quote(secret, safe="").encode(),
        quote_plus(secret).encode(),
        base64.b64encode(raw).rstrip(b"="),
        basic[8:-4].encode(),
    ]


def echo(secret: str) -> str:
    """Text carrying every form of ``secret`` (the base64 of ``user:key`` as a Basic header would)."""
    return (
        " ".join(f.decode() for f in forms(secret)[:4])
        + f" Basic {base64.b64encode(b'user:' + secret.encode()).decode()}"
    )


ECHO = f"{echo(JUDGE_KEY)} {echo(GENERATOR_KEY)}"


def leaks(data: bytes) -> list[bytes]:
    """Each form of each key, whole or as its first 12 bytes (what a message cut before redaction
    keeps), and every 12-character window of the key as plain text, URL-encoded, base64, hex,
    upper case or JSON ``\\u`` escapes (tests/support/leaks.py): a cut anywhere leaves none."""
    text = data.decode("latin-1")
    found = [p for key in (JUDGE_KEY, GENERATOR_KEY) for f in forms(key) for p in (f, f[:12]) if p in data]
    return found + [w.encode() for key in (JUDGE_KEY, GENERATOR_KEY) for w in leaked(text, key)]


def verdict_echoing(request: Any) -> Reply:
    """A valid native verdict whose every reason quotes the keys."""
    verdict = native_verdict(request)
    for section in ("claims", "key_facts", "citations"):
        for row in verdict.get(section, []):
            row["reason"] = f"{row['reason']} ({ECHO})"
    verdict["relevance"]["reason"] = f"answers the question ({ECHO})"
    return reply(json.dumps(verdict), prompt_tokens=800, completion_tokens=200)


def faulty_judge() -> Callable[[Any], Step]:
    """Judge replies in turn: a valid verdict, an unparseable 200, a 401, a 500 (keys in each)."""
    turns = itertools.cycle(("valid", "unparseable", "401", "500"))
    lock = threading.Lock()

    def answer(request: Any) -> Step:
        with lock:
            turn = next(turns)
        if turn == "valid":
            return verdict_echoing(request)
        if turn == "unparseable":
            return Raw(
                json.dumps(
                    {
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": f"not json {ECHO}"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {},
                    }
                ).encode()
            )
        if turn == "401":
            return Status(
                401, {"error": {"message": f"Incorrect API key provided: {ECHO}", "type": "invalid_request_error"}}
            )
        return Status(500, f"internal error while serving {ECHO}")

    return answer


def generator_echoing(request: Any) -> Reply:
    return reply(f"The answer is in the material [1]. Debug: {ECHO}")


@pytest.fixture
def echo_env(
    openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox
) -> ScriptedOpenAIServer:
    """One server for the judge and the generator (told apart by the model they ask for)."""
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", JUDGE_KEY)
    monkeypatch.setenv("RAG_JUDGE_TIMEOUT", "5")
    monkeypatch.setenv("RAG_JUDGE_MAX_RETRIES", "1")
    monkeypatch.setenv("RAG_GENERATOR_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_GENERATOR_MODEL", "gen-model")
    monkeypatch.setenv("RAG_GENERATOR_API_KEY", GENERATOR_KEY)
    monkeypatch.setenv("RAG_GENERATOR_MAX_RETRIES", "0")
    sandbox.add_judge_tests()
    sandbox.write_thresholds(THRESHOLDS)
    return openai_server


def route(judge: Callable[[Any], Step]) -> Callable[[Any], Step]:
    def answer(request: Any) -> Step:
        return generator_echoing(request) if request.get("model") == "gen-model" else judge(request)

    return answer


def outputs_of(sandbox: Sandbox, result: pytest.RunResult, caches: list[Path]) -> dict[str, bytes]:
    out = {
        "stdout": result.stdout.str().encode(),
        "stderr": result.stderr.str().encode(),
        "results": sandbox.results_path.read_bytes(),
        "report": sandbox.results_path.with_suffix(".html").read_bytes(),
        "markdown": (sandbox.root / "summary.md").read_bytes(),
        "junit": (sandbox.root / "junit.xml").read_bytes(),
    }
    for folder in caches:
        out.update({str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()})
    return out


def run_gate(sandbox: Sandbox, judge_cache: Path) -> pytest.RunResult:
    return sandbox.run(
        "-m",
        "deterministic or judge",
        "-rA",
        "--rag-set",
        "generator=openai",
        "--rag-judge-cache",
        str(judge_cache),
        "--rag-summary-md",
        str(sandbox.root / "summary.md"),
        "--junitxml",
        str(sandbox.root / "junit.xml"),
    )


@pytest.mark.parametrize("judge", ["valid", "faulty"])
def test_no_echoed_key_reaches_any_output(
    sandbox: Sandbox, echo_env: ScriptedOpenAIServer, tmp_path: Path, judge: str
) -> None:
    echo_env.set_default("chat", route(verdict_echoing if judge == "valid" else faulty_judge()))
    judge_cache = tmp_path / "judge-cache"
    result = run_gate(sandbox, judge_cache)

    judge_cases = sandbox.cases("judge")
    assert set(judge_cases) == set(POSITIVE_IDS), result.stdout.str()
    requests = echo_env.requests_of("chat")
    # the keys really were sent, and really came back: the test would see a leak
    assert any(r.header("authorization") == f"Bearer {JUDGE_KEY}" for r in requests)
    assert any(r.header("authorization") == f"Bearer {GENERATOR_KEY}" for r in requests)
    if judge == "valid":
        assert all(c["outcome"] != "error" for c in judge_cases.values())
        assert any("[redacted]" in json.dumps(c) for c in judge_cases.values())  # the reasons were kept, minus the keys
    else:
        assert {c["outcome"] for c in judge_cases.values()} >= {"error"}
    answers = [c for c in sandbox.cases("deterministic").values()]
    assert answers and all(c["outcome"] != "error" for c in answers)

    written = outputs_of(sandbox, result, [judge_cache, sandbox.cache_dir])
    assert any(name.startswith(str(judge_cache)) for name in written)  # the judge cache was written and searched
    found = {name: leaks(data) for name, data in written.items() if leaks(data)}
    assert found == {}
