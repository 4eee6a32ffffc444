"""The decision rules and the paired regression gates end to end (issue 22), on a user
Python system whose retrieval varies with a seed (RAG_TEST_SEED) or drops (RAG_TEST_MODE)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rag_eval.results.file import check_results
from tests.rag_eval._plugin_sandbox import GOLDEN, POSITIVE_IDS, PYTEST_INI, Sandbox

GOLD = {i["question"]: (i["gold_doc_ids"] or [""])[0] for i in GOLDEN}
SUT = f"""\
import os, random

GOLD = {json.dumps(GOLD, ensure_ascii=False)!s}
QUESTIONS = sorted(q for q, d in GOLD.items() if d)


class Sut:
    def retrieve(self, question, top_k=None):
        mode = os.environ.get("RAG_TEST_MODE", "noisy")
        lucky = set(random.Random(int(os.environ.get("RAG_TEST_SEED", "0"))).sample(QUESTIONS, 4))
        hit = mode == "all" or (mode == "noisy" and question in lucky)
        doc = GOLD[question] if hit and GOLD[question] else "log"
        return {{"items": [{{"id": doc, "metadata": {{"doc_id": doc}}}}]}}
"""
ARGS = ("-m", "retrieval", "--rag-pipeline", "sandbox_sut:Sut")


def noisy(sandbox: Sandbox) -> Sandbox:
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(SUT, encoding="utf-8")
    return sandbox


def test_a_noisy_system_passes_clearly_below_and_fails_estimate(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    noisy(sandbox)
    monkeypatch.setenv("RAG_TEST_SEED", "7")
    value = 4 / len(POSITIVE_IDS)  # 4 of 7 lucky: 0.571, Wilson 95 % about [0.25, 0.84]
    sandbox.write_thresholds('[retrieval]\n"doc.recall@5" = { min = 0.7 }\n')
    estimate = sandbox.run(*ARGS)
    assert estimate.ret == pytest.ExitCode.TESTS_FAILED, estimate.stdout.str()
    estimate.stdout.fnmatch_lines([f"FAIL retrieval.doc.recall@5 = {value:.4f} [[]0.25, 0.84] (need >= 0.7; n=7)*"])
    check_results(sandbox.results())

    sandbox.write_thresholds('[retrieval]\n"doc.recall@5" = { min = 0.7, decide = "clearly_below" }\n')
    lenient = sandbox.run(*ARGS)
    assert lenient.ret == pytest.ExitCode.OK, lenient.stdout.str()
    lenient.stdout.fnmatch_lines(
        [
            "PASS retrieval.doc.recall@5 = 0.5714 [[]0.25, 0.84] (need >= 0.7; n=7)"
            " — clearly_below: 0.57 [[]0.25, 0.84]: not clearly below 0.70 → pass"
        ]
    )
    (gate,) = [g for g in sandbox.results()["gates"] if g["key"] == "doc.recall@5"]
    assert gate["decide"] == "clearly_below" and gate["ci_method"] == "wilson" and gate["ci"][1] > 0.7
    check_results(sandbox.results())


def test_a_real_drop_is_caught_by_the_paired_test_against_the_baseline(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    noisy(sandbox)
    rules = (
        '[retrieval]\n"doc.recall@5" = { min = 0.0 }\n[regression]\nno_new_failures = { alpha = 0.05 }\n'
        '"retrieval.doc.recall@5" = { max_drop = 0.1, alpha = 0.05 }\n'
    )
    sandbox.write_thresholds(rules)
    monkeypatch.setenv("RAG_TEST_MODE", "all")
    assert sandbox.run(*ARGS).ret == pytest.ExitCode.OK
    baseline = tmp_path / "main.json"
    baseline.write_text(sandbox.results_path.read_text(encoding="utf-8"), encoding="utf-8")

    monkeypatch.setenv("RAG_TEST_MODE", "none")  # every positive loses its gold document
    dropped = sandbox.run(*ARGS, "--rag-baseline", str(baseline))
    assert dropped.ret == pytest.ExitCode.TESTS_FAILED, dropped.stdout.str()
    doc = sandbox.results()
    check_results(doc)
    rows = {g["metric"]: g for g in doc["gates"] if g["tier"] == "regression"}
    drop = rows["regression.max_drop retrieval.doc.recall@5"]
    assert not drop["passed"] and drop["test"] == "sign-flip" and drop["paired_n"] == len(POSITIVE_IDS)
    assert drop["p_value"] == 1 / 2 ** len(POSITIVE_IDS) and drop["diff"] == 1.0
    assert drop["holm"]["m"] == 2 and drop["one_sided"] == []
    nnf = rows["regression.no_new_failures"]
    assert nnf["test"] == "mcnemar-exact" and nnf["b"] >= len(POSITIVE_IDS) and nnf["c"] == 0
    dropped.stdout.fnmatch_lines(
        ["FAIL regression.max_drop retrieval.doc.recall@5 = 0.0000 *[[]sign-flip: drop 1.000*"]
    )


def test_the_same_seed_gives_the_same_interval(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    noisy(sandbox)
    monkeypatch.setenv("RAG_TEST_SEED", str(random.Random(3).randint(0, 99)))
    sandbox.write_thresholds('[retrieval]\n"doc.mrr" = { min = 0.0 }\n')
    sandbox.run(*ARGS)
    first = sandbox.results()["metrics_n"]["retrieval.doc.mrr"]
    sandbox.run(*ARGS)
    assert sandbox.results()["metrics_n"]["retrieval.doc.mrr"] == first and "confidence" in first


def test_holm_is_applied_across_three_tested_regression_gates(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Three significance-tested regression gates in one run: each row states Holm over m = 3,
    and the adjusted p-values are Holm's step-down of the three raw ones."""
    noisy(sandbox)
    sandbox.write_thresholds(
        '[retrieval]\n"doc.recall@5" = { min = 0.0 }\n[regression]\nno_new_failures = { alpha = 0.05 }\n'
        '"retrieval.doc.recall@5" = { max_drop = 0.1, alpha = 0.05 }\n"retrieval.doc.mrr" = { max_drop = 0.1, alpha = 0.05 }\n'
    )
    monkeypatch.setenv("RAG_TEST_MODE", "all")
    assert sandbox.run(*ARGS).ret == pytest.ExitCode.OK
    baseline = tmp_path / "main.json"
    baseline.write_text(sandbox.results_path.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("RAG_TEST_MODE", "noisy")
    monkeypatch.setenv("RAG_TEST_SEED", "7")  # 4 of the 7 positives keep their gold document
    sandbox.run(*ARGS, "--rag-baseline", str(baseline))
    doc = sandbox.results()
    check_results(doc)
    tested = [g for g in doc["gates"] if g["tier"] == "regression" and "p_value" in g]
    assert len(tested) == 3 and all(g["holm"]["m"] == 3 for g in tested)
    raw = sorted(g["p_value"] for g in tested)
    holm = sorted(g["holm"]["p_adjusted"] for g in tested)
    expected, running = [], 0.0
    for i, p in enumerate(raw):  # Holm's step-down: max over j <= i of (m - j) * p_(j), capped at 1
        running = max(running, min(1.0, (3 - i) * p))
        expected.append(running)
    assert holm == pytest.approx(expected)
