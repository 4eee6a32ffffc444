"""A stand-in ``gh`` for testing the workflow's scripts: a script put first on PATH
that logs its calls to ``$FAKE_GH_LOG`` and answers as the test scripts it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest


def run_with_fake_gh(
    tmp_path: Path, fake_gh: str, command: list[str], env: Mapping[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``command`` (a bash script) with ``fake_gh`` as ``gh``; return its result and
    the log lines the stand-in wrote (one per call)."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(fake_gh, encoding="utf-8")
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "gh.log"
    full_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_GH_LOG": str(log), **env}
    out = subprocess.run(command, env=full_env, capture_output=True, text=True, timeout=60)
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return out, calls
