"""rag_app and rag_eval type-check clean under the ``[tool.mypy]`` settings of pyproject.toml.

Why a test and not only a CI step: a type error here is usually a real bug in waiting
(an optional part of a results file read as if always present, a None passed on), and
the test suite is what every contributor runs. mypy runs in a subprocess, exactly as a
contributor would run it, so the settings are pyproject.toml's and nothing else's.

The cache lives in the repository's ``.mypy_cache`` (mypy puts a ``.gitignore`` in it):
a cold run takes ~40 s, a warm one ~2 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_errors() -> None:
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(ROOT / ".mypy_cache"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 0, (
        f"mypy found type errors (exit {proc.returncode}); reproduce with "
        f"`python -m mypy` from the repository root (settings: [tool.mypy] in pyproject.toml):\n{output}"
    )
    assert "Success: no issues found" in proc.stdout, output
