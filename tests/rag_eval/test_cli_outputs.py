"""The breaks of issue 37 through the command line, each reproduced and now holding:
a filled-in sheet is never overwritten, no output replaces an input, a results file's
numbers are checked for what they mean, and nothing invalid replaces an existing file.
"File untouched" is always a checksum compared before and after."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.cli import main
from tests.rag_eval._results_factory import make_results
from tests.rag_eval.test_results_merge import THRESHOLDS, shard_files


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checksums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(make_results(24), ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    thresholds = tmp_path / "thresholds.toml"
    thresholds.write_text(THRESHOLDS, encoding="utf-8")
    paths = []
    for n, shard in enumerate(shard_files(thresholds), start=1):
        path = tmp_path / f"s{n}.json"
        path.write_text(json.dumps(shard), encoding="utf-8")
        paths.append(path)
    return paths


# --------------------------------------------------------------------------- 1. the labelling sheet


def sampled(results_file: Path, lab: Path, n: int) -> Path:
    """``sample --n N --out LAB`` (seed 0); returns the sheet it wrote."""
    assert main(["sample", str(results_file), "--n", str(n), "--out", str(lab)]) == 0
    return lab / "labels-sheet.jsonl"


def test_sample_again_into_a_labelled_folder_keeps_every_label(
    results_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = tmp_path / "lab"
    sheet = sampled(results_file, lab, 20)
    lines = [json.loads(line) for line in sheet.read_text(encoding="utf-8").splitlines()]
    filled = "".join(json.dumps({**x, "label": "yes", "annotator": "li"}) + "\n" for x in lines)
    sheet.write_text(filled, encoding="utf-8")
    before = checksums(lab)
    capsys.readouterr()

    assert main(["sample", str(results_file), "--n", "20", "--seed", "1", "--out", str(lab)]) == 2

    err = capsys.readouterr().err
    assert f"{sheet} holds {len(lines)} labelled line(s): refusing to overwrite it" in err and "--force" in err
    assert checksums(lab) == before


def test_force_replaces_the_sheet_after_keeping_a_timestamped_copy(
    results_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = tmp_path / "lab"
    sheet = sampled(results_file, lab, 5)
    first = sheet.read_text(encoding="utf-8").splitlines()
    sheet.write_text(first[0].replace('"label": null', '"label": "no"') + "\n", encoding="utf-8")
    labelled = sha(sheet)
    capsys.readouterr()

    assert main(["sample", str(results_file), "--n", "5", "--seed", "1", "--out", str(lab), "--force"]) == 0

    copies = sorted(lab.glob("labels-sheet.*.jsonl"))
    assert len(copies) == 1 and sha(copies[0]) == labelled
    assert f"kept in {copies[0]}" in capsys.readouterr().out
    assert sha(sheet) != labelled  # the new sample


def test_an_unfilled_sheet_is_not_a_persons_work(results_file: Path, tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    sampled(results_file, lab, 5)
    assert main(["sample", str(results_file), "--n", "5", "--seed", "1", "--out", str(lab)]) == 0
    assert not list(lab.glob("labels-sheet.*.jsonl"))


# --------------------------------------------------------------------------- 2. no output is an input


def test_report_over_its_own_results_file_is_refused(
    results_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "link.html"
    link.symlink_to(results_file)
    before = checksums(tmp_path)
    for out in (results_file, link, tmp_path / "sub" / ".." / "r.json"):
        assert main(["report", str(results_file), "--out", str(out)]) == 2
        assert "is the input RESULTS" in capsys.readouterr().err
    assert main(["summary", str(results_file), "--out", str(results_file)]) == 2
    assert checksums(tmp_path) == before


def test_a_results_file_named_html_is_not_replaced_by_its_default_report(
    tmp_path: Path, results_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    named = tmp_path / "r.html"
    named.write_bytes(results_file.read_bytes())
    before = sha(named)
    assert main(["report", str(named)]) == 2
    assert sha(named) == before and "--out" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra",
    [
        ["--out", "s1.json"],
        ["--out", "merged.json", "--report", "s2.json"],
        ["--out", "merged.json", "--summary-md", "s2.json"],
        ["--out", "merged.json", "--report", "merged.json"],
        ["--out", "merged.json", "--baseline", "merged.json"],
        ["--out", "merged.json", "--summary-md", "thresholds.toml"],  # the file the shards recorded
    ],
)
def test_merge_refuses_an_output_that_is_an_input(
    shards: list[Path], tmp_path: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "merged.json").write_text("{}", encoding="utf-8")  # an existing --out / baseline
    before = checksums(tmp_path)
    args = [a if a.startswith("--") else str(tmp_path / a) for a in extra]

    assert main(["merge", *map(str, shards), *args]) == 2

    assert "nothing was written" in capsys.readouterr().err
    assert checksums(tmp_path) == before


def test_sample_refuses_to_write_its_sheet_over_its_results_file(
    results_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab = tmp_path / "lab"
    lab.mkdir()
    inside = lab / "labels-sheet.jsonl"
    inside.write_bytes(results_file.read_bytes())
    before = sha(inside)
    assert main(["sample", str(inside), "--out", str(lab)]) == 2
    assert sha(inside) == before and "is the input RESULTS" in capsys.readouterr().err


# --------------------------------------------------------------------------- 3. numbers mean what they say


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_forged_rate_in_a_shard_is_refused_with_its_json_path(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(shards[0].read_text(encoding="utf-8"))
    index = next(n for n, c in enumerate(data["cases"]) if "recall@5" in c["metrics"])
    data["cases"][index]["metrics"]["recall@5"] = 50.0
    _write(shards[0], data)
    out = _write(tmp_path / "merged.json", {"kept": True})
    before = checksums(tmp_path)

    assert main(["merge", *map(str, shards), "--out", str(out)]) == 2

    err = capsys.readouterr().err
    assert f"cases[{index}].metrics.recall@5: 50.0 is greater than the maximum of 1" in err
    assert checksums(tmp_path) == before


@pytest.mark.parametrize(
    "written, shown",
    [
        ("1" + "0" * 400, "1000000000"),  # 10**400: beyond float range
        ("1e400", "1e400"),
        ("1e308", "1e+308 is greater than the maximum of 1"),  # finite, but no rate
        ("NaN", "NaN"),
        ("-Infinity", "-Infinity"),
    ],
)
def test_numbers_beyond_float_range_or_not_finite_are_refused_as_written(
    shards: list[Path], tmp_path: Path, written: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = shards[0].read_text(encoding="utf-8")
    data = json.loads(text)
    index = next(n for n, c in enumerate(data["cases"]) if "recall@5" in c["metrics"])
    data["cases"][index]["metrics"]["recall@5"] = 0.123456789
    shards[0].write_text(json.dumps(data).replace("0.123456789", written), encoding="utf-8")
    out = _write(tmp_path / "merged.json", {"kept": True})
    before = checksums(tmp_path)

    for command in (["merge", *map(str, shards), "--out", str(out)], ["report", str(shards[0]), "--out", str(out)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"cases[{index}].metrics.recall@5: {shown}" in err and "null is not of types" not in err
    assert checksums(tmp_path) == before


def test_an_aggregate_that_disagrees_with_the_shards_own_cases_is_refused(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(shards[1].read_text(encoding="utf-8"))
    data["metrics"]["retrieval.recall@5"] = 0.99  # in range, but not what its cases give
    _write(shards[1], data)
    before = checksums(tmp_path)

    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "m.json")]) == 2

    err = capsys.readouterr().err
    assert f"{shards[1]}: metrics.retrieval.recall@5 is 0.99" in err and "the file was edited" in err
    assert checksums(tmp_path) == before


def test_an_edited_case_with_the_old_aggregates_is_refused(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(shards[1].read_text(encoding="utf-8"))
    edited = copy.deepcopy(data)
    case = next(c for c in edited["cases"] if c["outcome"] == "fail")
    case["outcome"] = "pass"  # a failing case turned into a pass by hand
    _write(shards[1], edited)

    assert main(["merge", *map(str, shards), "--out", str(tmp_path / "m.json")]) == 2

    err = capsys.readouterr().err
    assert f"{shards[1]}: metrics.{case['tier']}.pass_rate is" in err and "the file was edited" in err
    assert not (tmp_path / "m.json").exists()


def test_a_key_fact_verdict_of_another_type_is_no_verdict_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by tests/rag_eval/test_results_fuzz.py: a list as a key fact's verdict raised
    TypeError (unhashable) in the judge tier's labelled values when sampling."""
    data = make_results(8)
    judged = [c for c in data["cases"] if c["tier"] == "judge" and (c["details"].get("judge") or {}).get("key_facts")]
    assert judged  # the factory's judge cases carry key facts
    for case in judged:
        for fact in case["details"]["judge"]["key_facts"]:
            fact["verdict"] = []
    path = _write(tmp_path / "r.json", data)
    assert main(["sample", str(path), "--n", "3", "--out", str(tmp_path / "lab")]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_a_merged_aggregate_that_overflows_never_replaces_the_existing_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1e308 in a project tier's own metric (not a rate) is finite in each shard, but the
    merged mean overflows to inf: the writer refuses it before the rename (exit 2), the
    existing --out and its report stay byte for byte, the rejected file is kept beside it."""
    from tests.rag_eval.test_results_merge import as_written

    thresholds = tmp_path / "thresholds.toml"
    thresholds.write_text(THRESHOLDS, encoding="utf-8")
    shards = shard_files(thresholds)
    for shard in shards[1:]:  # one case of the project tier in shards 2 and 3 (ids of those shards)
        shard["cases"].append({**shard["cases"][0], "tier": "qlen", "metrics": {"chars": 1e308}})
    paths = [_write(tmp_path / f"s{n}.json", as_written(s)) for n, s in enumerate(shards, start=1)]
    out, report = _write(tmp_path / "m.json", {"kept": True}), _write(tmp_path / "m.html", {"kept": True})
    before = {p: sha(p) for p in (out, report, *paths)}

    with pytest.warns(RuntimeWarning, match="overflow"):
        assert main(["merge", *map(str, paths), "--out", str(out)]) == 2

    assert "metrics.qlen.chars: inf is not a finite number" in capsys.readouterr().err
    assert {p: sha(p) for p in before} == before
    assert (tmp_path / "m.invalid.json").is_file()
