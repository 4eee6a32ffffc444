"""The gate over HTTP: rag_app's API gives the in-process numbers; service faults are
per-case errors; secrets stay out of the results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.rag_eval._plugin_sandbox import GOLDEN, IDS, REPO_ROOT, Sandbox
from tests.support.scripted_http import ScriptedJSONServer, Status

SECRET = "svc-secret-token-4242"


@pytest.fixture
def rag_app_api(sandbox: Sandbox) -> Iterator[str]:
    """``python -m rag_app serve`` on 127.0.0.1 (a free port), over the sandbox corpus with
    the sandbox's settings; killed afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_APP_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    sets = [
        "embedder=fake",
        "reranker=none",
        f"cache_dir={sandbox.cache_dir}",
        f"corpus_path={sandbox.dataset / 'corpus.jsonl'}",
    ]
    cmd = [
        sys.executable,
        "-m",
        "rag_app",
        *[a for s in sets for a in ("--set", s)],
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
    ]
    proc = subprocess.Popen(cmd, cwd=sandbox.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = ""
        for line in proc.stdout:  # type: ignore[union-attr]
            m = re.search(r"serving rag_app on (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, f"the server did not start (exit code {proc.poll()})"
        deadline = time.monotonic() + 30
        while httpx.get(f"{url}/api/health", timeout=5).status_code != 200:
            assert time.monotonic() < deadline, "no /api/health within 30 s"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def http_config(sandbox: Sandbox, url: str) -> Path:
    text = (REPO_ROOT / "examples" / "rag_app_http.toml").read_text(encoding="utf-8")
    path = sandbox.root / "rag_app_http.toml"
    # The service runs with reranker = none, like the in-process run: declare rag_app's
    # stages without the reranker there too (its API still sends an identity list).
    text = text.replace('"fused", "reranked", "context"]', '"fused", "context"]')
    path.write_text(text.replace("http://127.0.0.1:8000", url), encoding="utf-8")
    return path


@pytest.mark.slow  # ~30 s: a server process (index load) and two gate runs
def test_the_gate_over_http_matches_the_in_process_run(sandbox: Sandbox, rag_app_api: str) -> None:
    config = http_config(sandbox, rag_app_api)
    tiers = ("-m", "retrieval or deterministic", "-p", "no:randomly")

    local = sandbox.run(*tiers, "--rag-results", "reports/local.json")
    remote = sandbox.run(
        *tiers, "--rag-pipeline", "http", "--rag-pipeline-config", str(config), "--rag-results", "reports/http.json"
    )

    assert local.ret == remote.ret == pytest.ExitCode.OK, remote.stdout.str()
    a = json.loads((sandbox.root / "reports" / "local.json").read_text(encoding="utf-8"))
    b = json.loads((sandbox.root / "reports" / "http.json").read_text(encoding="utf-8"))
    assert any(k.startswith("retrieval.bm25.") for k in a["metrics"])  # per-stage metrics came over HTTP too
    assert a["metrics"] == b["metrics"]
    outcome = lambda r: {(c["id"], c["tier"]): (c["outcome"], c["failed_stage"], c["message"]) for c in r["cases"]}  # noqa: E731
    assert outcome(a) == outcome(b)
    assert b["run"]["system"]["adapter"] == "http"
    assert b["run"]["system"]["endpoint"] == f"{rag_app_api}/api/retrieve"
    # [info] (GET /api/health): the HTTP run names the same index and embedder as the in-process one
    assert "info_error" not in b["run"]["system"], b["run"]["system"]
    for key in ("index_fingerprint", "embedder"):
        assert a["run"]["system"][key] and b["run"]["system"][key] == a["run"]["system"][key], key


# --------------------------------------------------------------------------- service faults

FAULT_THRESHOLDS = """\
[retrieval]
pass_rate = { min = 0.5 }
error_rate = { max = 0.0 }
"""

GOLD_DOC = {i["question"]: (i["gold_doc_ids"] or ["vec"])[0] for i in GOLDEN}


def by_question(path: str, body: Any) -> Status:
    question = body["query"]
    if "derivative" in question:
        return Status(500, {"error": "index shard down"})
    doc = GOLD_DOC[question]
    return Status(200, {"hits": [{"id": f"{doc}-1", "doc": doc, "content": "..."}, {"id": "other-1", "doc": "other"}]})


SERVICE = """\
pipeline = "http"
gold = "ids"

[http]
max_retries = 1
headers = {{ "X-Api-Key" = "${{SVC_TOKEN}}" }}

[retrieve]
url = "{url}/search"
body = {{ query = "{{question}}", size = "{{top_k}}" }}

[retrieve.fields]
ids = "hits[].id"
doc_ids = "hits[].doc"
"""


def test_a_failing_service_call_is_an_error_for_that_case_only(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVC_TOKEN", SECRET)
    sandbox.write_thresholds(FAULT_THRESHOLDS)
    with ScriptedJSONServer(by_question) as srv:
        config = sandbox.root / "svc.toml"
        config.write_text(SERVICE.format(url=srv.url), encoding="utf-8")
        result = sandbox.run("-m", "retrieval", "--rag-pipeline-config", str(config), "--rag-top-k", "3")

    assert result.ret == pytest.ExitCode.TESTS_FAILED  # error_rate gate
    assert {r.json["size"] for r in srv.requests} == {3}  # --rag-top-k reaches the service
    assert sandbox.results()["run"]["overrides"] == {"top_k": 3}  # and the run records it
    cases = sandbox.cases()
    assert re.match(
        r"ServiceCallError: retrieve at http://127\.0\.0\.1:\d+/search failed after 2 attempts \[server\]: HTTP 500",
        cases["q-deriv"]["message"],
    ), cases["q-deriv"]["message"]
    assert set(cases) == set(IDS)
    assert cases["q-deriv"]["outcome"] == "error"
    assert {c["outcome"] for i, c in cases.items() if i != "q-deriv"} == {"pass"}
    assert cases["q-set"]["metrics"]["doc.recall@5"] == 1.0
    assert all(r.headers["x-api-key"] == SECRET for r in srv.requests)
    written = sandbox.results_path.read_text(encoding="utf-8")
    assert SECRET not in written
    assert sandbox.results()["run"]["system"]["adapter"] == "http"


def test_an_unset_header_variable_stops_the_run_at_start_up(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_TOKEN", raising=False)
    config = sandbox.root / "svc.toml"
    config.write_text(SERVICE.format(url="http://127.0.0.1:9"), encoding="utf-8")

    result = sandbox.run("-m", "retrieval", "--rag-pipeline-config", str(config))

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: rag-eval pipeline: *svc.toml [[]http[]] headers.X-Api-Key: environment variable SVC_TOKEN is not set*"]
    )
