"""Atomic writes (issue 26.12): a full disk leaves the old file and no temporary file,
for the results file (tests/rag_eval/test_run.py) and the HTML report alike."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import rag_eval.util.atomic
from rag_eval.outputs.html import write_html
from rag_eval.util.atomic import write_atomic
from tests.rag_eval._results import case, results
from tests.rag_eval._typed import typed


def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def write(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rag_eval.util.atomic.os, "write", write)


def test_a_full_disk_keeps_the_old_file_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    full_disk(monkeypatch)
    with pytest.raises(OSError) as info:
        write_atomic(path, b"new" * 1000)
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"] and path.read_bytes() == b"old"


def test_the_html_report_on_a_full_disk_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = results([case("a"), case("b", "fail")])
    full_disk(monkeypatch)
    with pytest.raises(OSError):
        write_html(tmp_path / "r.html", typed(data))
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []
    assert write_html(tmp_path / "r.html", typed(data)).read_text(encoding="utf-8").startswith("<!")
