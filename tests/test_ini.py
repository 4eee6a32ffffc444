"""This repository's pytest ini: the key pinned for pytest-asyncio (which arrives with the
deepeval extra) warns nothing on an install without it (issue 20, point 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_unknown_config_option_warning_without_pytest_asyncio() -> None:
    # -p no:asyncio stands for an install without pytest-asyncio: the key is then unknown.
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:asyncio", "--co", "-q", "tests/test_docs_links.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "collected" in out.stdout
    assert "Unknown config option" not in out.stdout + out.stderr
