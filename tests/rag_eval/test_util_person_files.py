"""The one write rule (rag_eval/util/person_files.py): no output is an input, nothing
invalid replaces a file, a person's work is refused or copied first."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path

import pytest

from rag_eval.core.errors import RagEvalError
from rag_eval.util.person_files import (
    InvalidOutputError,
    OutputIsInputError,
    PersonWorkError,
    append_atomic,
    backup_copy,
    guard_person_file,
    refuse_existing,
    refuse_overlap,
    rejected_path,
    same_file,
    write_atomic,
)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_output_that_is_an_input_is_refused_by_name(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    results.write_text("{}")
    with pytest.raises(OutputIsInputError, match=r"--out .*r\.json is the input RESULTS .*nothing was written"):
        refuse_overlap([("--out", results)], [("RESULTS", results)])


def test_the_same_file_by_another_spelling_or_a_symlink_is_the_same_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    results = tmp_path / "r.json"
    results.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(results)
    hard = tmp_path / "hard.json"
    os.link(results, hard)
    for spelling in (tmp_path / "sub" / ".." / "r.json", link, hard):
        with pytest.raises(OutputIsInputError):
            refuse_overlap([("--report", spelling)], [("FILE", results)])
    # a symlink to a file not written yet is still that file
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "later.json")
    assert same_file(dangling, tmp_path / "later.json")


def test_two_outputs_that_are_one_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputIsInputError, match=r"--report .* and --out .* are one file"):
        refuse_overlap([("--out", tmp_path / "a"), ("--report", tmp_path / "a")], [])


def test_distinct_paths_and_unset_options_pass(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text("{}")
    refuse_overlap([("--out", tmp_path / "out.json"), ("--report", None)], [("FILE", tmp_path / "in.json")])


def test_an_invalid_output_never_replaces_the_file_and_can_be_kept(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"the old content")
    before = sha(target)
    with pytest.raises(InvalidOutputError, match="left as it was: what was produced is invalid: bad"):
        write_atomic(target, b"new", lambda data: "bad")
    assert sha(target) == before
    assert not rejected_path(target).exists()
    with pytest.raises(InvalidOutputError, match=r"kept in .*out\.invalid\.json"):
        write_atomic(target, b"new", lambda data: "bad", keep_rejected=True)
    assert sha(target) == before
    assert rejected_path(target).read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.invalid.json", "out.json"]  # no temporary file


def test_a_valid_output_is_written(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "out.json"
    assert write_atomic(target, b"ok", lambda data: None if data == b"ok" else "no") == target
    assert target.read_bytes() == b"ok"


def test_append_keeps_what_was_there(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    append_atomic(target, "one\n")
    append_atomic(target, "two\n")
    assert target.read_text() == "one\ntwo\n"


def count_labels(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if '"label": 1' in line)


def test_a_file_with_a_persons_work_is_refused_naming_it_and_the_count(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.jsonl"
    sheet.write_text('{"label": 1}\n{"label": null}\n{"label": 1}\n')
    before = sha(sheet)
    with pytest.raises(PersonWorkError, match=r"sheet\.jsonl holds 2 labels: refusing .* --force") as err:
        guard_person_file(sheet, count_labels, force=False, what="labels")
    assert isinstance(err.value, RagEvalError)
    assert sha(sheet) == before


def test_force_keeps_a_timestamped_copy(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.jsonl"
    sheet.write_text('{"label": 1}\n')
    copy = guard_person_file(sheet, count_labels, force=True, what="labels")
    assert copy is not None and copy.parent == tmp_path
    assert copy.name.startswith("sheet.") and copy.suffix == ".jsonl"
    assert sha(copy) == sha(sheet)


def test_no_file_or_no_work_needs_no_guard(tmp_path: Path) -> None:
    assert guard_person_file(tmp_path / "none.jsonl", count_labels, force=False) is None
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"label": null}\n')
    assert guard_person_file(empty, count_labels, force=False) is None


def test_a_backup_never_replaces_an_earlier_backup(tmp_path: Path) -> None:
    sheet = tmp_path / "s.jsonl"
    sheet.write_text("1")
    when = dt.datetime(2026, 12, 7, 12, 0, 0, tzinfo=dt.UTC)
    first = backup_copy(sheet, when)
    sheet.write_text("2")
    second = backup_copy(sheet, when)
    assert (first.name, second.name) == ("s.20261207T120000Z.jsonl", "s.20261207T120000Z-1.jsonl")
    assert (first.read_text(), second.read_text()) == ("1", "2")


def test_an_output_that_must_be_new_refuses_an_existing_file_or_symlink(tmp_path: Path) -> None:
    drafts = tmp_path / "drafts.jsonl"
    refuse_existing("--out", drafts)  # not there yet: nothing to refuse
    drafts.write_text("{}\n", encoding="utf-8")
    with pytest.raises(
        PersonWorkError, match=r"--out .*drafts.jsonl exists and may hold drafts: it is never overwritten"
    ):
        refuse_existing("--out", drafts, what="drafts")
    dangling = tmp_path / "link.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    with pytest.raises(PersonWorkError, match="give a new path"):
        refuse_existing("--out", dangling)
    assert drafts.read_text(encoding="utf-8") == "{}\n"
