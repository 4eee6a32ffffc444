"""Evidence review end to end: a user system ranks a non-gold chunk that holds the answer
first; ``python -m rag_eval evidence`` lists it; marked equivalent on the review page (a
real Chromium) and accepted, the next run counts the case as a hit at rank 1, the item's
review history names the decision, and the decision is not asked again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag_eval.cli import main
from rag_eval.golden.load import load_golden_set
from tests.rag_eval._plugin_sandbox import PYTEST_INI, Sandbox
from tests.rag_eval.test_outputs_browser import browser, page  # noqa: F401  (fixtures)

A_TEXT = "等差数列的通项公式是 a_n = a_1 + (n-1)d，其中 d 是公差。"
B_TEXT = "第二册也写了：等差数列第 n 项等于首项加上 n-1 个公差，即 a_n = a_1 + (n-1)d。"
SUT = f"""
A = {{"id": "a#1", "text": {A_TEXT!r}, "metadata": {{"doc_id": "a"}}}}
B = {{"id": "b#1", "text": {B_TEXT!r}, "metadata": {{"doc_id": "b"}}}}


class Sut:
    def retrieve(self, question, top_k=None):
        return {{"items": [B, A]}}  # the other book's chunk first, the gold one second

    def chat(self, question, top_k=None, history=()):
        return {{"answer": "a_n = a_1 + (n-1)d [1]", "sources": [B], "context": [B, A]}}
"""


def test_equivalent_evidence_becomes_an_alternative_and_the_next_run_counts_a_hit(
    sandbox: Sandbox,
    page: Any,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sut.py").write_text(SUT, encoding="utf-8")
    (sandbox.root / "sut.toml").write_text('pipeline = "sut:Sut"\ngold = "text"\n', encoding="utf-8")
    sandbox.write_corpus([{"doc_id": "a", "text": "第一册。" + A_TEXT}, {"doc_id": "b", "text": "第二册。" + B_TEXT}])
    item = {"id": "q-seq", "question": "等差数列的通项公式是什么？", "split": "tune",
            "evidence": [{"doc_id": "a", "quote": "a_n = a_1 + (n-1)d，其中 d 是公差"}]}  # fmt: skip
    sandbox.write_golden([item])
    sandbox.write_thresholds("[retrieval]\nerror_rate = { max = 0.0 }\n")
    run = ("-m", "retrieval or deterministic", "--rag-pipeline-config", "sut.toml")

    first = sandbox.run(*run)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    first.stdout.fnmatch_lines(
        ["evidence: 1 non-gold chunk(s) ranked above gold or in context await review (0 already*"]
    )
    pending = json.loads(sandbox.results_path.read_text(encoding="utf-8"))["run"]["evidence_pending"]
    assert (pending["count"], pending["decided"]) == (1, 0)  # the report's header line (outputs/header.py)
    assert pending["command"] == f"python -m rag_eval evidence {sandbox.results_path}"
    before = sandbox.cases("retrieval")["q-seq"]
    assert before["metrics"]["hit@1"] == 0.0 and before["metrics"]["mrr"] == 1 / 2  # gold at rank 2
    results = sandbox.root / "reports" / "run-1.json"
    sandbox.results_path.rename(results)

    out = sandbox.root / "evidence"
    assert main(["evidence", str(results), "--out", str(out)]) == 0
    assert "1 evidence candidate(s) await review (0 already decided" in capsys.readouterr().out
    (candidate,) = [json.loads(line) for line in (out / "evidence-candidates.jsonl").read_text("utf-8").splitlines()]
    assert (candidate["case"], candidate["chunk_id"], candidate["doc_id"], candidate["quote"]) == (
        "q-seq",
        "b#1",
        "b",
        B_TEXT,
    )
    # one candidate for the retrieval case's rank and the deterministic case's context
    assert candidate["why"] == ["in the deterministic context as [1]", "rank 1 in final (gold first at rank 2)"]

    page.goto((out / "evidence-review.html").as_uri())
    assert page.locator("section.item").count() == 1
    section = page.locator(f'section.item[data-id="{candidate["key"]}"]')
    assert B_TEXT in section.inner_text()
    section.locator('button[data-decision="equivalent"]').click()
    section.locator("input.reason").fill("第二册的同一公式")
    page.fill("#reviewer", "王老师")
    with page.expect_download() as info:
        page.locator("#export").click()
    decisions = sandbox.root / "evidence-decisions.jsonl"
    info.value.save_as(decisions)

    assert main(["accept", str(decisions), "--into", str(sandbox.golden_path), "--dataset", str(sandbox.dataset)]) == 0
    assert "0 item(s) added, 1 updated" in capsys.readouterr().out
    (updated,) = load_golden_set(sandbox.golden_path)
    assert [r.to_dict() for r in updated.evidence[0].any_of] == [
        {"doc_id": "a", "quote": "a_n = a_1 + (n-1)d，其中 d 是公差"},
        {"doc_id": "b", "quote": B_TEXT},  # a quoted span: it survives re-chunking
    ]
    (entry,) = updated.extra["review"]
    assert (entry["decision"], entry["reviewer"], entry["reason"], entry["key"]) == (
        "equivalent", "王老师", "第二册的同一公式", candidate["key"]
    )  # fmt: skip

    second = sandbox.run(*run)
    assert second.ret == pytest.ExitCode.OK, second.stdout.str()
    assert "await review" not in second.stdout.str()  # the one candidate is gold now
    after = sandbox.cases("retrieval")["q-seq"]
    assert after["metrics"]["hit@1"] == 1.0 and after["metrics"]["mrr"] == 1.0

    # the decision is not asked again: the old run's candidate is decided, the new run has none
    assert main(["evidence", str(results), str(sandbox.results_path), "--out", str(out)]) == 0
    assert "0 evidence candidate(s) await review (1 already decided" in capsys.readouterr().out
