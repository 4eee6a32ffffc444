"""A system with its own stage names and no corpus file, through pytest: in process and
over HTTP. Per-stage metrics and gates under its names (`retrieval.dense.recall@10`), the
diagnosis naming its stages, the report's stage columns, and a gate naming a stage the
system does not have stopped at start-up with the stages it has."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

DOCS = [f"d{i:02d}" for i in range(30)]
# gold of q07 (d07#0) is at sparse rank 8 and hybrid rank 12, and cut from the final 3
SYSTEM = """
DOCS = [f"d{i:02d}" for i in range(30)]

def item(d):
    return {"id": f"{d}#0", "text": f"paragraph {d}", "score": 1.0, "metadata": {"doc_id": d}}

def ranked(question):
    gold = question.split()[-1]
    others = [d for d in DOCS if d != gold]
    if gold == "d07":  # the lost one
        return {"dense": others[:20], "sparse": others[:7] + [gold] + others[7:12],
                "hybrid": others[:11] + [gold], "final": others[:3]}
    return {"dense": [gold] + others[:19], "sparse": [gold] + others[:12],
            "hybrid": [gold] + others[:11], "final": [gold] + others[:2]}

class Retriever:
    stages = [["dense", "sparse"], "hybrid", "final"]

    def retrieve(self, question, top_k=None):
        lists = ranked(question)
        return {"items": [item(d) for d in lists["final"]],
                "stages": {k: [item(d) for d in v] for k, v in lists.items()}}

def make():
    return Retriever()
"""
GOLDEN = [
    {"id": f"q{i:02d}", "question": f"which paragraph is d{i:02d}", "evidence": [{"chunk_id": f"d{i:02d}#0"}]}
    for i in range(10)
]


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mysys=SYSTEM)
    pytester.makeini("[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\nrag_eval_pipeline = rag_app\n")
    (pytester.path / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in GOLDEN), encoding="utf-8")
    return pytester


def thresholds(pytester: pytest.Pytester, body: str) -> str:
    path = pytester.path / "thresholds.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)


def run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-m", "retrieval", "--rag-golden-set", "golden.jsonl", *extra)


def check_results(pytester: pytest.Pytester) -> None:
    results = json.loads((pytester.path / "reports" / "eval-results.json").read_text(encoding="utf-8"))
    m = results["metrics"]
    assert m["retrieval.dense.recall@10"] == 0.9 and m["retrieval.hybrid.mrr"] == pytest.approx((9 + 1 / 12) / 10)
    assert m["retrieval.recall@5"] == m["retrieval.final.recall@5"] == 0.9
    assert not any(k.startswith(("retrieval.vector.", "retrieval.context.")) for k in m)  # nothing of rag_app's
    lost = next(c for c in results["cases"] if c["id"] == "q07")
    assert lost["failed_stage"] == "final"
    assert lost["message"] == (
        "gold evidence did not reach final: requirement 1: not in dense (top 20), in sparse rank 8, "
        "in hybrid rank 12, cut at final (3 kept)"
    )
    html = (pytester.path / "reports" / "eval-results.html").read_text(encoding="utf-8")
    assert '"stage_order": ["dense", "sparse", "dense+sparse", "hybrid", "final"' in html.replace("&#34;", '"') or (
        "dense+sparse" in html and "hybrid" in html
    )


def test_own_stage_names_in_process(repo: pytest.Pytester) -> None:
    gates = thresholds(repo, '[retrieval]\n"dense.recall@10" = { min = 0.85 }\n"hybrid.recall@10" = { min = 0.85 }\n')
    result = run(repo, "--rag-pipeline", "mysys:make", "--rag-thresholds", gates)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["PASS retrieval.dense.recall@10 = 0.9000* (need >= 0.85; n=10)"])
    check_results(repo)
    failing = thresholds(repo, '[retrieval]\n"hybrid.recall@10" = { min = 0.95 }\n')
    bad = run(repo, "--rag-pipeline", "mysys:make", "--rag-thresholds", failing)
    assert bad.ret == pytest.ExitCode.TESTS_FAILED
    assert bad.stdout.lines[-1].startswith(
        "rag-eval gate FAILED: 1 of 1 gates failed (retrieval.hybrid.recall@10 0.9 < 0.95, n=10)"
    )


def test_a_gate_on_a_stage_the_system_does_not_have_stops_the_run(repo: pytest.Pytester) -> None:
    gates = thresholds(repo, '[retrieval]\n"vector.recall@10" = { min = 0.5 }\n')
    result = run(repo, "--rag-pipeline", "mysys:make", "--rag-thresholds", gates)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # a clean usage error (issue 20.7), not pytest's `! _pytest.outcomes.Exit: ...` banner
    result.stderr.fnmatch_lines(
        [
            "ERROR: rag-eval thresholds: *vector.recall@10 names stage 'vector'*the system's stages are dense, sparse, hybrid, final*"
        ]
    )
    assert "_pytest.outcomes.Exit" not in result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


class _Service(BaseHTTPRequestHandler):
    lists: Any = None

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        namespace: dict[str, Any] = {}
        exec(SYSTEM, namespace)  # the same system, served
        payload = json.dumps(namespace["make"]().retrieve(body["question"])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_own_stage_names_over_http(repo: pytest.Pytester, service: str) -> None:
    stage_tables = "".join(
        f'[retrieve.stages.{s}]\nids = "stages.{s}[].id"\nscores = "stages.{s}[].score"\ndoc_ids = "stages.{s}[].metadata.doc_id"\n'
        for s in ("dense", "sparse", "hybrid", "final")
    )
    config = Path(repo.path / "svc.toml")
    config.write_text(
        'pipeline = "http"\ngold = "ids"\nstages = [["dense", "sparse"], "hybrid", "final"]\n'
        f'[retrieve]\nurl = "{service}/retrieve"\nbody = {{ question = "{{question}}" }}\n'
        '[retrieve.fields]\nids = "items[].id"\ntexts = "items[].text"\nscores = "items[].score"\n'
        'doc_ids = "items[].metadata.doc_id"\n' + stage_tables,
        encoding="utf-8",
    )
    gates = thresholds(repo, '[retrieval]\n"dense.recall@10" = { min = 0.85 }\n')
    result = run(repo, "--rag-pipeline-config", str(config), "--rag-thresholds", gates)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    check_results(repo)


def test_an_ini_default_that_points_nowhere_names_the_ini_key(repo: pytest.Pytester) -> None:
    repo.makeini(
        "[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\nrag_eval_pipeline = rag_app\nrag_eval_dataset = evals/missing\n"
    )
    result = repo.runpytest_subprocess("-m", "retrieval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini rag_eval_dataset (in tox.ini)*missing: not a folder*"])
    repo.makeini(
        "[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\nrag_eval_pipeline = rag_app\nrag_eval_golden_set = golden.jsonl\n"
        "rag_eval_pipeline_config = nowhere.toml\n"
    )
    result = repo.runpytest_subprocess("-m", "retrieval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*rag-eval pipeline (set by ini rag_eval_pipeline_config, rag_eval_pipeline in tox.ini)*nowhere.toml: no such file*"
        ]
    )


def test_a_user_conftest_defining_dataset_still_works(repo: pytest.Pytester) -> None:
    """ML repositories often have their own --dataset: every option of the plugin is --rag-*."""
    repo.makeconftest("def pytest_addoption(parser):\n    parser.addoption('--dataset', default='mine')\n")
    repo.makepyfile(test_own="def test_own(pytestconfig):\n    assert pytestconfig.getoption('dataset') == 'x'\n")
    result = repo.runpytest_subprocess("--dataset", "x", "test_own.py")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)


def test_rag_set_corpus_path_is_refused_not_silently_ignored(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\nrag_eval_pipeline = rag_app\n")
    (pytester.path / "golden.jsonl").write_text(json.dumps(GOLDEN[0]) + "\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("--rag-golden-set", "golden.jsonl", "--rag-set", "corpus_path=/nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rag-set corpus_path=/nope: the corpus is the dataset's*--rag-dataset*"])
