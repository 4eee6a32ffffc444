"""A LangChain retriever, ensemble or retrieval chain as the system under test
(rag_eval.adapters.langchain): real langchain-core (InMemoryVectorStore with
DeterministicFakeEmbedding) beside langchain-community's BM25Retriever in
langchain-classic's EnsembleRetriever, offline, with no wrapper code."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval.adapters.python import PythonSystem
from tests.rag_eval import _framework_systems as fwsys
from tests.rag_eval._framework_gate import GOLDEN, gate, same_numbers, sandbox

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_community")
pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # langchain-community says it is sunset

FACTORIES = "tests.rag_eval._framework_systems"


def system(factory: str, **framework: Any) -> PythonSystem:
    return PythonSystem(f"{FACTORIES}:{factory}", {}, "test", framework)


def test_an_ensemble_shows_each_retriever_side_by_side_and_its_own_fused_list() -> None:
    sut = system("langchain_ensemble")
    assert sut.stages is not None
    assert sut.stages.levels == (("BM25Retriever", "VectorStoreRetriever"), ("EnsembleRetriever",))
    own = fwsys.langchain_ensemble()
    for g in GOLDEN:
        got = sut.retrieve(g["question"])
        assert [i.id for i in got.items] == [d.id for d in own.invoke(g["question"])]
        for name, retriever in zip(("BM25Retriever", "VectorStoreRetriever"), own.retrievers):
            assert [i.id for i in got.stages[name]] == [d.id for d in retriever.invoke(g["question"])]


@pytest.mark.parametrize("factory", ["langchain_compression", "langchain_merger"])
def test_compression_and_merger_show_their_inputs_then_their_own_list(factory: str) -> None:
    sut = system(factory)
    own = getattr(fwsys, factory)()
    assert sut.stages is not None
    inputs = (
        ("VectorStoreRetriever",) if factory == "langchain_compression" else ("BM25Retriever", "VectorStoreRetriever")
    )
    assert sut.stages.levels == (inputs, (type(own).__name__,))
    for g in GOLDEN:
        got = sut.retrieve(g["question"])
        assert [i.id for i in got.items] == [d.id for d in own.invoke(g["question"])]
        assert len(got.stages["VectorStoreRetriever"]) == 4
    compressed = system("langchain_compression").retrieve(
        GOLDEN[1]["question"]
    )  # "what is the derivative of x squared"
    assert 0 < len(compressed.items) < len(compressed.stages["VectorStoreRetriever"])


def test_one_retriever_is_one_stage_and_describe_says_its_search_kwargs() -> None:
    sut = system("langchain_vector")
    assert sut.stages is not None and sut.stages.names == ("VectorStoreRetriever",)
    assert len(sut.retrieve("sine").items) == 4
    info = sut.describe()
    assert (info["VectorStoreRetriever.search_kwargs.k"], info["VectorStoreRetriever.search_type"]) == (4, "similarity")
    assert system("langchain_ensemble").describe()["EnsembleRetriever.weights"] == "0.6, 0.4"


def test_lookup_asks_the_vector_store_and_the_bm25_documents() -> None:
    sut = system("langchain_ensemble")
    assert sut.can_lookup and sut.lookup(["sets#1", "sets#7"]) == {"sets#1"}


def test_a_retrieval_chain_feeds_the_answer_tiers() -> None:
    sut = system("langchain_chain")
    assert sut.answers
    answer = sut.chat(GOLDEN[1]["question"])
    assert answer.answer == "answer: " + answer.context[0].text
    assert [i.id for i in answer.context] == [d.id for d in fwsys.langchain_vector().invoke(GOLDEN[1]["question"])]


def test_the_gate_numbers_equal_a_hand_written_adapters(pytester: pytest.Pytester) -> None:
    sandbox(pytester)
    framework, by_framework = gate(pytester, "langchain_ensemble", "-W", "ignore::DeprecationWarning")
    hand, by_hand = gate(pytester, "make_langchain_by_hand", "-W", "ignore::DeprecationWarning")
    assert framework.ret == hand.ret == 0
    same_numbers(by_framework, by_hand)
    assert "retrieval.BM25Retriever.recall@5" in by_framework["metrics"]
