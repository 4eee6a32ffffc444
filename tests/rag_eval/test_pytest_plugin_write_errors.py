"""A results file that cannot be written is a failed run said in one line (issue 26.12).

Disk full on ``--rag-results``: the writer raises ``ResultsWriteError`` (an OSError
naming the file, the reason and the fix) and leaves no ``r.json.tmpPID``
(tests/rag_eval/test_run.py). The plugin used to let it escape as INTERNALERROR, exit
3, and its summary still prints ``rag-eval gate PASSED``; it must print the error, no
PASSED verdict, and exit 1. The disk is made full at the OS call the writer makes.
"""

from __future__ import annotations

import pytest

from tests.rag_eval._plugin_sandbox import Sandbox

FULL_DISK = '''
import errno
import os
import types

import pytest

import rag_eval.util.atomic


class _FullDisk(types.ModuleType):
    """os, except that every write fails: the disk is full."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def write(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def pytest_configure(config):
    rag_eval.util.atomic.os = _FullDisk("os")
'''


def test_a_full_disk_on_the_results_file_fails_the_run_cleanly(sandbox: Sandbox) -> None:
    sandbox.write_conftest(FULL_DISK)
    sandbox.write_thresholds("[retrieval]\npass_rate = { min = 0.0 }\n")

    result = sandbox.run_subprocess("-m", "retrieval", "--rag-no-report")

    out = result.stdout.str() + result.stderr.str()
    assert not list(sandbox.results_path.parent.glob("*.tmp*"))  # nothing half-written left (the writer's part)
    assert "INTERNALERROR" not in out, out
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert f"{sandbox.results_path}: results not written: No space left on device" in out
    assert "PASSED" not in "".join(
        line for line in result.stdout.lines if "rag-eval gate" in line or line.startswith("gate:")
    )
