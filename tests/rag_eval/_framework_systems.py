"""Real, offline pipelines of Haystack, LangChain and LlamaIndex over one small corpus,
each beside the hand-written adapter a user would otherwise write for it (the Python
contract, plain dicts). Copied into pytester sandboxes as ``fwsys.py``; the factories
are ``fwsys:haystack_pipeline`` and so on.

Every chunk has a fixed id ``<doc>#<n>`` and its document in ``doc_id`` metadata, so
gold given as chunk ids meets every framework's own ids."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

CORPUS: dict[str, tuple[str, ...]] = {
    "sets": ("A set with n elements has 2 to the n subsets.", "The empty set is a subset of every set."),
    "functions": ("A function maps each input to exactly one output.", "The domain of a function is its inputs."),
    "sequences": ("An arithmetic sequence adds a common difference.", "A geometric sequence multiplies a ratio."),
    "trigonometry": ("The sine function has period two pi.", "The cosine of zero is one."),
    "probability": ("The probability of an event lies between zero and one.", "Independent events multiply."),
    "vectors": ("The dot product of two vectors uses the cosine of the angle.", "A vector has a length."),
    "derivatives": ("The derivative of x squared is two x.", "A derivative measures the rate of change."),
    "logarithms": ("The logarithm of a product is the sum of logarithms.", "The logarithm base ten of 100 is 2."),
}
CHUNKS: tuple[tuple[str, str, str], ...] = tuple(
    (f"{doc}#{n}", doc, text) for doc, texts in CORPUS.items() for n, text in enumerate(texts)
)


# --- Haystack ---------------------------------------------------------------------------
def haystack_pipeline() -> Any:
    """Two BM25 retrievers side by side, fused by a joiner (reciprocal rank fusion)."""
    from haystack import Document, Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=cid, content=text, meta={"doc_id": doc}) for cid, doc, text in CHUNKS])
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(store, top_k=5))
    pipeline.add_component("bm25_wide", InMemoryBM25Retriever(store, top_k=10))
    pipeline.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=3))
    pipeline.connect("bm25", "joiner")
    pipeline.connect("bm25_wide", "joiner")
    return pipeline


class HaystackByHand:
    """The adapter a user writes around ``haystack_pipeline()``."""

    stages = [["bm25", "bm25_wide"], "joiner"]

    def __init__(self) -> None:
        self.pipeline = haystack_pipeline()

    def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        out = self.pipeline.run(
            {"bm25": {"query": question}, "bm25_wide": {"query": question}},
            include_outputs_from={"bm25", "bm25_wide", "joiner"},
        )
        lists = {name: [_hs(d) for d in out[name]["documents"]] for name in ("bm25", "bm25_wide", "joiner")}
        return {"items": lists["joiner"], "stages": lists}


def _hs(doc: Any) -> dict[str, Any]:
    return {"id": doc.id, "text": doc.content, "score": doc.score, "metadata": {"doc_id": doc.meta["doc_id"]}}


# --- LangChain --------------------------------------------------------------------------
def _lc_documents() -> list[Any]:
    from langchain_core.documents import Document

    return [Document(id=cid, page_content=text, metadata={"doc_id": doc}) for cid, doc, text in CHUNKS]


def langchain_vector() -> Any:
    """``InMemoryVectorStore`` with ``DeterministicFakeEmbedding``, top 4."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(_lc_documents())
    return store.as_retriever(search_kwargs={"k": 4})


def langchain_ensemble() -> Any:
    """BM25 beside the vector store, fused by ``EnsembleRetriever`` (weighted RRF)."""
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

    bm25 = BM25Retriever.from_documents(_lc_documents(), k=4)
    return EnsembleRetriever(retrievers=[bm25, langchain_vector()], weights=[0.6, 0.4])


def langchain_chain() -> Any:
    """``create_retrieval_chain`` over the vector retriever; the "model" quotes the first document."""
    from langchain_classic.chains import create_retrieval_chain
    from langchain_core.runnables import RunnableLambda

    answer = RunnableLambda(lambda given: "answer: " + given["context"][0].page_content)
    return create_retrieval_chain(langchain_vector(), answer)


def langchain_compression() -> Any:
    """``ContextualCompressionRetriever``: the vector retriever, then a compressor that keeps
    the documents sharing a word with the question."""
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_core.documents.compressor import BaseDocumentCompressor

    class SharedWord(BaseDocumentCompressor):
        def compress_documents(self, documents: Any, query: str, callbacks: Any = None) -> list[Any]:
            words = set(query.lower().split())
            return [d for d in documents if words & set(d.page_content.lower().rstrip(".").split())]

    return ContextualCompressionRetriever(base_compressor=SharedWord(), base_retriever=langchain_vector())


def langchain_merger() -> Any:
    """``MergerRetriever`` (lord of the retrievers): BM25 and the vector store, interleaved."""
    from langchain_classic.retrievers import MergerRetriever
    from langchain_community.retrievers import BM25Retriever

    return MergerRetriever(retrievers=[BM25Retriever.from_documents(_lc_documents(), k=3), langchain_vector()])


class LangChainByHand:
    """The adapter a user writes around ``langchain_ensemble()``."""

    stages = [["BM25Retriever", "VectorStoreRetriever"], "EnsembleRetriever"]

    def __init__(self) -> None:
        self.ensemble = langchain_ensemble()

    def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        bm25, vector = (r.invoke(question) for r in self.ensemble.retrievers)
        fused = self.ensemble.invoke(question)
        lists = {"BM25Retriever": bm25, "VectorStoreRetriever": vector, "EnsembleRetriever": fused}
        stages = {
            k: [{"id": d.id, "text": d.page_content, "metadata": d.metadata} for d in v] for k, v in lists.items()
        }
        return {"items": stages["EnsembleRetriever"], "stages": stages}


# --- LlamaIndex -------------------------------------------------------------------------
def _li_index() -> Any:
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    Settings.embed_model = MockEmbedding(embed_dim=8)
    Settings.llm = MockLLM()
    nodes = [
        TextNode(id_=cid, text=text, relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)})
        for cid, doc, text in CHUNKS
    ]
    return VectorStoreIndex(nodes)


def llamaindex_fusion() -> Any:
    """A ``QueryFusionRetriever`` over two vector retrievers (one query: no LLM)."""
    from llama_index.core.retrievers import QueryFusionRetriever

    index = _li_index()
    retrievers = [index.as_retriever(similarity_top_k=3), index.as_retriever(similarity_top_k=6)]
    return QueryFusionRetriever(
        retrievers, num_queries=1, use_async=False, similarity_top_k=4, mode="reciprocal_rerank"
    )


def llamaindex_engine() -> Any:
    """The fusion retriever, a similarity cutoff as a node postprocessor, MockLLM answers."""
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine

    return RetrieverQueryEngine.from_args(
        llamaindex_fusion(), node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.0)]
    )


class LlamaIndexByHand:
    """The adapter a user writes around ``llamaindex_fusion()``."""

    stages = [["VectorIndexRetriever", "VectorIndexRetriever_2"], "QueryFusionRetriever"]

    def __init__(self) -> None:
        self.fusion = llamaindex_fusion()

    def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        first, second = (r.retrieve(question) for r in self.fusion._retrievers)
        lists = {"VectorIndexRetriever": first, "VectorIndexRetriever_2": second}
        lists["QueryFusionRetriever"] = self.fusion.retrieve(question)
        stages = {
            k: [
                {"id": n.node.node_id, "text": n.node.get_content(), "score": n.score, "doc_id": n.node.ref_doc_id}
                for n in v
            ]
            for k, v in lists.items()
        }
        return {"items": stages["QueryFusionRetriever"], "stages": stages}


def make_haystack_by_hand() -> HaystackByHand:
    return HaystackByHand()


def make_langchain_by_hand() -> LangChainByHand:
    return LangChainByHand()


def make_llamaindex_by_hand() -> LlamaIndexByHand:
    return LlamaIndexByHand()
