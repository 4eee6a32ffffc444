"""Baseline: a results file is refused unless it is a complete run on the same dataset,
and the comparison names every case that changed (by tier::id) and every gate's delta."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.results.baseline import BaselineError, check_compatible, compare, load_baseline
from tests.rag_eval._results import FINGERPRINT, case, results


def write(tmp_path: Path, doc: Any, name: str = "base.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(BaselineError) as info:
        load_baseline(path)
    message = str(info.value)
    assert message.startswith(str(path)), message  # every load error names the file
    return message


# --------------------------------------------------------------------------- load


def test_a_complete_results_file_loads(tmp_path: Path) -> None:
    doc = results([case("a"), case("b", "fail")])
    assert load_baseline(write(tmp_path, doc)) == json.loads(json.dumps(doc))


def test_missing_file_names_the_fix(tmp_path: Path) -> None:
    msg = error_of(tmp_path / "nope.json")
    assert "baseline results file not found" in msg and "or run without --rag-baseline" in msg


def test_not_json(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "{not json"))
    assert "not a JSON results file" in msg and "--rag-results" in msg


@pytest.mark.parametrize("doc", [{"version": 2}, {"cases": []}, {"version": 2, "cases": {}}])
def test_not_a_results_file(tmp_path: Path, doc: Any) -> None:
    assert "not a rag-eval results file (no 'version' and 'cases')" in error_of(write(tmp_path, doc))


def test_a_json_list_is_not_a_results_file(tmp_path: Path) -> None:
    assert "not a results file (a JSON list, expected an object)" in error_of(write(tmp_path, [1, 2]))


@pytest.mark.parametrize(
    "version, said",
    [
        (99, "results file version 99 is newer than this rag_eval"),
        (1, "results file version 1, this rag_eval reads version 3"),
    ],
)
def test_another_version(tmp_path: Path, version: int, said: str) -> None:
    doc = {**results([case("a")]), "version": version}
    msg = error_of(write(tmp_path, doc))
    assert said in msg and "regenerate the baseline on main" in msg


def test_an_incomplete_run_is_no_baseline(tmp_path: Path) -> None:
    doc = {**results([case("a")], complete=False), "verdict": "incomplete"}
    msg = error_of(write(tmp_path, doc))
    assert "verdict 'incomplete': a partial run is no baseline" in msg
    assert "regenerate the baseline on main" in msg


def test_a_shard_is_no_baseline_and_the_fix_is_merging(tmp_path: Path) -> None:
    doc = {**results([case("a")]), "verdict": "shard"}
    msg = error_of(write(tmp_path, doc))
    assert "verdict 'shard': a partial run is no baseline" in msg
    assert "python -m rag_eval merge" in msg


# --------------------------------------------------------------------------- compatibility


def test_same_fingerprint_is_compatible() -> None:
    check_compatible(results([case("a")])["run"], results([case("b")]))


def test_another_dataset_is_refused_naming_both_sides() -> None:
    base = results([case("a")], dataset="/main/golden_sets/demo", golden_sha256="b" * 64)
    ours = results(
        [case("a")], dataset_fingerprint="ffffffffffffffff", dataset="/pr/golden_sets/demo", golden_sha256="c" * 64
    )
    with pytest.raises(BaselineError) as info:
        check_compatible(ours["run"], base)
    msg = str(info.value)
    for part in (FINGERPRINT, "ffffffffffffffff", "/main/golden_sets/demo", "/pr/golden_sets/demo", "b" * 64, "c" * 64):
        assert part in msg
    assert "regenerate the baseline on main" in msg and "run without --rag-baseline" in msg


def test_a_baseline_without_fingerprint_is_refused() -> None:
    base = results([case("a")])
    del base["run"]["dataset_fingerprint"]
    with pytest.raises(BaselineError, match="the baseline has no run.dataset_fingerprint.*run without --rag-baseline"):
        check_compatible(results([case("a")])["run"], base)


def test_another_split_or_tag_selection_is_refused() -> None:
    base = results([case("a")])
    with pytest.raises(BaselineError, match=r"the baseline ran --rag-split 'all' but this run --rag-split 'holdout'"):
        check_compatible(results([case("a")], split="holdout")["run"], base)
    with pytest.raises(BaselineError, match=r"--rag-tag \[\] but this run --rag-tag \['scenario=negative'\]"):
        check_compatible(results([case("a")], tags=["scenario=negative"])["run"], base)


def test_tag_order_and_a_run_dict_without_selection_keys_are_fine() -> None:
    base = results([case("a")], tags=["b=2", "a=1"])
    check_compatible({**results([case("a")])["run"], "tags": ["a=1", "b=2"]}, base)
    check_compatible({"dataset_fingerprint": FINGERPRINT}, base)  # before the run: only the fingerprint


# --------------------------------------------------------------------------- compare


def test_compare_has_exactly_the_documented_shape() -> None:
    base = results([case("a"), case("b"), case("c", "fail")], commit="abc123")
    now = results([case("a"), case("b", "fail"), case("c", "fail")])
    out = compare(now, base, "baseline/eval-results.json")
    assert set(out) == {"path", "commit", "time", "dataset_fingerprint", "gates", "transitions", "tiers", "recall"}
    # the baseline's recall@k aggregates, for the report's dashed curves (recall@5: 2 of 3 cases found it)
    assert out["recall"] == {"retrieval.recall@5": 2 / 3}
    assert (out["path"], out["commit"], out["time"], out["dataset_fingerprint"]) == (
        "baseline/eval-results.json",
        "abc123",
        "2026-11-30T02:43:01+00:00",
        FINGERPRINT,
    )
    assert set(out["transitions"]) == {"pass_to_fail", "fail_to_pass", "stable_to_flaky", "new", "removed"}
    recall = out["gates"][0]
    assert set(recall) == {"metric", "value", "baseline", "delta", "n", "baseline_n"}
    assert recall["metric"] == "retrieval.recall@5"
    assert recall["value"] == pytest.approx(1 / 3)
    assert recall["baseline"] == pytest.approx(2 / 3)
    assert recall["delta"] == pytest.approx(1 / 3 - 2 / 3)
    assert (recall["n"], recall["baseline_n"]) == (3, 3)
    assert json.loads(json.dumps(out)) == out  # JSON primitives


def test_gate_rows_follow_the_current_gates_and_match_by_label() -> None:
    thresholds = {
        "retrieval": {"pass_rate": 0.1},
        "tag": {"scenario=x": {"retrieval": {"pass_rate": 0.1}}},
    }
    base = results([case("a", tags={"scenario": "x"}), case("b")], thresholds=thresholds)
    now = results([case("a", "fail", tags={"scenario": "x"}), case("b")], thresholds=thresholds)
    rows = {r["metric"]: r for r in compare(now, base, "b.json")["gates"]}
    assert list(rows) == ["retrieval.pass_rate", "retrieval.pass_rate [scenario=x]"]
    assert (rows["retrieval.pass_rate"]["baseline"], rows["retrieval.pass_rate"]["value"]) == (1.0, 0.5)
    tagged = rows["retrieval.pass_rate [scenario=x]"]
    assert (tagged["baseline"], tagged["value"], tagged["delta"], tagged["n"], tagged["baseline_n"]) == (
        1.0,
        0.0,
        -1.0,
        1,
        1,
    )


def test_a_gate_the_baseline_lacks_falls_back_to_its_metrics_then_to_none() -> None:
    base = results([case("a"), case("b", "fail")], thresholds={})  # no gates at all
    now = results(
        [case("a"), case("b")],
        thresholds={"retrieval": {"recall@5": 0.5, "mrr": 0.5}, "tag": {"k=v": {"retrieval": {"pass_rate": 0.5}}}},
    )
    rows = {r["metric"]: r for r in compare(now, base, "b.json")["gates"]}
    assert (rows["retrieval.recall@5"]["baseline"], rows["retrieval.recall@5"]["baseline_n"]) == (0.5, 2)
    assert rows["retrieval.mrr"]["baseline"] is None and rows["retrieval.mrr"]["delta"] is None
    assert rows["retrieval.mrr"]["baseline_n"] == 0
    assert rows["retrieval.pass_rate [k=v]"]["baseline"] is None


def test_regression_gate_rows_are_not_compared_again() -> None:
    base = results([case("a")])
    now = results([case("a")])
    now["gates"].append(
        {"metric": "regression.no_new_failures", "tier": "regression", "key": "no_new_failures", "value": 0.0, "n": 1}
    )
    assert [r["metric"] for r in compare(now, base, "b.json")["gates"]] == ["retrieval.recall@5", "retrieval.pass_rate"]


def test_a_tier_run_only_on_one_side_is_a_selection_difference_not_removed_cases() -> None:
    from rag_eval.results.baseline import compare

    def of(tiers: tuple[str, ...]) -> dict[str, Any]:
        return results([case(f"q{i}", tier=t) for t in tiers for i in range(3)])

    diff = compare(of(("retrieval", "judge")), of(("retrieval", "passk")), "b.json")
    assert diff["transitions"]["removed"] == [] and diff["transitions"]["new"] == []
    assert diff["tiers"] == {"only_baseline": {"passk": 3}, "only_now": {"judge": 3}}


# --------------------------------------------------------------------------- --rag-baseline-mismatch


def test_an_older_results_version_is_refused_or_with_warn_not_compared(tmp_path: Path) -> None:
    """The first run of a release that changes the results format, against main's older file."""
    from rag_eval.results.finalize import Baseline

    now = results([case("a")])
    path = write(tmp_path, {**results([case("a")]), "version": 1})
    with pytest.raises(BaselineError, match="results file version 1, this rag_eval reads version 3"):
        Baseline.load(path, now["run"], "error")
    kept = Baseline.load(path, now["run"], "warn")
    assert kept.data is None and kept.refused is not None
    assert kept.refused.startswith(f"baseline {path} not compared: {path}: results file version 1")


def test_an_unreadable_baseline_is_an_error_even_with_warn(tmp_path: Path) -> None:
    from rag_eval.results.finalize import Baseline

    doc = results([case("a")])
    del doc["metrics"]
    with pytest.raises(BaselineError, match='"metrics" is a required property'):
        Baseline.load(write(tmp_path, doc), results([case("a")])["run"], "warn")
