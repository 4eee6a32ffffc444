"""The sample command: seeded, stratified as asked, and its sheet loads once filled in."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rag_eval.cli import main
from rag_eval.labels.load import LabelsError, load_labels
from rag_eval.labels.sample import SampleError, allocate, questions, sample_cases
from tests.rag_eval._results_factory import XSS, make_results


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return make_results(60)


def _judged(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in results["cases"] if c["tier"] == "judge" and c["outcome"] in ("pass", "fail")]


def test_same_seed_same_sample_and_another_seed_another(results: dict[str, Any]) -> None:
    first = [c.id for c in sample_cases(results, 10, seed=3)]
    assert first == [c.id for c in sample_cases(results, 10, seed=3)]
    assert len(set(first)) == 10 and set(first) <= {c["id"] for c in _judged(results)}
    assert first != [c.id for c in sample_cases(results, 10, seed=4)]


def test_more_than_there_are_gives_every_judged_case_and_no_error_case(results: dict[str, Any]) -> None:
    sample = sample_cases(results, 10_000)
    assert sorted(c.id for c in sample) == sorted(c["id"] for c in _judged(results))
    assert all(
        c["outcome"] != "error" for c in results["cases"] if c["tier"] == "judge" and c["id"] in {s.id for s in sample}
    )


def test_allocation_is_proportional_by_largest_remainder() -> None:
    # quotas 3, 1.5, .5 → 3, 1, 0 and one left: b and c tie at .5, b comes first by name
    assert allocate({"a": 6, "b": 3, "c": 1}, 5) == {"a": 3, "b": 2}
    assert allocate({"a": 2, "b": 1}, 5) == {"a": 2, "b": 1}


def test_stratify_by_tag_samples_each_value_in_proportion(results: dict[str, Any]) -> None:
    sizes = Counter(f"difficulty:{c['tags']['difficulty']}" for c in _judged(results))
    sample = sample_cases(results, 12, seed=1, stratify="tag:difficulty")
    got = Counter(c.stratum for c in sample)
    assert got == Counter(allocate(dict(sizes), 12)) and sum(got.values()) == 12
    assert all(
        next(r for r in _judged(results) if r["id"] == c.id)["tags"]["difficulty"] == c.stratum.split(":")[1]
        for c in sample
    )


def test_stratify_by_verdict_samples_pass_and_fail_in_proportion(results: dict[str, Any]) -> None:
    sizes = Counter(c["outcome"] for c in _judged(results))
    assert set(sizes) == {"pass", "fail"}
    sample = sample_cases(results, 9, seed=2, stratify="verdict")
    assert Counter(c.stratum for c in sample) == Counter(allocate(dict(sizes), 9))


def test_bad_options_are_refused_with_the_fix(results: dict[str, Any]) -> None:
    with pytest.raises(SampleError, match="write tag:KEY"):
        sample_cases(results, 5, stratify="difficulty")
    with pytest.raises(SampleError, match="at least 1 case"):
        sample_cases(results, 0)
    with pytest.raises(SampleError, match="--metric judge.nope"):
        sample_cases(results, 5, metrics=["judge.nope"])


def test_sample_command_writes_a_sheet_the_loader_reads_once_filled(
    results: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "lab"
    assert (
        main(["sample", str(path), "--n", "5", "--seed", "7", "--out", str(out), "--metric", "judge.faithfulness"]) == 0
    )
    printed = capsys.readouterr().out
    assert "sampled 5 case(s) (seed 7)" in printed and str(out / "labelling.html") in printed
    sheet = out / "labels-sheet.jsonl"
    lines = [json.loads(line) for line in sheet.read_text(encoding="utf-8").splitlines()]
    assert [x["case"] for x in lines] == [
        c.id for c in sample_cases(results, 5, seed=7, metrics=["judge.faithfulness"])
    ]
    assert {x["metric"] for x in lines} == {"judge.faithfulness"}
    with pytest.raises(LabelsError, match=r"labels-sheet.jsonl:1 .*label is empty"):
        load_labels(sheet)  # unfilled: each line says what to fill in
    filled = [{**x, "label": "yes", "annotator": "li"} for x in lines]
    sheet.write_text("".join(json.dumps(x) + "\n" for x in filled), encoding="utf-8")
    assert [lb.case for lb in load_labels(sheet)] == [x["case"] for x in lines]


def test_the_page_carries_model_text_only_escaped(results: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    assert main(["sample", str(path), "--n", "1000", "--out", str(tmp_path / "lab")]) == 0
    html = (tmp_path / "lab" / "labelling.html").read_text(encoding="utf-8")
    assert XSS in json.dumps(results)  # the fixture has it in an answer and a chunk
    assert XSS not in html and "</script><img" not in html
    assert "http://" not in html and "https://" not in html  # nothing loads from a network
    assert all(q.question in html for q in questions().values() if "hint" not in q.question)


def test_a_results_file_without_judged_cases_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = make_results(3)
    results["cases"] = [c for c in results["cases"] if c["tier"] != "judge"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    assert main(["sample", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "no judged case to label" in capsys.readouterr().err


def test_strata_from_tag_values_are_escaped_in_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = make_results(6)
    for case in results["cases"]:
        case["tags"]["topic"] = "\x1b[2J函数\x1b]8;;http://x\x07"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    assert main(["sample", str(path), "--stratify", "tag:topic", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "函数" in out


def test_an_out_dir_that_cannot_be_written_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(make_results(6)), encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert main(["sample", str(path), "--out", str(blocker / "lab")]) == 2
    assert f"cannot write --out {blocker / 'lab'}" in capsys.readouterr().err
