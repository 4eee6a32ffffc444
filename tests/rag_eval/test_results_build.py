"""The results writer (``rag_eval.results.build.write_results``) against a hostile disk and a
second run writing the same file (issue 26.12, 26.15): a failed write is one clear
error with nothing half-written left behind; another run's write meanwhile is said."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import rag_eval.util.atomic
from rag_eval.outputs.write import write_outputs
from rag_eval.results.build import ResultsWriteError, write_results
from rag_eval.results.finalize import Outputs, summary_lines
from rag_eval.util.redact import Redactor

# A valid results file (the writer validates before the rename) with 60 kB of text in it:
# the writes are short (4 kB each), so the writer must loop.
RESULTS: dict[str, Any] = {
    **json.loads((Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json").read_text("utf-8")),
    "text": "集合 " * 10_000,
}


def fail_writes(monkeypatch: pytest.MonkeyPatch, code: int, after: int = 0) -> None:
    """Every ``os.write`` after the first ``after`` fails with ``code``: the OS call the writer makes."""
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] > after:
            raise OSError(code, os.strerror(code))
        return real(fd, bytes(data)[:4096])  # short writes: the writer must loop

    monkeypatch.setattr(rag_eval.util.atomic.os, "write", write)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EIO])
def test_a_failed_write_names_the_file_and_reason_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"earlier": "run"}', encoding="utf-8")
    fail_writes(monkeypatch, code, after=2)  # part of the file reached the disk, then the disk was full

    with pytest.raises(ResultsWriteError) as info:
        write_results(path, RESULTS)
    monkeypatch.undo()

    assert isinstance(info.value, OSError)  # callers that catch OSError (merge) still do
    assert str(info.value) == (
        f"{path}: results not written: {os.strerror(code)}; free space or fix the permissions there, "
        "or write them elsewhere (--rag-results PATH; merge: --out PATH)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no r.json.tmpPID
    assert path.read_text(encoding="utf-8") == '{"earlier": "run"}'  # the earlier file is untouched


def test_short_writes_still_write_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail_writes(monkeypatch, errno.ENOSPC, after=10**9)
    path = tmp_path / "deep" / "r.json"
    assert write_results(path, RESULTS) == []
    monkeypatch.undo()
    assert json.loads(path.read_text(encoding="utf-8")) == RESULTS


def test_another_run_writing_the_same_file_meanwhile_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    started = time.time()
    path.write_text('{"another": "run"}', encoding="utf-8")  # a second run finished first

    warnings = write_results(path, RESULTS, since=started)

    assert len(warnings) == 1 and warnings[0].startswith(f"{path} was written by another run at ")
    assert warnings[0].endswith(
        "while this one ran; it is replaced by this run's results (give each run its own --rag-results PATH)"
    )
    assert json.loads(path.read_text(encoding="utf-8")) == RESULTS


def test_no_warning_for_a_file_from_before_the_run_or_for_this_process_own_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{}", encoding="utf-8")
    os.utime(path, (time.time() - 3600, time.time() - 3600))  # yesterday's run
    assert write_results(path, RESULTS, since=time.time() - 60) == []
    # a second run in the same process (pytester, an IDE) replacing its own file is no other writer
    assert write_results(path, RESULTS, since=0.0) == []


def test_the_warning_reaches_the_summary_lines(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    started = time.time()
    path.write_text("{}", encoding="utf-8")

    written = write_outputs(Dumped(RESULTS), Outputs(path, redactor=Redactor(), started=started))

    lines = summary_lines([], True, None, False, [], written)
    warned = [line for line in lines if line.text.startswith("WARNING: ")]
    assert len(warned) == 1 and warned[0].tone == "warn" and "written by another run" in warned[0].text


class Dumped:
    """A results dict standing in for ``RunResults`` where only its ``to_dict`` is read."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return self.data


def test_without_a_secret_the_outputs_are_written_from_the_results_uncopied_and_unchanged(tmp_path: Path) -> None:
    """No redaction copy without a secret: the writers (results file, schema check, HTML
    report, Markdown summary) get the results dict itself, change nothing in it, and write
    the bytes a redacting copy would give."""
    import copy

    from rag_eval.results.model import RunResults
    from tests.rag_eval._results_factory import make_results, with_baseline

    run_results = RunResults.from_dict(with_baseline(make_results(24)))
    before = copy.deepcopy(run_results.to_dict())

    def outputs(folder: str, redactor: Redactor) -> Outputs:
        out = tmp_path / folder
        return Outputs(out / "results.json", out / "report.html", out / "summary.md", redactor=redactor)

    plain = write_outputs(run_results, outputs("plain", Redactor()))
    assert not plain.problems and run_results.to_dict() == before  # nothing written into it
    scanned = write_outputs(run_results, outputs("scanned", Redactor(["a-secret-nowhere-in-the-results"])))
    assert not scanned.problems
    for name in ("results.json", "report.html", "summary.md"):
        assert (tmp_path / "plain" / name).read_bytes() == (tmp_path / "scanned" / name).read_bytes(), name
