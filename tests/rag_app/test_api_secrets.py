"""rag_app serve never shows a key (issue 26 #1, #4): not in a 500 body, not on stderr or
stdout, not in an answer, whatever form a hostile generator echoes it in. Every
12-character window of the key in every form is scanned (tests/rag_app/leaks.py)."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from rag_app.http_server import make_server
from rag_app.pipeline import RagPipeline
from rag_app.settings import Settings
from tests.rag_app.leaks import key_forms, leaks
from tests.rag_app.test_api import DOCS, post
from tests.support.openai_server import Raw, Reply, ScriptedOpenAIServer, Status

KEY = "sk-gen-9Xq+/Zr=SERVE-5150-c0ffee"
REPO = Path(__file__).resolve().parents[2]


def echo_all(padding: int) -> str:
    return "p" * padding + " | ".join(f"{name}={form}" for name, form in key_forms(KEY).items())


def write_corpus(root: Path) -> Path:
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return corpus


def test_a_500_body_and_its_log_line_redact_before_cutting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("RAG_GENERATOR_API_KEY", KEY)
    pipeline = RagPipeline(
        Settings(
            corpus_path=str(write_corpus(tmp_path)),
            cache_dir=str(tmp_path / "cache"),
            embedder="fake",
            reranker="none",
            sufficiency=False,
        )
    )

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(echo_all(960))  # the key's forms straddle the 1,000-character cut

    pipeline.chat = explode  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="rag_app"), make_server(pipeline, "127.0.0.1", 0) as server:
        r = post(server.url, "/api/chat", {"question": "derivative of x squared"})

    assert r.status_code == 500 and r.json()["error"] == "internal"
    assert leaks(r.text, KEY) == [] and r.json()["detail"].startswith("RuntimeError: ppp")
    logged = "\n".join(rec.getMessage() for rec in caplog.records)
    assert "Traceback" in logged and leaks(logged, KEY) == []


def _chat_reply(request: dict[str, Any]) -> Any:
    question = request["messages"][-1]["content"]
    if "explode" in question:
        return Status(500, {"error": {"message": echo_all(264)}})
    if "garbage" in question:
        return Raw(echo_all(100).encode())
    return Reply(f"echo {base64.b64encode(KEY.encode()).decode()} and {KEY.upper()} [1]")


def test_rag_app_serve_shows_no_form_of_the_generator_key(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as generator:
        generator.set_default("chat", _chat_reply)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "OPENAI_"))}
        env.update(
            RAG_GENERATOR_BASE_URL=generator.base_url,
            RAG_GENERATOR_API_KEY=KEY,
            RAG_GENERATOR_MODEL="gpt-4o-mini",
            RAG_GENERATOR_MAX_RETRIES="0",
            PYTHONPATH=str(REPO),
        )
        sets = [
            "embedder=fake",
            "reranker=none",
            "generator=openai",
            "sufficiency=false",
            f"cache_dir={tmp_path / 'cache'}",
            f"corpus_path={write_corpus(tmp_path)}",
        ]
        cmd = [sys.executable, "-m", "rag_app", "-v", *[a for s in sets for a in ("--set", s)], "serve", "--port", "0"]
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        bodies: list[str] = []
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            while first and "serving rag_app on" not in first:
                first += proc.stdout.readline()
            url = re.search(r"serving rag_app on (http://\S+)", first)
            assert url, f"serve did not start: {first!r}"
            for question in ("derivative explode", "derivative garbage", "derivative of x squared"):
                r = post(url.group(1), "/api/chat", {"question": question})
                bodies.append(f"{r.status_code} {r.text}")
            bodies.append(httpx.get(f"{url.group(1)}/api/health", timeout=10).text)
        finally:
            proc.terminate()
            out, err = proc.communicate(timeout=20)
    assert [b[:3] for b in bodies[:3]] == ["500", "500", "200"], bodies
    assert "malformed response" in bodies[1] and "[redacted]" in bodies[2]
    assert "chat completion" in err  # the failures were logged on stderr ...
    for name, text in {"responses": "\n".join(bodies), "stdout": first + out, "stderr": err}.items():
        assert leaks(text, KEY) == [], name  # ... with no window of the key in any form
