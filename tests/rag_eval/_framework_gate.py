"""The gate over a framework object, through pytest (pytester): a sandbox holding
``fwsys.py`` (tests/rag_eval/_framework_systems.py), a golden set whose gold is chunk
ids, and a run that returns the results file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SYSTEMS = Path(__file__).with_name("_framework_systems.py")
GOLDEN: tuple[dict[str, Any], ...] = (
    {"id": "q1", "question": "how many subsets does a set with n elements have", "evidence": [{"chunk_id": "sets#0"}]},
    {"id": "q2", "question": "what is the derivative of x squared", "evidence": [{"chunk_id": "derivatives#0"}]},
    {"id": "q3", "question": "what is the period of the sine function", "evidence": [{"chunk_id": "trigonometry#0"}]},
    {"id": "q4", "question": "what is the logarithm of a product", "evidence": [{"chunk_id": "logarithms#0"}]},
    {"id": "q5", "question": "what does an arithmetic sequence add", "evidence": [{"chunk_id": "sequences#0"}]},
    {"id": "q6", "question": "what does the dot product of two vectors use", "evidence": [{"chunk_id": "vectors#0"}]},
)
TYPO = {"id": "q7", "question": "what does a derivative measure", "evidence": [{"chunk_id": "derivatives#9"}]}


def sandbox(pytester: pytest.Pytester, golden: tuple[dict[str, Any], ...] = GOLDEN) -> pytest.Pytester:
    pytester.makepyfile(fwsys=SYSTEMS.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\npythonpath = .\n")
    (pytester.path / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden), encoding="utf-8")
    return pytester


def gate(pytester: pytest.Pytester, factory: str, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """One retrieval run of ``fwsys:<factory>``: the pytest result and the results file."""
    out = pytester.path / "reports" / f"{factory}.json"
    result = pytester.runpytest_subprocess(
        "-m", "retrieval", "--rag-golden-set", "golden.jsonl", "--rag-pipeline", f"fwsys:{factory}",
        "--rag-results", str(out), *extra,
    )  # fmt: skip
    return result, json.loads(out.read_text(encoding="utf-8"))


def same_numbers(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Every metric and every case's outcome, stage and gold ranks equal."""
    assert a["metrics"] == b["metrics"]
    for x, y in zip(a["cases"], b["cases"], strict=True):
        assert (x["id"], x["outcome"], x["failed_stage"], x["metrics"]) == (
            y["id"],
            y["outcome"],
            y["failed_stage"],
            y["metrics"],
        )
        assert x["details"]["gold_ranks"] == y["details"]["gold_ranks"]
