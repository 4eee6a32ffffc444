"""The judge's claim-level blame through a whole pytest run (issue 24).

A scripted system (python adapter, stages dense → fused) decides what reached the
context; a scripted judge server decides the claim-level checks. Five cases:

* ``q-lost``: the key fact's chunk was in dense (rank 2) but fusion dropped it → the
  retriever's, at the stage that lost it;
* ``q-gen``: the fact's chunk is context chunk [1], the answer leaves it out → the generator's;
* ``q-noise``: a wrong claim rests on chunk [2], which entails no key fact → noise (irrelevant);
* ``q-hall``: a wrong claim in no chunk → hallucination;
* ``q-unk``: the judge cannot decide whether the reference entails a claim → ``unknown``,
  counted, and the case is not failed for it.

Per-case limits: coverage at least 1, hallucination and NS(irrelevant) at most 0 (a
ceiling: lower is better).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rag_eval.results.file import schema_problems
from tests.rag_eval._plugin_sandbox import CORPUS, PYTEST_INI, Sandbox
from tests.support.judge_replies import blocks
from tests.support.openai_server import Reply, ScriptedOpenAIServer, reply

TEXT = {d["doc_id"]: d["text"] for d in CORPUS}
# question → (context the generator saw, ranked ids per stage)
PLAN: dict[str, tuple[list[str], dict[str, list[str]]]] = {
    "What is the derivative of x squared?": (["prob"], {"dense": ["prob", "deriv"], "fused": ["prob"]}),
    "What does the dot product of two vectors equal?": (["vec"], {"dense": ["vec"], "fused": ["vec"]}),
    "What is the probability of independent events?": (
        ["prob", "log"],
        {"dense": ["prob", "log"], "fused": ["prob", "log"]},
    ),
    "What is the logarithm of a product?": (["log"], {"dense": ["log"], "fused": ["log"]}),
    "正弦函数的最小正周期是多少？": (["trig"], {"dense": ["trig"], "fused": ["trig"]}),
}
SUT = f"""
TEXT = {TEXT!r}
PLAN = {PLAN!r}


def _items(ids):
    return [{{"id": i, "text": TEXT[i], "score": 1.0, "metadata": {{"doc_id": i}}}} for i in ids]


class Sut:
    stages = ["dense", "fused"]

    def retrieve(self, question, top_k=None):
        _, stages = PLAN[question]
        return {{"items": _items(stages["fused"]), "stages": {{k: _items(v) for k, v in stages.items()}}}}

    def chat(self, question, top_k=None, history=()):
        context, _ = PLAN[question]
        return {{"answer": "An answer [1].", "context": _items(context), "retrieval": self.retrieve(question)}}
"""


def _item(cid: str, question: str, doc: str, fact: str) -> dict[str, Any]:
    return {
        "id": cid,
        "question": question,
        "gold_doc_ids": [doc],
        "split": "tune",
        "tags": {"lang": "en"},
        "key_facts": [{"fact": fact, "source": {"chunk_id": doc}}],
    }


GOLDEN = [
    _item("q-lost", "What is the derivative of x squared?", "deriv", "the derivative of x squared is two x"),
    _item("q-gen", "What does the dot product of two vectors equal?", "vec", "lengths times the cosine"),
    _item("q-noise", "What is the probability of independent events?", "prob", "independent events multiply"),
    _item("q-hall", "What is the logarithm of a product?", "log", "the sum of the logarithms"),
    _item("q-unk", "正弦函数的最小正周期是多少？", "trig", "最小正周期是 2π"),
]
RIGHT = {"claim": "a right claim", "verdict": "yes", "chunks": [1], "reference": "yes", "reason": "in [1]"}
WRONG_ON_2 = "Independent events add their probabilities <b>always</b>"
WRONG_NOWHERE = "The logarithm of a product is its square"


def _fact(verdict: str, chunks: list[int]) -> dict[str, Any]:
    return {
        "index": 1,
        "fact": "f",
        "verdict": verdict,
        "context": "yes" if chunks else "no",
        "chunks": chunks,
        "reason": "r",
    }


# question → (claims, the key fact)
VERDICTS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "What is the derivative of x squared?": ([RIGHT], _fact("not_covered", [])),
    "What does the dot product of two vectors equal?": ([RIGHT], _fact("not_covered", [1])),
    "What is the probability of independent events?": (
        [RIGHT, {"claim": WRONG_ON_2, "verdict": "yes", "chunks": [2], "reference": "no", "reason": "in [2]"}],
        _fact("covered", [1]),
    ),
    "What is the logarithm of a product?": (
        [RIGHT, {"claim": WRONG_NOWHERE, "verdict": "no", "chunks": [], "reference": "no", "reason": "nowhere"}],
        _fact("covered", [1]),
    ),
    "正弦函数的最小正周期是多少？": (
        [RIGHT, {"claim": "周期与振幅有关", "verdict": "yes", "chunks": [1], "reference": "unknown", "reason": "?"}],
        _fact("covered", [1]),
    ),
}


def scripted_judge(request: Any) -> Reply:
    b = blocks(request)
    question = b["QUESTION"].strip()
    claims, fact = VERDICTS[question]
    verdict = {
        "claims": claims,
        "key_facts": [fact],
        "relevance": {"verdict": "relevant", "reason": "ok"},
        "citations": [{"marker": 1, "sentence": "An answer [1].", "supported": True, "reason": "ok"}],
    }
    return reply(json.dumps(verdict, ensure_ascii=False), prompt_tokens=100, completion_tokens=50)


THRESHOLDS = """
[judge]
error_rate = { max = 0.0 }

[judge.case]
coverage = 1.0
hallucination = { max = 0.0 }
noise_sensitivity_irrelevant = { max = 0.0 }
"""


@pytest.fixture
def run(sandbox: Sandbox, openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-test")
    openai_server.set_default("chat", scripted_judge)
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(SUT, encoding="utf-8")
    sandbox.add_judge_tests()
    sandbox.write_golden(GOLDEN)
    sandbox.write_thresholds(THRESHOLDS)
    result = sandbox.run("-m", "judge", "--rag-pipeline", "sandbox_sut:Sut", "--rag-summary-md", "summary.md")
    results = sandbox.results()
    assert results["cases"], result.stdout.str()
    return {"result": result, "results": results, "cases": sandbox.cases("judge"), "root": sandbox.root}


def test_each_fault_is_blamed_on_its_side_in_chain_order(run: dict[str, Any]) -> None:
    cases = run["cases"]
    assert {k: c["outcome"] for k, c in cases.items()} == {
        "q-lost": "fail",
        "q-gen": "fail",
        "q-noise": "fail",
        "q-hall": "fail",
        "q-unk": "pass",
    }
    assert cases["q-lost"]["details"]["blame"] == ["retriever: key fact 1 was in dense rank 2 but not in fused"]
    assert cases["q-lost"]["details"]["blame_side"] == "retriever"
    assert cases["q-gen"]["details"]["blame"] == ["generator: key fact 1 is in chunk [1] but not in the answer"]
    assert cases["q-gen"]["details"]["blame_side"] == "generator"
    assert cases["q-noise"]["details"]["blame"] == [
        f'noise: claim "{WRONG_ON_2}" is wrong and rests on chunk [2] (irrelevant)'
    ]
    assert cases["q-hall"]["details"]["blame"] == [
        f'hallucination: claim "{WRONG_NOWHERE}" is in no chunk and not in the reference'
    ]
    assert cases["q-hall"]["details"]["blame_side"] == "generator"
    assert cases["q-unk"]["details"]["blame"] == ["unknown: 1 claim and 0 key facts could not be decided"]
    assert cases["q-unk"]["details"]["blame_side"] is None
    # the lower-is-better per-case limits fail above the limit, with the direction said
    assert "noise_sensitivity_irrelevant = 0.500 > 0.0" in cases["q-noise"]["message"]
    assert "hallucination = 0.500 > 0.0" in cases["q-hall"]["message"]


def test_the_metrics_equal_hand_arithmetic(run: dict[str, Any]) -> None:
    m = {k: c["metrics"] for k, c in run["cases"].items()}
    # q-noise: claims (right on [1], wrong on [2]); chunk 2 entails no key fact → irrelevant
    assert m["q-noise"]["answer_precision"] == 1 / 2 and m["q-noise"]["answer_recall"] == 1.0
    assert m["q-noise"]["answer_f1"] == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert m["q-noise"]["context_precision"] == 1 / 2  # rel = (yes, no)
    assert m["q-noise"]["noise_sensitivity_irrelevant"] == 1 / 2
    assert m["q-noise"]["noise_sensitivity_relevant"] == 0.0
    assert m["q-noise"]["hallucination"] == 0.0
    # q-hall: the wrong claim rests on no chunk and is not in the reference
    assert m["q-hall"]["hallucination"] == 1 / 2 and m["q-hall"]["context_faithfulness"] == 1 / 2
    assert m["q-hall"]["self_knowledge"] == 0.0
    # q-lost: the fact is in no chunk: claim recall 0, utilization undefined (absent, not 0)
    assert m["q-lost"]["claim_recall"] == 0.0 and "context_utilization" not in m["q-lost"]
    # q-gen: the fact reached the context, the answer left it out
    assert m["q-gen"]["claim_recall"] == 1.0 and m["q-gen"]["context_utilization"] == 0.0
    # q-unk: a_2 unknown → precision over the one decided claim
    assert m["q-unk"]["answer_precision"] == 1.0
    pooled = run["results"]["metrics"]
    assert pooled["judge.hallucination"] == pytest.approx((0 + 0 + 0 + 0.5 + 0) / 5)


def test_the_run_gives_the_shares_and_counts_unknowns(run: dict[str, Any]) -> None:
    results = run["results"]
    assert schema_problems(results) == []
    block = results["run"]["judge_blame"]
    assert block["diagnosed"] == 5 and block["failing"] == 4
    assert block["counts"] == {"retriever": 1, "generator": 3, "both": 0, "unexplained": 0}
    assert block["shares"] == {"retriever": 0.25, "generator": 0.75, "both": 0.0, "unexplained": 0.0}
    assert block["second_calls"] == 0
    assert (block["unknown_claims"], block["unknown_facts"]) == (1, 0)
    line = (
        "judge blame: 4 failing of 5 diagnosed — retriever 1 (25%), generator 3 (75%), both 0 (0%), "
        "unexplained 0 (0%); 0 second calls for claims; 1 claim and 0 key facts undecided"
    )
    run["result"].stdout.fnmatch_lines([line])
    summary = (run["root"] / "summary.md").read_text(encoding="utf-8")
    assert "### Judge: whose fault" in summary and "retriever 1 (25%), generator 3 (75%)" in summary


def test_the_report_carries_the_blame_lines_as_text(run: dict[str, Any]) -> None:
    html = next(run["root"].rglob("*.html")).read_text(encoding="utf-8")
    assert 'id="judge-blame"' in html and "generator 3 (75%)" in html
    assert "<b>always</b>" not in html  # model text is escaped in the page's data
    assert re.search(r"is wrong and rests on chunk \[2\] \(irrelevant\)", html)
