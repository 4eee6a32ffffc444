"""The gate against a real Chroma server (``chroma run``): the same cases, metrics and
verdict as against the embedded store, and the results say which store was used."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rag_eval._plugin_sandbox import IDS, Sandbox
from tests.support.chroma_process import ChromaProcess, ChromaStartError


@pytest.fixture
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaProcess]:
    if not ChromaProcess.available():
        pytest.skip("no chroma binary next to this interpreter (it comes with the chromadb package)")
    process = ChromaProcess(tmp_path_factory.mktemp("chroma-gate") / "data")
    try:
        process.start()
    except ChromaStartError as exc:
        pytest.fail(str(exc))
    try:
        yield process
    finally:
        process.stop()


def test_gate_on_a_chroma_server_equals_the_embedded_store(
    sandbox: Sandbox, chroma: ChromaProcess, tmp_path: Path
) -> None:
    # Subprocesses: an in-process pytester run restores sys.modules afterwards, which leaves
    # httpx and httpcore with mismatched exception classes for later tests of this process.
    embedded = sandbox.run_subprocess("-m", "retrieval or deterministic")
    assert embedded.ret == 0
    local = sandbox.results()
    # A fresh cache for the server run: its index is built on the server, not reused.
    server = sandbox.run_subprocess(
        "-m",
        "retrieval or deterministic",
        "--rag-set",
        f"cache_dir={tmp_path / 'server-cache'}",
        "--rag-set",
        "chroma_host=127.0.0.1",
        "--rag-set",
        f"chroma_port={chroma.port}",
    )
    assert server.ret == 0
    remote = sandbox.results()
    assert remote["metrics"] == local["metrics"]
    assert remote["metrics_n"] == local["metrics_n"]
    assert [g["value"] for g in remote["gates"]] == [g["value"] for g in local["gates"]]
    strip = lambda cases: [(c["tier"], c["id"], c["outcome"], c["failed_stage"], c["metrics"]) for c in cases]  # noqa: E731
    assert strip(remote["cases"]) == strip(local["cases"])
    assert len({c["id"] for c in remote["cases"]}) == len(IDS)
    assert f"http://127.0.0.1:{chroma.port}" in str(remote["run"]["system"]["vector_store"])
    assert "embedded" in str(local["run"]["system"]["vector_store"])
