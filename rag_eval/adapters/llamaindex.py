"""A LlamaIndex retriever or query engine as the system under test, with no wrapper code.

- A ``BaseRetriever`` (``NodeWithScore`` lists) is one stage named by its class
  (``VectorIndexRetriever``); a ``QueryFusionRetriever`` shows each of its retrievers
  side by side, then its fused list (fused by its own mode, cut at its
  ``similarity_top_k``, as its ``retrieve`` does).
- A query engine with a ``retriever`` (``RetrieverQueryEngine``): the retriever's
  stages, then each node postprocessor (a reranker, a similarity cutoff) as a stage of
  its class name, then the answer its response synthesizer writes from the last list;
  the ``Response``'s ``source_nodes`` are the sources. Another query engine is asked
  ``query(question)`` and its ``source_nodes`` are one stage.
- Id = the node id; document id = ``ref_doc_id``, else ``metadata[doc_id_key]``.
- ``lookup(ids)``: the docstores of the retrievers' indexes (an empty docstore, e.g. a
  vector store that keeps the text itself, cannot look ids up).
- ``describe()``: each step's class, ``similarity_top_k``, fusion ``mode`` and
  ``num_queries``, and the postprocessors' scalar fields.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.frameworks import (
    FrameworkOptions,
    Step,
    item,
    package_version,
    retrieval,
    stage_name,
    tree_spec,
)
from rag_eval.core.contract import Answer, Retrieval, RetrievedItem, describe_scalars

OPTIONS: tuple[str, ...] = ()
DESCRIBED: tuple[str, ...] = ("similarity_top_k", "_similarity_top_k", "mode", "num_queries", "top_n")


def adapt(obj: Any, options: FrameworkOptions, where: str) -> LlamaIndexSystem:
    if not (callable(getattr(obj, "retrieve", None)) or callable(getattr(obj, "query", None))):
        raise AdapterConfigError(
            f"{where} returned a {type(obj).__name__}: the llamaindex adapter takes a BaseRetriever or a query engine"
        )
    return LlamaIndexSystem(obj, options, where)


class LlamaIndexSystem:
    """The Python contract over one LlamaIndex retriever or query engine."""

    def __init__(self, obj: Any, options: FrameworkOptions, where: str) -> None:
        from llama_index.core.base.base_query_engine import BaseQueryEngine

        self.obj = obj
        self.where = where
        self.doc_id_keys = ("doc_id", *options.doc_id_keys)  # ref_doc_id first, kept as doc_id
        taken: list[str] = []
        self.engine = isinstance(obj, BaseQueryEngine)
        if not self.engine:
            self.root = _retriever_step(obj, taken)
        elif callable(getattr(obj, "synthesize", None)) and getattr(obj, "retriever", None) is not None:
            self.root = _retriever_step(obj.retriever, taken)
            for post in getattr(obj, "_node_postprocessors", None) or []:
                name = stage_name(type(post).__name__, taken)
                taken.append(name)
                self.root = Step(name, post, "postprocessor", [self.root])
        else:
            name = stage_name(type(obj).__name__, taken)
            self.root = Step(name, obj, "engine")
        self.stages = tree_spec(self.root)
        self.answers = self.engine
        if self.engine:
            self.chat = self._chat

    def _lists(self, question: str) -> tuple[dict[str, list[Any]], Any]:
        from llama_index.core.schema import QueryBundle

        bundle = QueryBundle(question)
        lists: dict[str, list[Any]] = {}
        if self.root.kind == "engine":
            response = self.obj.query(bundle)
            lists[self.root.name] = list(response.source_nodes)
            return lists, response
        _run(self.root, bundle, lists)
        return lists, bundle

    def lists(self, question: str) -> dict[str, list[Any]]:
        """Every stage's nodes, as the object makes them (the framework's work)."""
        return self._lists(question)[0]

    def retrieval(self, lists: Mapping[str, Sequence[Any]], top_k: int | None) -> Retrieval:
        return retrieval(lists, self._item, self.stages.final, top_k)

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        return self.retrieval(self.lists(question), top_k)

    def _chat(self, question: str, top_k: int | None = None) -> Answer:
        lists, done = self._lists(question)
        found = self.retrieval(lists, top_k)
        if self.root.kind == "engine":
            response = done
        else:
            kept = {i.id for i in found.items}
            nodes = [n for n in lists[self.stages.final] if str(n.node.node_id) in kept]
            response = self.obj.synthesize(done, nodes)
        text = str(getattr(response, "response", None) or "")
        sources = tuple(self._item(n) for n in getattr(response, "source_nodes", None) or [])
        return Answer(text, sources, found.items, refused=not text.strip(), retrieval=found, generator="llamaindex")

    def _item(self, scored: Any) -> RetrievedItem:
        node = scored.node
        meta = node.metadata or {}
        ref = node.ref_doc_id
        if ref and meta.get("doc_id") in (None, ""):
            meta = {**meta, "doc_id": ref}
        text = node.text if type(getattr(node, "text", None)) is str else node.get_content()  # a TextNode's own text
        return item(node.node_id, text, scored.score, meta, self.doc_id_keys)

    # --- what the system says of itself ---------------------------------------------------
    def _docstores(self) -> list[Any]:
        out: list[Any] = []
        for step in self.root.walk():
            index = getattr(step.obj, "_index", None)
            store = getattr(step.obj, "_docstore", None) or getattr(index, "docstore", None)
            if store is not None and getattr(store, "docs", None) and not any(s is store for s in out):
                out.append(store)
        return out

    def lookup(self, ids: Collection[str]) -> set[str]:
        return {i for store in self._docstores() for i in ids if store.document_exists(i)}

    @property
    def can_lookup(self) -> bool:
        return bool(self._docstores())

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"framework": f"llama-index-core {package_version('llama-index-core')}"}
        for step in self.root.walk():
            name = step.name
            info[name] = type(step.obj).__name__
            values = {k.lstrip("_"): getattr(step.obj, k) for k in DESCRIBED if hasattr(step.obj, k)}
            dump = getattr(step.obj, "model_dump", None)
            if step.kind == "postprocessor" and callable(dump):
                values.update(dump(exclude={"callback_manager"}))
            info.update(describe_scalars({k: getattr(v, "value", v) for k, v in values.items()}, f"{name}."))
        return info


def _retriever_step(retriever: Any, taken: list[str]) -> Step:
    subs = getattr(retriever, "_retrievers", None)
    fusion = isinstance(subs, list) and bool(subs) and hasattr(retriever, "mode")
    inputs = [_retriever_step(r, taken) for r in subs] if fusion and subs else []
    name = stage_name(type(retriever).__name__, taken)
    taken.append(name)
    return Step(name, retriever, "fusion" if fusion else "leaf", inputs)


def _run(step: Step, bundle: Any, lists: dict[str, list[Any]]) -> list[Any]:
    """The step's list as the object itself makes it; every list kept under its name."""
    obj = step.obj
    if step.kind == "fusion":
        nodes = _fuse(step, bundle, lists)
    elif step.kind == "postprocessor":
        nodes = list(obj.postprocess_nodes(_run(step.inputs[0], bundle, lists), query_bundle=bundle))
    else:
        nodes = list(obj.retrieve(bundle))
    lists[step.name] = nodes
    return nodes


def _fuse(step: Step, bundle: Any, lists: dict[str, list[Any]]) -> list[Any]:
    """``QueryFusionRetriever._retrieve``, with each retriever's list kept: the question
    (and, with num_queries > 1, the queries it generates) to every retriever, then its mode."""
    obj = step.obj
    queries = [bundle] + (list(obj._get_queries(bundle.query_str)) if obj.num_queries > 1 else [])
    results: dict[tuple[str, int], list[Any]] = {}
    for query in queries:
        for i, sub in enumerate(step.inputs):
            results[(query.query_str, i)] = (
                _run(sub, query, lists) if query is bundle else list(sub.obj.retrieve(query))
            )
    mode = str(getattr(obj.mode, "value", obj.mode))
    fusions = {
        "reciprocal_rerank": lambda: obj._reciprocal_rerank_fusion(results),
        "relative_score": lambda: obj._relative_score_fusion(results),
        "dist_based_score": lambda: obj._relative_score_fusion(results, dist_based=True),
        "simple": lambda: obj._simple_fusion(results),
    }
    if mode not in fusions:
        raise AdapterConfigError(
            f"QueryFusionRetriever mode {mode!r} is not one this adapter knows ({', '.join(fusions)})"
        )
    fused = fusions[mode]()
    return list(fused)[: obj.similarity_top_k]
