"""Debug logging cannot print the judge's key (issue 26.3).

With ``--log-level=DEBUG -o log_cli=true -o junit_logging=all`` every library logger
reaches stdout and the JUnit file, httpcore's included, which logs the response
headers: a server echoing the key in a ``Retry-After`` header put it in both. The
plugin must install the redacting logging filter (rag_eval's redactor) on the run's
log records (redact.install_log_redaction, installed at configure on controller and workers).
"""

from __future__ import annotations

import pytest

from tests.rag_eval._plugin_sandbox import Sandbox
from tests.rag_eval.test_pytest_plugin_secrets import forms
from tests.support.judge_replies import native_judge_reply
from tests.support.openai_server import ScriptedOpenAIServer, Status

KEY = "sk-judge-DEBUG-echoed-key-0123456789"


def test_debug_logging_of_a_key_echoing_server_reaches_neither_stdout_nor_junit(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", KEY)
    monkeypatch.setenv("RAG_JUDGE_MAX_RETRIES", "2")
    openai_server.set_default("chat", native_judge_reply)
    # the first reply of the run: a 429 whose headers echo the key (then valid verdicts)
    openai_server.enqueue(Status(429, headers={"Retry-After": KEY, "X-Echo": f"Bearer {KEY}"}))
    sandbox.add_judge_tests()
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 1.0 }\n")
    junit = sandbox.root / "junit.xml"

    result = sandbox.run(
        "-m",
        "judge",
        "--rag-judge-cache",
        str(sandbox.root / "judge-cache"),
        "--log-level=DEBUG",
        "-o",
        "log_cli=true",
        "-o",
        "junit_logging=all",
        "--junitxml",
        str(junit),
    )

    assert any(r.header("authorization") == f"Bearer {KEY}" for r in openai_server.requests_of("chat"))
    assert sandbox.cases("judge"), result.stdout.str()  # the judge ran: the logs had something to show
    outputs = {
        "stdout": result.stdout.str().encode(),
        "stderr": result.stderr.str().encode(),
        "junit": junit.read_bytes(),
    }
    leaked = {name: [f for f in forms(KEY) for part in (f, f[:12]) if part in data] for name, data in outputs.items()}
    assert {name: found for name, found in leaked.items() if found} == {}
