"""The end of a run in the plugin: HTML report, Markdown summary, --rag-baseline and the
[regression] gates (rag_eval.results.finalize), end to end on the sandbox project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.rag_eval._plugin_sandbox import IDS, PASSING_THRESHOLDS, Sandbox

N_ITEMS = len(IDS)


def _baseline_from(sandbox: Sandbox, name: str = "baseline.json") -> Path:
    """Run once, keep its results file as the baseline."""
    result = sandbox.run("-m", "retrieval")
    assert result.ret == 0
    path = sandbox.root / name
    path.write_text(sandbox.results_path.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def test_report_and_summary_are_written_and_named(sandbox: Sandbox) -> None:
    summary = sandbox.root / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    result = sandbox.run("-m", "retrieval", "--rag-summary-md", str(summary))
    assert result.ret == 0
    report = sandbox.root / "reports" / "eval-results.html"
    result.stdout.fnmatch_lines([f"results: {sandbox.results_path}", f"report: {report}", f"summary: {summary}"])
    html = report.read_text(encoding="utf-8")
    assert "q-set" in html and "<script src=" not in html
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n<!-- rag-eval-summary -->")  # appended, as GITHUB_STEP_SUMMARY wants
    assert "retrieval.pass\\_rate" in text  # Markdown-escaped


def test_no_report_and_custom_report_path(sandbox: Sandbox) -> None:
    assert sandbox.run("-m", "retrieval", "--rag-no-report").ret == 0
    assert not (sandbox.root / "reports" / "eval-results.html").exists()
    custom = sandbox.root / "out" / "r.html"
    result = sandbox.run("-m", "retrieval", "--rag-report", str(custom))
    assert result.ret == 0 and custom.is_file()


def test_baseline_without_changes_passes_and_lists_no_transitions(sandbox: Sandbox) -> None:
    sandbox.write_thresholds(
        PASSING_THRESHOLDS + '\n[regression]\nno_new_failures = true\n"retrieval.doc.recall@5" = { max_drop = 0.0 }\n'
    )
    baseline = _baseline_from(sandbox)
    result = sandbox.run("-m", "retrieval", "--rag-baseline", str(baseline))
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "PASS regression.no_new_failures = 0 *",
            "PASS regression.max_drop retrieval.doc.recall@5 = *",
            f"baseline: {baseline} (*): 0 pass→fail, 0 fail→pass, 0 stable→flaky, 0 new, 0 removed",
        ]
    )
    data = sandbox.results()
    assert data["baseline"]["path"] == str(baseline)
    assert {g["tier"] for g in data["gates"]} == {"retrieval", "regression"}


def test_a_case_that_passed_on_the_baseline_and_fails_now_fails_the_build(sandbox: Sandbox) -> None:
    sandbox.write_thresholds(PASSING_THRESHOLDS + "\n[regression]\nno_new_failures = true\n")
    baseline = _baseline_from(sandbox)  # every case passes
    # The same dataset under a per-case floor no case can meet (doc precision@5 = 1 with a
    # single gold doc): the cases that passed on the baseline fail now.
    sandbox.write_thresholds(
        PASSING_THRESHOLDS.replace("pass_rate = { min = 0.5 }", "pass_rate = { min = 0.0 }")
        + '\n[retrieval.case]\n"doc.precision@5" = { min = 1.0 }\n\n[regression]\nno_new_failures = true\n'
    )
    result = sandbox.run("-m", "retrieval", "--rag-baseline", str(baseline))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAIL regression.no_new_failures = *", "*newly failing: retrieval::*", "gate: FAILED*"]
    )
    failing = {c["id"] for c in sandbox.results()["cases"] if c["outcome"] == "fail"}
    assert failing
    transitions = sandbox.results()["baseline"]["transitions"]
    assert {t["id"] for t in transitions["pass_to_fail"]} == failing
    assert all(t["was"] == "pass" and t["now"] == "fail" for t in transitions["pass_to_fail"])


def test_baseline_of_another_dataset_is_refused_at_start(sandbox: Sandbox) -> None:
    baseline = _baseline_from(sandbox)
    data = json.loads(baseline.read_text(encoding="utf-8"))
    data["run"]["dataset_fingerprint"] = "0000000000000000"
    baseline.write_text(json.dumps(data), encoding="utf-8")
    sandbox.results_path.unlink()
    result = sandbox.run("-m", "retrieval", "--rag-baseline", str(baseline))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--rag-baseline: the baseline was measured on another dataset: fingerprint 0000000000000000*"]
    )
    assert not sandbox.results_path.exists()  # refused before running anything


def test_baseline_mismatch_warn_runs_without_the_comparison_and_says_so(sandbox: Sandbox) -> None:
    baseline = _baseline_from(sandbox)
    data = json.loads(baseline.read_text(encoding="utf-8"))
    data["run"]["dataset_fingerprint"] = "0000000000000000"
    baseline.write_text(json.dumps(data), encoding="utf-8")
    result = sandbox.run("-m", "retrieval", "--rag-baseline", str(baseline), "--rag-baseline-mismatch", "warn")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"WARNING: baseline {baseline} not compared: *another dataset*"])
    out = sandbox.results()
    assert "baseline" not in out and "another dataset" in out["run"]["baseline_refused"]


def test_missing_baseline_file_is_a_usage_error(sandbox: Sandbox) -> None:
    result = sandbox.run("-m", "retrieval", "--rag-baseline", "nope.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nope.json: baseline results file not found*"])


def test_a_failing_report_keeps_the_results_and_fails_the_run(sandbox: Sandbox) -> None:
    blocker = sandbox.root / "blocked"
    blocker.write_text("a file, not a folder", encoding="utf-8")
    result = sandbox.run("-m", "retrieval", "--rag-report", str(blocker / "r.html"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: HTML report * not written: *"])
    assert len(sandbox.cases()) == N_ITEMS  # nothing computed was lost


def test_outputs_equal_under_xdist(sandbox: Sandbox) -> None:
    baseline = _baseline_from(sandbox)
    result = sandbox.run("-m", "retrieval", "-n", "2", "--rag-baseline", str(baseline))
    assert result.ret == 0
    assert sandbox.results()["baseline"]["transitions"]["pass_to_fail"] == []
    assert (sandbox.root / "reports" / "eval-results.html").is_file()


def test_junitxml_has_every_case_and_the_failed_gates(sandbox: Sandbox) -> None:
    import xml.etree.ElementTree as ET

    sandbox.write_thresholds('[retrieval]\n"doc.recall@5" = { min = 0.5, min_cases = 100 }\n')
    junit = sandbox.root / "junit.xml"
    result = sandbox.run("-m", "retrieval", "--junitxml", str(junit))
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # every case passed, the gate did not
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    cases = [tc for tc in suite.iter("testcase") if tc.get("classname") != "rag-eval gate"]
    assert {tc.get("name") for tc in cases} == {f"test_retrieval[{i}]" for i in IDS}
    # and one testcase per gate, failing for the failed one (issue 20.5)
    gates = {
        tc.get("name"): tc.find("failure") for tc in suite.iter("testcase") if tc.get("classname") == "rag-eval gate"
    }
    assert set(gates) == {"retrieval.doc.recall@5"} and gates["retrieval.doc.recall@5"] is not None
    assert int(suite.get("failures", "0")) == 1
    # Each test carries a one-line stand-in of its case, not the case itself (kilobytes).
    for tc in cases:
        (case,) = [p.get("value") for p in tc.iter("property") if p.get("name") == "rag_eval_case"]
        assert case.startswith("retrieval::q-") and ": pass" in case and len(case) < 120
    props = {p.get("name"): p.get("value") for p in suite.find("properties").iter("property")}  # type: ignore[union-attr]
    assert props["rag_eval_verdict"] == "fail"
    assert props["rag_eval_failed_gate retrieval.doc.recall@5"].endswith("(threshold 0.5, n=7)")


def test_a_results_file_another_run_wrote_meanwhile_is_warned_about(sandbox: Sandbox) -> None:
    """Issue 26.15: two runs writing one --rag-results; the last writer no longer wins silently."""
    sandbox.write_conftest(
        "from pathlib import Path\n\n\n"
        "def pytest_runtest_teardown(item):  # another run finishes while this one is going\n"
        "    path = Path('reports/eval-results.json')\n"
        "    path.parent.mkdir(exist_ok=True)\n"
        "    path.write_text('{\"another\": \"run\"}', encoding='utf-8')\n"
    )
    result = sandbox.run("-m", "retrieval")

    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            f"WARNING: {sandbox.results_path} was written by another run at *, while this one ran; "
            "it is replaced by this run's results (give each run its own --rag-results PATH)"
        ]
    )
    assert sandbox.results()["verdict"] == "pass"
    sandbox.write_conftest()  # the same path again, nobody else writing
    rerun = sandbox.run("-m", "retrieval")
    assert rerun.ret == 0 and "written by another run" not in rerun.stdout.str()


def test_an_output_that_is_an_input_stops_the_run_before_anything_is_written(sandbox: Sandbox) -> None:
    baseline = _baseline_from(sandbox)
    kept = baseline.read_bytes()
    for option, path in (
        ("--rag-results", baseline),
        ("--rag-report", baseline),
        ("--rag-summary-md", sandbox.golden_path),
    ):
        golden = sandbox.golden_path.read_bytes()
        result = sandbox.run("-m", "retrieval", "--rag-baseline", str(baseline), option, str(path))
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "of the same command: it would be overwritten" in result.stderr.str()
        assert baseline.read_bytes() == kept and sandbox.golden_path.read_bytes() == golden


def test_a_corpus_file_linked_from_outside_the_dataset_is_refused_unless_allowed(sandbox: Sandbox) -> None:
    outside = sandbox.root / "elsewhere.jsonl"
    corpus = sandbox.dataset / "corpus.jsonl"
    corpus.rename(outside)
    corpus.symlink_to(outside)
    result = sandbox.run("-m", "retrieval")
    assert result.ret != 0
    assert "outside the dataset folder" in result.stdout.str() + result.stderr.str()
    assert sandbox.run("-m", "retrieval", "--rag-allow-outside-dataset").ret == 0
