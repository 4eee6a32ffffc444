"""RunResults: the results file typed, built once by ``finalize.conclude`` (baseline and
verdict are inputs, nothing patches it afterwards), and read back from a file unchanged:
``from_dict(to_dict(r)) == r`` for every tier's results, and the report and the summary
render from a file read back exactly as from the run that wrote it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters.gold import GoldSpace
from rag_eval.dialogue.replay import replay
from rag_eval.gates.gate import evaluate_gates, run_gates
from rag_eval.gates.thresholds import parse_thresholds
from rag_eval.outputs.html import render_html
from rag_eval.outputs.markdown import render_markdown
from rag_eval.outputs.write import write_outputs
from rag_eval.results.file import check_results, load_results
from rag_eval.results.finalize import Baseline, Outputs, conclude
from rag_eval.results.merge import DERIVED_RUN_FIELDS
from rag_eval.results.model import RunResults
from rag_eval.tiers.dialogue.case import GoldCheck, dialogue_case
from rag_eval.util.redact import Redactor
from tests.rag_eval._dialogue_systems import Leaker, demo_items
from tests.rag_eval._results import case, results
from tests.rag_eval._results_factory import make_results, with_baseline


def dialogue_results() -> dict[str, Any]:
    items = demo_items()
    system, space = Leaker(items), GoldSpace("ids")
    cases = [dialogue_case(i, replay(system, i), limit=3, check=GoldCheck(space, i)) for i in items]
    thresholds = parse_thresholds({"dialogue": {"final_leak_rate": {"max": 0.0}, "pass_rate": {"min": 1.0}}}, "t.toml")
    gates = evaluate_gates(thresholds, cases, {"dialogue"})
    run = {k: v for k, v in make_results(1)["run"].items() if k not in DERIVED_RUN_FIELDS}  # a valid run block
    return conclude(run, cases, gates, thresholds, None).results.to_dict()


FILES = {
    "retrieval, deterministic, judge, passk": lambda: make_results(30),
    "the same with a baseline diff": lambda: with_baseline(make_results(30)),
    "dialogue": dialogue_results,
}


@pytest.mark.parametrize("make", FILES.values(), ids=list(FILES))
def test_a_results_dict_round_trips_through_the_typed_results(make: Any) -> None:
    d = make()
    check_results(d, "results")  # what from_dict may assume
    typed = RunResults.from_dict(d)
    assert typed.to_dict() == d
    assert list(typed.to_dict()) == list(d)  # the file's key order too
    assert RunResults.from_dict(typed.to_dict()) == typed
    assert {c.tier for c in typed.cases} == {c["tier"] for c in d["cases"]}


def test_a_file_read_back_writes_the_same_json_text(tmp_path: Path) -> None:
    d = with_baseline(make_results(12))
    text = json.dumps(d, ensure_ascii=False)
    assert json.dumps(RunResults.from_dict(json.loads(text)).to_dict(), ensure_ascii=False) == text


def test_conclude_takes_the_baseline_and_decides_the_verdict_before_building(tmp_path: Path) -> None:
    t = parse_thresholds({"retrieval": {"pass_rate": {"min": 0.0}}, "regression": {"no_new_failures": True}}, "t.toml")
    base = results([case("a"), case("b")])
    now = [case("a"), case("b", "fail")]
    gates = run_gates(t, now)
    done = conclude({"dataset_fingerprint": "fp"}, now, gates, t, Baseline(tmp_path / "base.json", base))
    r = done.results
    assert [(g.kind, g.metric, g.passed) for g in r.gates] == [
        ("tier", "retrieval.pass_rate", True),
        ("regression", "regression.no_new_failures", False),
    ]
    assert r.verdict == "fail" and not done.passed and done.comparison.gates == r.gates[1:]
    assert r.baseline is not None and [row["key"] for row in r.baseline["transitions"]["pass_to_fail"]] == [
        "retrieval::b"
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.verdict = "pass"  # type: ignore[misc]


def test_a_refused_baseline_is_said_in_the_run_and_compares_nothing(tmp_path: Path) -> None:
    now = [case("a")]
    refused = Baseline(tmp_path / "base.json", None, "baseline base.json not compared: another dataset")
    r = conclude({}, now, run_gates(None, now), None, refused).results
    assert r.baseline is None and r.run["baseline_refused"] == refused.refused and r.verdict == "pass"


@pytest.mark.parametrize(("complete", "sharded", "word"), [(False, False, "incomplete"), (True, True, "shard")])
def test_incomplete_and_shard_runs_are_not_compared(tmp_path: Path, complete: bool, sharded: bool, word: str) -> None:
    t = parse_thresholds({"regression": {"no_new_failures": True}}, "t.toml")
    base = results([case("a")])
    done = conclude(
        {}, [case("a", "fail")], [], t, Baseline(tmp_path / "b.json", base), complete=complete, sharded=sharded
    )
    assert done.results.verdict == word and done.results.baseline is None and done.comparison.gates == ()
    assert done.passed is complete


def test_the_report_and_summary_render_from_a_file_read_back(tmp_path: Path) -> None:
    typed = RunResults.from_dict(with_baseline(make_results(30)))
    outputs = Outputs(tmp_path / "r.json", tmp_path / "r.html", tmp_path / "summary.md", redactor=Redactor())
    written = write_outputs(typed, outputs)
    assert written.problems == ()
    back = RunResults.from_dict(load_results(written.results))
    assert back == typed
    assert render_html(back) == (tmp_path / "r.html").read_text(encoding="utf-8")
    summary = render_markdown(back)
    assert summary.rstrip("\n") == (tmp_path / "summary.md").read_text(encoding="utf-8").rstrip("\n")
