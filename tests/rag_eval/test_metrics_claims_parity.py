"""Parity with RAGChecker: its shipped checking results reproduce its README table.

tests/data/ragchecker/checking_outputs.json is RAGChecker's examples/checking_outputs.json
(Apache-2.0, see the NOTICE next to it): two cases with the four entailment checks
already made, so no model is needed. RAGChecker reports each metric as the mean over
cases, times 100, rounded to one decimal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.metrics.claims import RAGCHECKER_NAMES, ClaimChecks, case_metrics, pooled

DATA = Path(__file__).resolve().parents[1] / "data" / "ragchecker" / "checking_outputs.json"

# RAGChecker's README ("RAGResults(2 RAG results, Metrics: ...)"), in percent.
README = {
    "precision": 76.4,
    "recall": 62.5,
    "f1": 68.3,
    "claim_recall": 61.4,
    "context_precision": 87.5,
    "context_utilization": 87.5,
    "noise_sensitivity_in_relevant": 19.1,
    "noise_sensitivity_in_irrelevant": 0.0,
    "hallucination": 4.5,
    "self_knowledge": 27.3,
    "faithfulness": 68.2,
}


def entailed(label: str) -> bool:
    # RAGChecker's checker labels: only "Entailment" counts; Neutral and Contradiction do not.
    return label == "Entailment"


def checks_of(result: dict[str, Any]) -> ClaimChecks:
    n_chunks = len(result["retrieved_context"])
    return ClaimChecks(
        answer_in_reference=tuple(entailed(x) for x in result["answer2response"]),
        reference_in_answer=tuple(entailed(x) for x in result["response2answer"]),
        answer_in_chunks=tuple(tuple(entailed(x) for x in row) for row in result["retrieved2response"]),
        reference_in_chunks=tuple(tuple(entailed(x) for x in row) for row in result["retrieved2answer"]),
        n_chunks=n_chunks,
    )


@pytest.fixture(scope="module")
def results() -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return list(data["results"])


def test_every_readme_number_is_reproduced_to_one_decimal(results: list[dict[str, Any]]) -> None:
    mean = pooled([case_metrics(checks_of(r)) for r in results])
    assert len(results) == 2 and set(RAGCHECKER_NAMES.values()) == set(README)
    for ours, theirs in RAGCHECKER_NAMES.items():
        assert round(mean[ours] * 100, 1) == pytest.approx(README[theirs], abs=0.05), ours


def test_each_case_matches_the_metrics_ragchecker_stored_with_it(results: list[dict[str, Any]]) -> None:
    for r in results:
        ours = case_metrics(checks_of(r))
        for key, theirs in RAGCHECKER_NAMES.items():
            assert ours[key] == pytest.approx(r["metrics"][theirs]), (r["query_id"], key)
