"""A Haystack 2.x Pipeline as the system under test (rag_eval.adapters.haystack): real
haystack-ai, offline (InMemoryBM25Retriever), with no wrapper code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.python import PythonSystem
from tests.rag_eval import _framework_systems as fwsys
from tests.rag_eval._framework_gate import GOLDEN, TYPO, gate, same_numbers, sandbox

pytest.importorskip("haystack")
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "False")


def system(**framework: Any) -> PythonSystem:
    return PythonSystem("tests.rag_eval._framework_systems:haystack_pipeline", {}, "test", framework)


def test_components_are_stages_in_pipeline_order_with_the_pipelines_own_lists() -> None:
    sut = system()
    assert sut.stages is not None and sut.stages.levels == (("bm25", "bm25_wide"), ("joiner",))
    assert sut.stages.final == "joiner" and not sut.answers
    own = fwsys.haystack_pipeline()
    for g in GOLDEN:
        out = own.run(
            {"bm25": {"query": g["question"]}, "bm25_wide": {"query": g["question"]}},
            include_outputs_from={"bm25", "bm25_wide", "joiner"},
        )
        got = sut.retrieve(g["question"])
        for name in ("bm25", "bm25_wide", "joiner"):
            assert [i.id for i in got.stages[name]] == [d.id for d in out[name]["documents"]]
        assert [i.id for i in got.items] == [d.id for d in out["joiner"]["documents"]]
        assert all(i.doc_id == i.id.split("#")[0] for i in got.items)


def test_describe_records_components_and_init_parameters() -> None:
    info = system().describe()
    assert info["bm25"] == info["bm25_wide"] == "InMemoryBM25Retriever" and info["joiner"] == "DocumentJoiner"
    assert (info["bm25.top_k"], info["bm25_wide.top_k"], info["joiner.top_k"]) == (5, 10, 3)
    assert info["document_store"] == f"InMemoryDocumentStore ({len(fwsys.CHUNKS)} documents)"
    assert info["framework"].startswith("haystack-ai ")


def test_lookup_asks_the_document_store() -> None:
    sut = system()
    assert sut.can_lookup and sut.lookup(["sets#0", "derivatives#9"]) == {"sets#0"}


def test_inputs_may_be_named_and_a_wrong_one_is_refused_with_the_open_inputs() -> None:
    named = system(inputs=["bm25.query", "bm25_wide.query"])
    assert named.retrieve(GOLDEN[0]["question"]) == system().retrieve(GOLDEN[0]["question"])
    with pytest.raises(AdapterConfigError, match=r"inputs names 'joiner\.query'.*bm25\.query"):
        system(inputs=["joiner.query"])
    with pytest.raises(AdapterConfigError, match=r"\[framework\] key\(s\) 'id_key'.*valid: doc_id_key, inputs"):
        system(id_key="x")


def test_the_gate_numbers_equal_a_hand_written_adapters(pytester: pytest.Pytester) -> None:
    sandbox(pytester)
    framework, by_framework = gate(pytester, "haystack_pipeline")
    hand, by_hand = gate(pytester, "make_haystack_by_hand")
    assert framework.ret == hand.ret == 0
    same_numbers(by_framework, by_hand)
    assert "retrieval.bm25_wide.recall@10" in by_framework["metrics"]
    system_block = by_framework["run"]["system"]
    assert (system_block["bm25.top_k"], system_block["joiner.join_mode"]) == ("5", "reciprocal_rank_fusion")


def test_a_gold_id_the_store_does_not_hold_fails_at_not_indexed_and_is_named(pytester: pytest.Pytester) -> None:
    sandbox(pytester, (*GOLDEN, TYPO))
    result, results = gate(pytester, "haystack_pipeline")
    typo = next(c for c in results["cases"] if c["id"] == "q7")
    assert (typo["outcome"], typo["failed_stage"]) == ("fail", "not indexed")
    assert typo["message"].startswith("gold not indexed: the system does not hold requirement 1: derivatives#9")
    warnings = [w for w in results["run"]["warnings"] if "not indexed" in w]
    assert len(warnings) == 1 and "derivatives#9 (case q7)" in warnings[0]
    assert not any(g["evidence"][0]["chunk_id"] in warnings[0] for g in GOLDEN)
    result.stdout.fnmatch_lines(["WARNING: 1 gold id(s) not indexed by the system*derivatives#9*"])
    assert json.dumps(results).count("derivatives#9") >= 2
