"""rag_eval.pytest_plugin end to end: gates, the results file, xdist, selection.

Each test builds the sandbox project of ``_plugin_sandbox`` (8 documents, 7 answerable
items + 2 negatives) and runs pytest on it with pytester, offline (FakeEmbedder, no
reranker). Expected counts are written from the sandbox's constants.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.plugin.runner import HANDED_OVER
from tests.rag_eval._plugin_sandbox import (
    GOLDEN,
    HANDOVER_CHECK,
    HOLDOUT_IDS,
    IDS,
    NEGATIVE_IDS,
    POSITIVE_IDS,
    PYTEST_INI,
    Sandbox,
    make_sandbox,
    sha256_of,
)

N_ITEMS = len(IDS)  # 9
N_POS = len(POSITIVE_IDS)  # 7


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


# --------------------------------------------------------------------------- gates


def test_unreachable_gate_fails_the_run_although_every_case_passed(sandbox: Sandbox) -> None:
    # 100 cases can never be measured on a 9-item set: valid, and unreachable by design.
    sandbox.write_thresholds(
        """
[retrieval]
"doc.recall@5" = { min = 0.5, min_cases = 100 }
pass_rate = { min = 0.5 }
"""
    )
    result = sandbox.run("-m", "retrieval")

    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS)  # test_deterministic deselected
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*rag-eval gate*",
            f"retrieval: {N_ITEMS} pass*",
            f"FAIL retrieval.doc.recall@5 = ** (need >= 0.5; n={N_POS}) (only {N_POS} cases, the gate needs at least 100)",
            f"PASS retrieval.pass_rate = 1.0000* (need >= 0.5; n={N_ITEMS - 2})",  # negatives measured apart
            "gate: FAILED (1/2 gates passed)",
            f"results: {sandbox.results_path}",
        ]
    )
    results = sandbox.results()
    assert results["verdict"] == "fail"
    gate = next(g for g in results["gates"] if g["metric"] == "retrieval.doc.recall@5")
    assert (gate["passed"], gate["n"], gate["min_cases"]) == (False, N_POS, 100)
    assert {c["outcome"] for c in results["cases"]} == {"pass"}


def test_gate_on_a_metric_no_case_measured_fails(sandbox: Sandbox) -> None:
    # Doc-only gold has no chunk-level metrics: a chunk-level gate must fail, not pass vacuously.
    sandbox.write_thresholds('[retrieval]\n"recall@5" = { min = 0.8 }\n')
    result = sandbox.run("-m", "retrieval")

    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "FAIL retrieval.recall@5 = n/a* (need >= 0.8; n=0) (no cases measured*)",
            "gate: FAILED (0/1 gates passed)",
        ]
    )


def test_passing_gate_writes_the_results_file(sandbox: Sandbox) -> None:
    result = sandbox.run("-m", "retrieval")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS)
    result.stdout.fnmatch_lines(
        [
            f"PASS retrieval.doc.recall@5 = ** (need >= 0.5; n={N_POS})",
            f"PASS retrieval.bm25.doc.mrr = ** (need >= 0.1; n={N_POS})",
            f"PASS retrieval.pass_rate = 1.0000* (need >= 0.5; n={N_ITEMS - 2})",  # negatives measured apart
            f"PASS retrieval.error_rate = 0.0000* (need <= 0; n={N_ITEMS})",
            "gate: PASSED (4/4 gates passed)",
        ]
    )
    results = sandbox.results()
    assert results["version"] == 3
    assert results["verdict"] == "pass"

    run = results["run"]
    assert run["dataset"] == str(sandbox.dataset)
    assert run["golden_sha256"] == sha256_of(sandbox.golden_path)
    assert run["thresholds_sha256"] == sha256_of(sandbox.root / "thresholds.toml")
    assert (run["split"], run["tags"], run["workers"]) == ("all", [], 0)
    assert run["overrides"] == {"embedder": "fake", "reranker": "none", "cache_dir": str(sandbox.cache_dir)}
    assert run["system"]["embedder"] == "fake-hash-64" and run["system"]["reranker"] == "none"
    assert run["outcomes"] == {"retrieval": {"pass": N_ITEMS, "fail": 0, "error": 0, "skip": 0}}

    metrics = results["metrics"]
    # Doc-only gold: doc-level keys at every stage, no chunk-level keys at all.
    for key in (
        "retrieval.doc.recall@5",
        "retrieval.bm25.doc.mrr",
        "retrieval.vector.doc.ndcg@10",
        "retrieval.context.doc.hit@1",
    ):
        assert key in metrics, key
    for key in ("retrieval.recall@5", "retrieval.bm25.mrr"):
        assert key not in metrics, key
    assert metrics["retrieval.pass_rate"] == N_ITEMS / N_ITEMS
    assert metrics["retrieval.error_rate"] == 0 / N_ITEMS
    # Aggregates are means over the cases in the same file; negatives are measured apart.
    cases = sandbox.cases()
    positives = [cases[i] for i in POSITIVE_IDS]
    assert metrics["retrieval.doc.recall@5"] == pytest.approx(_mean([c["metrics"]["doc.recall@5"] for c in positives]))
    assert results["metrics_n"]["retrieval.doc.recall@5"]["n"] == N_POS
    assert results["metrics_n"]["retrieval.negative.empty_context"]["n"] == len(NEGATIVE_IDS)

    gates = {g["metric"]: g for g in results["gates"]}
    assert set(gates) == {
        "retrieval.doc.recall@5",
        "retrieval.bm25.doc.mrr",
        "retrieval.pass_rate",
        "retrieval.error_rate",
    }
    for g in gates.values():
        assert {"metric", "op", "threshold", "value", "n", "passed"} <= set(g)
        assert g["value"] == metrics[g["metric"]] and g["passed"] is True
    assert (gates["retrieval.error_rate"]["op"], gates["retrieval.error_rate"]["threshold"]) == ("max", 0.0)
    assert (gates["retrieval.pass_rate"]["op"], gates["retrieval.pass_rate"]["n"]) == (
        "min",
        N_ITEMS - 2,
    )  # negatives measured apart

    assert set(cases) == set(IDS)
    for case_id, c in cases.items():
        assert (c["tier"], c["outcome"], c["failed_stage"]) == ("retrieval", "pass", None), case_id
        assert c["negative"] is (case_id in NEGATIVE_IDS)


def test_full_run_records_both_tiers(sandbox: Sandbox) -> None:
    result = sandbox.run()

    result.assert_outcomes(passed=2 * N_ITEMS)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"deterministic: {N_ITEMS} pass", f"retrieval: {N_ITEMS} pass*"])
    results = sandbox.results()
    assert {(c["tier"], c["id"]) for c in results["cases"]} == {
        (t, i) for t in ("retrieval", "deterministic") for i in IDS
    }
    assert "deterministic.error_rate" in [g["metric"] for g in results["gates"]]
    assert any(k.startswith("deterministic.check.") for k in results["metrics"])


def test_chunk_level_gold_adds_chunk_level_metrics(sandbox: Sandbox) -> None:
    # Two items quote their evidence: those two are measured at chunk level too.
    quoted = {"q-set": ("set", "子集个数为2的n次方"), "q-prob": ("prob", "Independent events multiply")}
    items = []
    for item in GOLDEN:
        if item["id"] in quoted:
            doc, quote = quoted[item["id"]]
            item = {k: v for k, v in item.items() if k != "gold_doc_ids"} | {
                "evidence": [{"doc_id": doc, "quote": quote}]
            }
        items.append(item)
    sandbox.write_golden(items)
    sandbox.write_thresholds('[retrieval]\n"recall@5" = { min = 0.5, min_cases = 2 }\n')

    result = sandbox.run("-m", "retrieval")

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["PASS retrieval.recall@5 = ** (need >= 0.5; n=2)"])
    results = sandbox.results()
    assert results["metrics_n"]["retrieval.recall@5"]["n"] == len(quoted)
    assert results["metrics_n"]["retrieval.bm25.mrr"]["n"] == len(quoted)
    assert results["metrics_n"]["retrieval.doc.recall@5"]["n"] == N_POS
    assert "recall@5" in sandbox.cases()["q-set"]["metrics"]
    assert "recall@5" not in sandbox.cases()["q-func"]["metrics"]


# --------------------------------------------------------------------------- xdist


def _comparable(results: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on the number of workers (durations and run info may)."""
    cases = sorted(
        (c["tier"], c["id"], c["outcome"], c["failed_stage"], json.dumps(c["metrics"], sort_keys=True))
        for c in results["cases"]
    )
    return {
        "verdict": results["verdict"],
        "metrics": results["metrics"],
        "metrics_n": results["metrics_n"],
        "gates": results["gates"],
        "outcomes": results["run"]["outcomes"],
        "cases": cases,
    }


@pytest.mark.slow  # two fresh worker processes each import chromadb and load jieba (~3 s apiece)
def test_xdist_gives_exactly_the_serial_numbers(sandbox: Sandbox) -> None:
    # One gate passes, one cannot (min_cases): both verdicts must survive the worker hop.
    sandbox.write_thresholds(
        """
[retrieval]
"doc.mrr" = { min = 0.1 }
"bm25.doc.recall@5" = { min = 0.1, min_cases = 100 }
"""
    )
    serial = sandbox.run("-m", "retrieval", "--rag-results", "serial.json")
    parallel = sandbox.run("-m", "retrieval", "-n", "2", "--rag-results", "parallel.json")

    for result in (serial, parallel):
        assert result.ret == pytest.ExitCode.TESTS_FAILED  # the gate, not a case
        result.assert_outcomes(passed=N_ITEMS)
        result.stdout.fnmatch_lines(
            ["PASS retrieval.doc.mrr = *", "FAIL retrieval.bm25.doc.recall@5 = *", "gate: FAILED (1/2 gates passed)"]
        )
    a = json.loads((sandbox.root / "serial.json").read_text(encoding="utf-8"))
    b = json.loads((sandbox.root / "parallel.json").read_text(encoding="utf-8"))
    assert (a["run"]["workers"], b["run"]["workers"]) == (0, 2)
    assert _comparable(a) == _comparable(b)
    assert len(b["cases"]) == N_ITEMS


def test_a_serial_run_hands_each_case_over_in_process_equal_to_what_a_worker_sends(sandbox: Sandbox) -> None:
    """Serial: the case goes to the controller as it is (no JSON on the report); under xdist
    it rides as JSON. Both must give the controller the same case (the dialogue and judge
    tiers: test_pytest_plugin_dialogue.py and test_pytest_plugin_judge.py)."""
    sandbox.add_passk_tests()
    sandbox.write_conftest(HANDOVER_CHECK)
    sandbox.write_thresholds("")
    result = sandbox.run("--junitxml", "junit.xml")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    handed = sandbox.handed_over()
    keys = {f"{c['tier']}::{c['id']}" for c in sandbox.results()["cases"]}
    assert {k.split("::")[0] for k in keys} == {"retrieval", "deterministic", "passk"}
    assert set(handed) == keys and set(handed.values()) == {"same"}
    # what junitxml and other readers of the report see is the one-line stand-in
    junit = (sandbox.root / "junit.xml").read_text(encoding="utf-8")
    assert "(details in the results file)" in junit and HANDED_OVER not in junit


TWO_TIERS_IN_ONE_TEST = """
import pytest


@pytest.mark.retrieval
def test_two_tiers(golden_case, rag_eval):
    rag_eval.retrieval(golden_case)
    rag_eval.deterministic(golden_case)
"""


def test_a_test_that_runs_two_cases_records_both_serial_and_under_xdist(sandbox: Sandbox) -> None:
    (sandbox.root / "test_two.py").write_text(TWO_TIERS_IN_ONE_TEST, encoding="utf-8")
    sandbox.write_thresholds("")
    keys = []
    for workers in ((), ("-n", "2")):
        result = sandbox.run("test_two.py", *workers)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        keys.append(sorted(f"{c['tier']}::{c['id']}" for c in sandbox.results()["cases"]))
    assert keys[0] == keys[1] == sorted(f"{t}::{i}" for t in ("retrieval", "deterministic") for i in IDS)


@pytest.mark.slow
def test_under_xdist_run_system_says_the_controller_built_the_index(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sandbox_cache: Path
) -> None:
    """The controller builds the index before any case (its warm-up) and the workers load
    it: run.system reports the controller's build, not the workers' "loaded, 0 computed"."""
    box = make_sandbox(pytester, monkeypatch, tmp_path / "cold-cache")  # nothing built yet
    cold = box.run("-m", "retrieval", "-n", "2", "--rag-results", "cold.json")
    cold.assert_outcomes(passed=N_ITEMS)
    shown = cold.stdout.str() + cold.stderr.str()
    assert ": embedding" in shown and "chunk/s" in shown, shown[-2000:]  # the build's progress, on the controller
    built = json.loads((box.root / "cold.json").read_text(encoding="utf-8"))["run"]["system"]
    assert built["index_built"] == "True" and int(built["embeddings_computed"]) > 0, built
    warm = box.run("-m", "retrieval", "-n", "2", "--rag-results", "warm.json")
    warm.assert_outcomes(passed=N_ITEMS)
    loaded = json.loads((box.root / "warm.json").read_text(encoding="utf-8"))["run"]["system"]
    assert (loaded["index_built"], loaded["embeddings_computed"]) == ("False", "0"), loaded


# --------------------------------------------------------------------------- selection


def test_marker_selects_the_retrieval_tier_and_ids_are_golden_ids(sandbox: Sandbox) -> None:
    collected = sandbox.run("--collect-only", "-q", "-m", "retrieval")
    collected.stdout.fnmatch_lines([f"test_rag.py::test_retrieval[[]{i}]" for i in IDS])
    assert "test_deterministic" not in collected.stdout.str()
    assert not sandbox.results_path.exists()  # --collect-only neither gates nor writes

    result = sandbox.run("-m", "retrieval")
    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS)
    results = sandbox.results()
    assert {c["tier"] for c in results["cases"]} == {"retrieval"}
    assert len(results["cases"]) == N_ITEMS
    # Gates of a tier that did not run are not evaluated (they would fail on 0 cases).
    assert all(g["tier"] == "retrieval" for g in results["gates"])


def test_split_holdout_selects_holdout_items(sandbox: Sandbox) -> None:
    result = sandbox.run("-m", "retrieval", "--rag-split", "holdout")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=len(HOLDOUT_IDS), deselected=len(HOLDOUT_IDS))  # their deterministic cases
    results = sandbox.results()
    assert set(sandbox.cases()) == set(HOLDOUT_IDS)
    assert results["run"]["split"] == "holdout"


def test_tag_selects_matching_items(sandbox: Sandbox) -> None:
    collected = sandbox.run("--collect-only", "-q", "-m", "retrieval", "--rag-tag", "scenario=negative")
    collected.stdout.fnmatch_lines(
        [f"test_rag.py::test_retrieval[[]{i}]" for i in NEGATIVE_IDS] + [f"{len(NEGATIVE_IDS)}/*"]
    )
    assert not any(f"[{i}]" in collected.stdout.str() for i in POSITIVE_IDS)

    # Two tags must both match: English negatives only.
    result = sandbox.run("-m", "retrieval", "--rag-tag", "scenario=negative", "--rag-tag", "lang=en")
    result.assert_outcomes(passed=1, deselected=1)
    assert set(sandbox.cases()) == {"q-neg-en"}
    assert sandbox.results()["run"]["tags"] == ["scenario=negative", "lang=en"]


def test_tag_without_value_is_a_usage_error(sandbox: Sandbox) -> None:
    result = sandbox.run("--rag-tag", "negative")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rag-tag expects KEY=VALUE*got 'negative'"])


# --------------------------------------------------------------------------- pytest-json-report


def test_json_report_carries_the_case_results(sandbox: Sandbox) -> None:
    report_path: Path = sandbox.root / "report.json"
    result = sandbox.run("-m", "retrieval", "--json-report", f"--json-report-file={report_path}")

    assert result.ret == pytest.ExitCode.OK
    assert sandbox.results_path.is_file()  # our results file is still written alongside
    report = json.loads(report_path.read_text(encoding="utf-8"))
    tests = {t["nodeid"]: t for t in report["tests"]}
    assert len(tests) == N_ITEMS
    # pytest-json-report keeps user_properties (from the teardown report) as [{name: value}].
    case = json.loads(tests["test_rag.py::test_retrieval[q-set]"]["user_properties"][0]["rag_eval_case"])
    assert (case["id"], case["tier"], case["outcome"]) == ("q-set", "retrieval", "pass")
    assert case["metrics"]["doc.recall@5"] == sandbox.cases()["q-set"]["metrics"]["doc.recall@5"]


def test_stopping_early_with_x_keeps_the_computed_cases_marked_incomplete(sandbox: Sandbox) -> None:
    # an unreachable per-case floor makes the first case fail; -x stops the loop there
    sandbox.write_thresholds(
        """
[retrieval.case]
"doc.recall@5" = { min = 2.0 }
"""
    )
    result = sandbox.run("-m", "retrieval", "-x", "--rag-case-failures", "strict")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    results = sandbox.results()
    assert results["verdict"] == "incomplete" and results["run"]["complete"] is False
    assert len(results["cases"]) == 1 and results["cases"][0]["outcome"] == "fail"


def test_gate_mode_shows_failing_cases_as_xfail_and_lets_the_gates_decide(sandbox: Sandbox) -> None:
    sandbox.write_thresholds(
        """
[retrieval]
pass_rate = { min = 0.0 }

[retrieval.case]
"doc.recall@5" = { min = 2.0 }
"""
    )
    result = sandbox.run("-m", "retrieval", "-rx")
    result.assert_outcomes(xfailed=N_ITEMS - 2, passed=2, deselected=N_ITEMS)  # the 2 negatives have no floor
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["XFAIL *test_retrieval*doc.recall@5 = * < 2.0 (per-case threshold)*"])
    strict = sandbox.run("-m", "retrieval", "--rag-case-failures", "strict")
    strict.assert_outcomes(failed=N_ITEMS - 2, passed=2, deselected=N_ITEMS)
    assert strict.ret == pytest.ExitCode.TESTS_FAILED


def test_a_file_gating_only_judge_cannot_turn_an_erroring_deterministic_tier_green(sandbox: Sandbox) -> None:
    """Issue 26.8, the exact scenario: every deterministic case errors, the file gates only [judge]."""
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(
        "class Sut:\n"
        "    def retrieve(self, question, top_k=None):\n"
        "        return {'items': [{'id': 'set', 'metadata': {'doc_id': 'set'}}]}\n"
        "    def chat(self, question, top_k=None):\n"
        "        raise RuntimeError('generator down')\n",
        encoding="utf-8",
    )
    sandbox.write_thresholds("[judge]\nfaithfulness = { min = 0.5 }\n")

    result = sandbox.run("-m", "deterministic", "--rag-pipeline", "sandbox_sut:Sut")

    assert {c["outcome"] for c in sandbox.cases("deterministic").values()} == {"error"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            f'FAIL deterministic.error_rate = 1.0000* (need <= 0; n={N_ITEMS}, {N_ITEMS} errors) (built-in gate: *ungated = "pass"*',
            "rag-eval gate FAILED: 1 of 1 gates failed*",
        ]
    )
