"""Human labels through pytest (docs/human-labels.md): --rag-human-labels is read at
start-up (a bad file stops the run with file:line before any case), the labels report is
in the results file (schema-valid), the terminal, the HTML report and the Markdown
summary, labels that meet no judged case are listed and left out, and a gate with
``estimate = "ppi"`` decides on the corrected value.

The scripted judge is right on 90 % of 200 cases and every mistake goes one way; 60 of
the cases carry a human label (the truth). The labelled and unlabelled cases hold the
same shares, so the hand arithmetic is exact: judge-only mean 0.8 (upward-biased judge)
against a true 0.7, and PPI++ recovers 0.7 whatever λ it picks (module ``_world``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rag_eval.results.file import SCHEMA_PATH
from tests.rag_eval._plugin_sandbox import CORPUS, Sandbox
from tests.support.judge_replies import blocks, native_verdict
from tests.support.openai_server import Reply, ScriptedOpenAIServer, reply

N_CASES, N_LABELLED = 200, 60
Z95 = 1.959963984540054
_ID = re.compile(r"\bc-(\d{3})\b")


def _world(upward: bool) -> tuple[list[int], list[int]]:
    """(truth, judge) per case index: 30 % of the labelled and of the unlabelled cases are
    the minority value; a third of those (10 % of all cases) the judge gets wrong.

    upward: truth 1 on 70 %, the judge says 1 on 80 %; else (the two swapped) truth 1 on 80 %, judge 70 %."""
    truth, judge = [], []
    for size in (N_LABELLED, N_CASES - N_LABELLED):
        minority, wrong = size * 3 // 10, size // 10
        for j in range(size):
            is_minority = j < minority
            t = 0 if is_minority else 1
            y = t if j >= wrong else 1 - t  # the first `wrong` minority cases: judged the majority way
            truth.append(t)
            judge.append(y)
    return (truth, judge) if upward else (judge, truth)  # swapped: the judge now misses 10 % of the supported


def _golden() -> list[dict[str, Any]]:
    docs = list(CORPUS)
    return [
        {
            "id": f"c-{i:03d}",
            "question": f"c-{i:03d}: what does {docs[i % len(docs)]['title']} say?",
            "gold_doc_ids": [docs[i % len(docs)]["doc_id"]],
            "split": "tune",
        }
        for i in range(N_CASES)
    ]


def _judge(judged: list[int]) -> Any:
    def answer(request: Any) -> Reply:
        match = _ID.search(blocks(request).get("QUESTION", ""))
        assert match, "the judge prompt names the case"
        verdict = native_verdict(request, "yes" if judged[int(match.group(1))] else "no")
        for claim in verdict["claims"]:  # both claims the same way: faithfulness is 1 or 0 (binary)
            claim["verdict"], claim["chunks"] = verdict["claims"][0]["verdict"], verdict["claims"][0]["chunks"]
        return reply(json.dumps(verdict), prompt_tokens=10, completion_tokens=10)

    return answer


def _labels_file(path: Path, truth: list[int]) -> Path:
    rows = [
        {"case": f"c-{i:03d}", "metric": "judge.faithfulness", "label": "yes" if truth[i] else "no", "annotator": "ann"}
        for i in range(N_LABELLED)
    ]
    rows.append({"case": "c-999", "metric": "judge.faithfulness", "label": 1, "annotator": "ann"})  # not in the run
    rows.append({"case": "c-000", "metric": "dialogue.hint_success", "label": True, "annotator": "ann"})  # not judged
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def sandbox(sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    sandbox.add_judge_tests()
    sandbox.write_golden(_golden())
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-test")
    return sandbox


def _run(sandbox: Sandbox, server: ScriptedOpenAIServer, tmp_path: Path, upward: bool) -> pytest.RunResult:
    truth, judged = _world(upward)
    server.set_default("chat", _judge(judged))
    sandbox.write_thresholds('[judge]\nfaithfulness = { min = 0.75, estimate = "ppi" }\n')
    labels = _labels_file(tmp_path / "labels.jsonl", truth)
    return sandbox.run(
        "-m",
        "judge",
        "-q",
        "--rag-human-labels",
        str(labels),
        "--rag-judge-cache",
        str(tmp_path / "cache"),
        "--rag-summary-md",
        str(tmp_path / "summary.md"),
    )


def _kappa(h: list[int], j: list[int]) -> float:
    n = len(h)
    po = sum(a == b for a, b in zip(h, j)) / n
    pe = (sum(h) / n) * (sum(j) / n) + (1 - sum(h) / n) * (1 - sum(j) / n)
    return (po - pe) / (1 - pe)


def test_an_upward_biased_judge_is_caught_by_the_ppi_gate(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    result = _run(sandbox, openai_server, tmp_path, upward=True)
    results = sandbox.results()
    jsonschema.validate(results, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    truth, judged = _world(True)
    assert sum(judged) / N_CASES == pytest.approx(0.8) and sum(truth) / N_CASES == pytest.approx(0.7)
    assert sum(t != j for t, j in zip(truth, judged)) == N_CASES // 10  # right on 90 %
    assert results["metrics"]["judge.faithfulness"] == pytest.approx(0.8)  # a judge-only gate at 0.75 would pass

    (row,) = results["labels"]["metrics"]
    h, j = truth[:N_LABELLED], judged[:N_LABELLED]
    assert (row["metric"], row["kind"], row["n_labelled"], row["n_judged"]) == ("judge.faithfulness", "binary", 60, 200)
    assert row["accuracy"] == pytest.approx(54 / 60)
    assert row["kappa"] == pytest.approx(_kappa(h, j)) and row["kappa"] == pytest.approx((0.9 - 0.62) / 0.38)
    assert row["bias"] == pytest.approx(0.1)  # mean(judge − human) = 0.8 − 0.7
    assert row["judge_only"]["estimate"] == pytest.approx(0.8)
    assert row["labels_only"]["estimate"] == pytest.approx(0.7)
    # by hand (docs/human-labels.md): labels-only SE = √(Var(Y)/n), Var with ddof 0 as ppi_py
    assert row["labels_only"]["se"] == pytest.approx(math.sqrt(0.7 * 0.3 / 60), rel=1e-9)
    assert row["labels_only"]["low"] == pytest.approx(0.7 - Z95 * math.sqrt(0.7 * 0.3 / 60), rel=1e-6)
    # λ̂ = Cov(Y, Ŷ) / ((1 + n/N)·Var(Ŷ)): Cov = 0.7 − 0.7·0.8 over the labelled cases, Var over all 200 (ddof 1)
    lam = 0.14 / ((1 + 60 / 140) * (0.16 * 200 / 199))
    assert row["lam"] == pytest.approx(lam, rel=1e-9)
    # rectifier Y − λŶ: 42 cases 1 − λ, 6 cases −λ, 12 cases 0 (mean 0.7 − 0.8λ)
    rect = [1 - lam] * 42 + [-lam] * 6 + [0.0] * 12
    mean_r = sum(rect) / 60
    var_r = sum((r - mean_r) ** 2 for r in rect) / 60
    assert row["ppi"]["estimate"] == pytest.approx(lam * 0.8 + mean_r, rel=1e-9) and row["ppi"][
        "estimate"
    ] == pytest.approx(0.7)
    assert row["ppi"]["se"] == pytest.approx(math.sqrt(lam**2 * 0.16 / 140 + var_r / 60), rel=1e-9)
    for key in ("judge_only", "labels_only", "ppi"):
        assert row[key]["low"] < row[key]["estimate"] < row[key]["high"]
    assert row["ppi"]["high"] - row["ppi"]["low"] < row["labels_only"]["high"] - row["labels_only"]["low"]
    left = {(x["case"], x["metric"]) for x in results["labels"]["left_out"]}
    assert left == {("c-999", "judge.faithfulness"), ("c-000", "dialogue.hint_success")}

    (gate,) = [g for g in results["gates"] if g["key"] == "faithfulness"]
    assert gate["metric"] == "judge.faithfulness (ppi estimate)"
    assert not gate["passed"] and gate["value"] == pytest.approx(0.7) and gate["n"] == 60
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "human labels: 1 labelled metric(s), 95% intervals",
            "  judge.faithfulness: 60 of 200 judged, agreement 0.90 accuracy, κ 0.74, bias +0.10; judge-only 0.80 [[]*[]], "
            "labels-only 0.70 [[]*[]], PPI++ 0.70 [[]*[]] (λ *)",
            "  2 label(s) left out (not used):",
            "*labels.jsonl:61: c-999 · judge.faithfulness: case not judged in this run*",
        ]
    )
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert (
        "### Judge vs human labels (95% intervals)" in summary
        and "| `judge.faithfulness` | 60 of 200 judged |" in summary
    )
    html = sandbox.results_path.with_suffix(".html").read_text(encoding="utf-8")
    assert '<section id="labels">' in html and "c-999" in html


def test_a_downward_biased_judge_passes_the_ppi_gate_its_own_mean_fails(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    result = _run(sandbox, openai_server, tmp_path, upward=False)
    results = sandbox.results()
    assert results["metrics"]["judge.faithfulness"] == pytest.approx(0.7)  # a judge-only gate at 0.75 would fail
    (gate,) = [g for g in results["gates"] if g["key"] == "faithfulness"]
    assert gate["passed"] and gate["value"] == pytest.approx(0.8)
    assert results["labels"]["metrics"][0]["bias"] == pytest.approx(-0.1)
    assert result.ret == pytest.ExitCode.OK


def test_a_malformed_labels_file_stops_the_run_before_any_case(
    sandbox: Sandbox, openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    bad = tmp_path / "labels.jsonl"
    bad.write_text(
        '{"case": "c-000", "metric": "judge.faithfulness", "label": "yes", "annotator": "ann"}\n'
        '{"case": "c-001", "metric": "judge.faithfulness", "label": "maybe", "annotator": "ann"}\n',
        encoding="utf-8",
    )
    result = sandbox.run("-m", "judge", "--rag-human-labels", str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rag-human-labels: *labels.jsonl:2*'maybe' is not a verdict*"])
    assert openai_server.calls("chat") == 0
    assert not sandbox.results_path.exists()
