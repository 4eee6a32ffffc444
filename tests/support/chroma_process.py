"""A real Chroma server for tests and benchmarks: ``chroma run`` on 127.0.0.1.

``ChromaProcess(path).start()`` waits for the heartbeat; ``stop()`` terminates it. No
pytest here (bench/ uses it too): failures raise ``ChromaStartError`` with the log tail.

A heartbeat alone does not prove the server is ours: ``free_port`` only finds a port
that was free a moment ago, and if another server takes it before ours has booted, ours
exits ("Address ... is not available") while the heartbeat is answered by the other.
So where ``/proc`` tells (Linux), ``start`` also checks that our process holds the
listening socket, and on a port it chose itself tries a fresh one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

CHROMA = Path(sys.executable).parent / "chroma"  # installed with the chromadb package
STARTUP_TIMEOUT = 30.0
PORT_ATTEMPTS = 3


class ChromaStartError(RuntimeError):
    """The server did not come up; the message carries the command and its log."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening_inodes(port: int) -> set[str] | None:
    """Inodes of the sockets listening on ``port``, or None where /proc does not say."""
    tables = [t for t in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")) if t.exists()]
    if not tables:
        return None
    found: set[str] = set()
    for table in tables:
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                found.add(inode)
    return found


def holds_port(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds a socket listening on ``port``; None where /proc does not say."""
    inodes = _listening_inodes(port)
    fds = Path(f"/proc/{pid}/fd")
    if inodes is None or not fds.is_dir():
        return None
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


def pause(pid: int, timeout: float = 10.0) -> None:
    """SIGSTOP ``pid`` and return once the kernel reports it stopped (the signal is asynchronous)."""
    os.kill(pid, signal.SIGSTOP)
    status = Path(f"/proc/{pid}/status")
    deadline = time.monotonic() + timeout
    while status.exists() and time.monotonic() < deadline:
        state = next((line for line in status.read_text().splitlines() if line.startswith("State:")), "")
        if state.split()[1:2] == ["T"]:  # "State:\tT (stopped)"
            return
        time.sleep(0.01)


class ChromaProcess:
    def __init__(self, path: Path, port: int | None = None, timeout: float = STARTUP_TIMEOUT) -> None:
        self.path = path
        self.chose_port = port is None  # a port of our own choosing may be swapped for another
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
        for attempt in range(PORT_ATTEMPTS):
            if self._start_once():
                return self
            if not self.chose_port or attempt == PORT_ATTEMPTS - 1:
                break
            self.port = free_port()
        raise ChromaStartError(
            f"port {self.port} is answered by another process, not by our `chroma run`:\n{self.log_tail()}"
        )

    def _start_once(self) -> bool:
        """Start and wait for the heartbeat: True once it is ours, False if another process answers."""
        cmd = [str(CHROMA), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("ab") as log:
            logged_before = log.tell()  # the log is appended to: read only this start's part
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if self.chose_port and b"not available" in self.log.read_bytes()[logged_before:]:
                    return False  # taken between free_port and our bind
                raise ChromaStartError(f"`{' '.join(cmd)}` exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    if holds_port(self.proc.pid, self.port) is False:
                        self.stop()
                        return False
                    return True
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
