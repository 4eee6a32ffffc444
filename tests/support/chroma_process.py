"""A real Chroma server for tests and benchmarks: ``chroma run`` on 127.0.0.1.

``ChromaProcess(path).start()`` waits for the heartbeat; ``stop()`` terminates it. No
pytest here (bench/ uses it too): failures raise ``ChromaStartError`` with the log tail.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

CHROMA = Path(sys.executable).parent / "chroma"  # installed with the chromadb package
STARTUP_TIMEOUT = 30.0


class ChromaStartError(RuntimeError):
    """The server did not come up; the message carries the command and its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaProcess:
    def __init__(self, path: Path, port: int | None = None, timeout: float = STARTUP_TIMEOUT) -> None:
        self.path = path
        self.port = port or free_port()
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = path.parent / f"{path.name}.log"

    @staticmethod
    def available() -> bool:
        return CHROMA.exists()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChromaProcess:
        if not self.available():
            raise ChromaStartError(f"no chroma binary at {CHROMA} (it comes with the chromadb package)")
        cmd = [str(CHROMA), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ChromaStartError(f"`{' '.join(cmd)}` exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return self
            except Exception:  # noqa: BLE001 - not up yet. Not just httpx.HTTPError: after an
                # in-process pytester run restored sys.modules, httpcore's exceptions are new
                # classes that httpx no longer maps to its own.
                pass
            time.sleep(0.1)
        self.stop()
        raise ChromaStartError(f"`{' '.join(cmd)}` gave no heartbeat within {self.timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log.exists() else "(no log)"
