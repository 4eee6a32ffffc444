"""A LlamaIndex retriever or query engine as the system under test
(rag_eval.adapters.llamaindex): real llama-index-core with MockEmbedding and MockLLM,
offline, with no wrapper code."""

from __future__ import annotations

import pytest

from rag_eval.adapters.python import PythonSystem
from tests.rag_eval import _framework_systems as fwsys
from tests.rag_eval._framework_gate import GOLDEN, gate, same_numbers, sandbox

pytest.importorskip("llama_index.core")
pytest_plugins = ["pytester"]

FACTORIES = "tests.rag_eval._framework_systems"


def system(factory: str) -> PythonSystem:
    return PythonSystem(f"{FACTORIES}:{factory}", {}, "test")


def test_a_fusion_retriever_shows_its_retrievers_side_by_side_and_its_own_fused_list() -> None:
    sut = system("llamaindex_fusion")
    assert sut.stages is not None and not sut.answers
    assert sut.stages.levels == (("VectorIndexRetriever", "VectorIndexRetriever_2"), ("QueryFusionRetriever",))
    own = fwsys.llamaindex_fusion()
    for g in GOLDEN:
        got = sut.retrieve(g["question"])
        assert [i.id for i in got.items] == [n.node.node_id for n in own.retrieve(g["question"])]
        assert [len(got.stages[s]) for s in sut.stages.levels[0]] == [3, 6]
        assert all(i.doc_id == i.id.split("#")[0] for i in got.items)


def test_a_query_engine_adds_its_postprocessors_as_stages_and_answers() -> None:
    sut = system("llamaindex_engine")
    assert sut.answers and sut.stages is not None
    assert sut.stages.names[-2:] == ("QueryFusionRetriever", "SimilarityPostprocessor")
    question = GOLDEN[0]["question"]
    answer = sut.chat(question)
    own = fwsys.llamaindex_engine().query(question)
    assert answer.answer == str(own.response)
    assert [s.id for s in answer.sources] == [n.node.node_id for n in own.source_nodes]
    assert sut.describe()["SimilarityPostprocessor.similarity_cutoff"] == 0.0


def test_lookup_asks_the_docstore() -> None:
    sut = system("llamaindex_fusion")
    assert sut.can_lookup and sut.lookup(["logarithms#1", "logarithms#2"]) == {"logarithms#1"}


def test_the_gate_numbers_equal_a_hand_written_adapters(pytester: pytest.Pytester) -> None:
    sandbox(pytester)
    framework, by_framework = gate(pytester, "llamaindex_fusion")
    hand, by_hand = gate(pytester, "make_llamaindex_by_hand")
    assert framework.ret == hand.ret == 0
    same_numbers(by_framework, by_hand)
    assert by_framework["run"]["system"]["QueryFusionRetriever.similarity_top_k"] == "4"
