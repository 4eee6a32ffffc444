"""The test-support Chroma server: a heartbeat from someone else's server is not taken for ours."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chroma_process import ChromaProcess, ChromaStartError, holds_port, pause

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc (Linux)")


class _Heartbeat(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b'{"nanosecond heartbeat": 1}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


@pytest.fixture
def impostor() -> Iterator[int]:
    """Another server, in this process, answering Chroma's heartbeat on a port of its own."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Heartbeat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_holds_port_tells_the_listener_from_other_processes() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        assert holds_port(os.getpid(), port) is True
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert holds_port(other.pid, port) is False
        finally:
            other.kill()
            other.wait()
    with socket.socket() as bound_only:  # bound, not listening: nobody answers there
        bound_only.bind(("127.0.0.1", 0))
        assert holds_port(os.getpid(), int(bound_only.getsockname()[1])) is False


def test_pause_returns_once_the_process_is_stopped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        pause(child.pid)
        state = next(x for x in Path(f"/proc/{child.pid}/status").read_text().splitlines() if x.startswith("State:"))
        assert state.split()[1] == "T", state
    finally:
        child.kill()
        child.wait()


@pytest.mark.slow  # starts chroma: ~3 s
def test_a_port_taken_by_another_server_is_swapped_for_a_free_one(tmp_path: Path, impostor: int) -> None:
    if not ChromaProcess.available():
        pytest.skip("no chroma binary (it comes with the chromadb package)")
    process = ChromaProcess(tmp_path / "data")
    process.port = impostor  # as if free_port's port had been taken before chroma bound it
    process.start()
    try:
        assert process.port != impostor
        assert process.proc is not None and holds_port(process.proc.pid, process.port) is True
    finally:
        process.stop()


@pytest.mark.slow  # starts chroma: ~3 s
def test_a_port_given_by_the_caller_and_taken_is_an_error(tmp_path: Path, impostor: int) -> None:
    if not ChromaProcess.available():
        pytest.skip("no chroma binary (it comes with the chromadb package)")
    with pytest.raises(ChromaStartError, match=rf"port {impostor} is answered by another process"):
        ChromaProcess(tmp_path / "data", port=impostor).start()
