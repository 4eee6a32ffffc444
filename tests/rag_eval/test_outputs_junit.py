"""The junit format's failed-gate properties round a threshold as the terminal's gate line
does (issue 40, part 2, item 5: `threshold 0.9059259259259259` was printed unrounded)."""

from __future__ import annotations

import dataclasses

from rag_eval.gates.result import GateResult
from rag_eval.outputs import writers
from tests.rag_eval._results_factory import make_results
from tests.rag_eval._typed import typed


def test_a_failed_regression_gates_threshold_is_rounded_as_its_line() -> None:
    baseline = 0.9259259259259259  # 25/27
    gate = GateResult(
        "regression", "regression.retrieval.recall@5", "regression", "retrieval.recall@5", "min",
        baseline - 0.02, 0.8, 27, 0, False, "fell", (), baseline=baseline, max_drop=0.02,
    )  # fmt: skip
    results = dataclasses.replace(typed(make_results(4)), gates=(gate,), verdict="fail")
    parts = writers.get("junit").render(results, writers.Context())
    assert ("rag_eval_failed_gate regression.retrieval.recall@5", "0.8000 (threshold 0.9059, n=27)") in parts.properties
    assert "need >= 0.9059" in dict(parts.testcases)["regression.retrieval.recall@5"]
