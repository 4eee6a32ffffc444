"""An HTTP-adapter system that echoes its own credential back, measured from outside.

The user's service is configured with ``headers = { Authorization = "Bearer ${SVC_AUTH}" }``.
The variable's name is deliberately not one the environment rule knows (no ``_TOKEN`` /
``_API_KEY`` suffix): only the adapter's "header values are secrets" rule can catch it.
The scripted service on 127.0.0.1 puts that credential, in every form it travels in,
into its retrieved texts and metadata, its answers and source titles, and the body of a
500 reply. The gate runs with every output asked for (results, HTML report, Markdown
summary, JUnit XML, terminal); each is read as bytes and searched for the token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.rag_eval.test_pytest_plugin_secrets import echo, forms
from tests.support.scripted_http import ScriptedJSONServer, Status

pytest_plugins = ["pytester"]

TOKEN = "svc-cred/ECHOED+by=the-service"
FAILING = "q3"  # its retrieve call answers 500 with the header in the body
GOLDEN = [
    {
        "id": f"q{i}",
        "question": f"which paragraph is d{i}",
        "evidence": [{"chunk_id": f"d{i}#0"}],
        "expected_action": "answer",
    }
    for i in range(5)
]


def _answer(path: str, body: Any) -> Status:
    """The service: it echoes its credential (every form) into texts, metadata, answers,
    source titles and the body of a 500, as a careless service's debug output would."""
    auth = f"Bearer {TOKEN}"
    said = echo(TOKEN)
    gold = str((body or {}).get("question", "")).split()[-1]
    if path == "/retrieve" and gold == "d" + FAILING[1:]:
        return Status(500, {"error": f"upstream failed for request with Authorization: {auth} ({said})"})
    items = [
        {"id": f"{d}#0", "text": f"paragraph {d}; request carried {said}", "metadata": {"doc_id": d, "note": auth}}
        for d in (gold, "d9")
    ]
    if path == "/retrieve":
        return Status(200, {"items": items})
    return Status(
        200,
        {
            "answer": f"It is {gold} [1]. (debug: {said})",
            "refused": False,
            "citations": [{"id": items[0]["id"], "title": f"{gold} / {auth}"}],
            "context": items,
        },
    )


@pytest.fixture
def service() -> Iterator[ScriptedJSONServer]:
    with ScriptedJSONServer(_answer) as srv:
        yield srv


def test_a_service_echoing_its_header_credential_leaks_it_nowhere(
    pytester: pytest.Pytester, service: ScriptedJSONServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVC_AUTH", TOKEN)
    pytester.makeini("[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\nrag_eval_pipeline = rag_app\n")
    (pytester.path / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in GOLDEN), encoding="utf-8")
    (pytester.path / "svc.toml").write_text(
        'pipeline = "http"\ngold = "ids"\n'
        '[http]\nmax_retries = 0\nheaders = { Authorization = "Bearer ${SVC_AUTH}" }\n'
        f'[retrieve]\nurl = "{service.url}/retrieve"\nbody = {{ question = "{{question}}" }}\n'
        '[retrieve.fields]\nids = "items[].id"\ntexts = "items[].text"\ndoc_ids = "items[].metadata.doc_id"\n'
        'metadata = { note = "items[].metadata.note" }\n'
        f'[chat]\nurl = "{service.url}/answer"\nbody = {{ question = "{{question}}" }}\n'
        '[chat.fields]\nanswer = "answer"\nrefused = "refused"\n'
        '[chat.sources]\nids = "citations[].id"\ntexts = "citations[].title"\n'
        '[chat.context]\nids = "context[].id"\ntexts = "context[].text"\n',
        encoding="utf-8",
    )
    (pytester.path / "thresholds.toml").write_text(
        "[retrieval]\npass_rate = { min = 0.0 }\nerror_rate = { max = 0.0 }\n", encoding="utf-8"
    )
    result = pytester.runpytest_subprocess(
        "-m",
        "retrieval or deterministic",
        "-rA",
        "--rag-golden-set",
        "golden.jsonl",
        "--rag-pipeline-config",
        "svc.toml",
        "--rag-thresholds",
        "thresholds.toml",
        "--rag-summary-md",
        "summary.md",
        "--junitxml",
        "junit.xml",
    )

    assert {r.headers.get("authorization") for r in service.requests} == {f"Bearer {TOKEN}"}  # it was sent
    reports = pytester.path / "reports"
    results = json.loads((reports / "eval-results.json").read_text(encoding="utf-8"))
    cases = {(c["tier"], c["id"]): c for c in results["cases"]}
    assert cases[("retrieval", FAILING)]["outcome"] == "error"  # the 500: an error, counted
    assert cases[("retrieval", "q0")]["outcome"] == "pass"
    assert "[redacted]" in json.dumps(results)  # the echoes were there, and were masked
    outputs = {
        "stdout": result.stdout.str().encode(),
        "stderr": result.stderr.str().encode(),
        "results": (reports / "eval-results.json").read_bytes(),
        "report": (reports / "eval-results.html").read_bytes(),
        "summary": (pytester.path / "summary.md").read_bytes(),
        "junit": (pytester.path / "junit.xml").read_bytes(),
    }
    # each form whole, and its first 12 bytes: a message cut before redaction keeps a prefix
    pieces = [f for f in forms(TOKEN)] + [f[:12] for f in forms(TOKEN)]
    leaked = {name: [f for f in pieces if f in data] for name, data in outputs.items()}
    assert not any(leaked.values()), leaked
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # retrieval.error_rate gates the 500
