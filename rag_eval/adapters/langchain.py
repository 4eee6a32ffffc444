"""A LangChain retriever or runnable as the system under test, with no wrapper code.

- A ``BaseRetriever`` is one stage, named by ``get_name()`` (``VectorStoreRetriever``,
  ``BM25Retriever``). An ``EnsembleRetriever`` / ``MergerRetriever`` shows each of its
  retrievers side by side and the fused list after them (fused by the ensemble's own
  ``weighted_reciprocal_rank``, or the merger's interleaving); a
  ``ContextualCompressionRetriever`` shows its base retriever, then the compressed list
  (its ``base_compressor``). The final list equals the object's own ``invoke``.
- Any other ``Runnable`` is called with the question (a string, or
  ``{input_key: question}`` when its input is an object; default ``input``). A list of
  ``Document`` is one stage; a mapping with ``answer`` and ``context``
  (``create_retrieval_chain``) feeds the answer tiers, its ``context`` the stage.
- Id = ``Document.id``, else ``metadata[id_key]`` (default ``id``); document id =
  ``metadata[doc_id_key]`` (default ``doc_id``, then ``file_path``, ``source``).
- ``lookup(ids)``: the vector stores' ``get_by_ids`` (and a BM25 retriever's documents).
- ``describe()``: each retriever's class, ``k``, ``search_type``, ``search_kwargs``, weights.
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
from rag_eval.core.contract import Answer, ContractError, Retrieval, RetrievedItem, describe_scalars
from rag_eval.core.stages import StageSpec

OPTIONS: tuple[str, ...] = ("id_key", "input_key")
DESCRIBED: tuple[str, ...] = ("k", "search_type", "search_kwargs", "weights", "c", "id_key")
CONTEXT = "context"  # the retrieval chain's key, and the stage its documents are


def adapt(obj: Any, options: FrameworkOptions, where: str) -> LangChainSystem:
    if not callable(getattr(obj, "invoke", None)):
        raise AdapterConfigError(
            f"{where} returned a {type(obj).__name__}: the langchain adapter takes a BaseRetriever or a Runnable"
        )
    return LangChainSystem(obj, options, where)


class LangChainSystem:
    """The Python contract over one LangChain retriever (a tree of them) or runnable."""

    def __init__(self, obj: Any, options: FrameworkOptions, where: str) -> None:
        from langchain_core.retrievers import BaseRetriever

        self.obj = obj
        self.where = where
        self.id_key = options.string("id_key", "id")
        self.doc_id_keys = options.doc_id_keys
        self.tree = _step(obj, []) if isinstance(obj, BaseRetriever) else None
        if self.tree is not None:
            self.stages: StageSpec = tree_spec(self.tree)
            self.answers = False
        else:
            schema = _schema(obj, "get_input_jsonschema")
            self.input_key = options.string("input_key", "input")
            self.as_text = schema.get("type") == "string"
            out = _schema(obj, "get_output_jsonschema")
            self.answers = "answer" in (out.get("properties") or {})
            self.name = CONTEXT if self.answers else stage_name(obj.get_name(), [])
            self.stages = StageSpec(((self.name,),), self.name)
            if self.answers:
                self.chat = self._chat

    # --- calls ----------------------------------------------------------------------------
    def lists(self, question: str) -> dict[str, list[Any]]:
        """Every stage's documents, as the object makes them (the framework's work)."""
        if self.tree is None:
            return {self.name: self._documents(self._invoke(question))}
        lists: dict[str, list[Any]] = {}
        _run(self.tree, question, lists)
        return lists

    def retrieval(self, lists: Mapping[str, Sequence[Any]], top_k: int | None) -> Retrieval:
        return retrieval(lists, self._item, self.stages.final, top_k)

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        return self.retrieval(self.lists(question), top_k)

    def _chat(self, question: str, top_k: int | None = None) -> Answer:
        out = self._invoke(question)
        found = self.retrieval({self.name: self._documents(out)}, top_k)
        answer = out.get("answer") if isinstance(out, Mapping) else None
        text = getattr(answer, "content", answer)
        if not isinstance(text, str):
            raise ContractError(f"{self.where}: the chain's 'answer' is {type(answer).__name__}, not text")
        return Answer(text, (), found.items, refused=not text.strip(), retrieval=found, generator="langchain")

    def _invoke(self, question: str) -> Any:
        return self.obj.invoke(question if self.as_text else {self.input_key: question})

    def _documents(self, out: Any) -> list[Any]:
        docs = out.get(CONTEXT) if isinstance(out, Mapping) else out
        if not isinstance(docs, list):
            raise ContractError(
                f"{self.where}: the runnable returned {type(out).__name__}; expected a list of Documents or a "
                "mapping with 'answer' and 'context' (create_retrieval_chain)"
            )
        return docs

    def _item(self, doc: Any) -> RetrievedItem:
        metadata = doc.metadata or {}
        doc_id = getattr(doc, "id", None) or metadata.get(self.id_key)
        if doc_id in (None, ""):
            raise ContractError(
                f"{self.where}: a Document has no id (Document.id unset, no metadata[{self.id_key!r}]); set ids "
                "when you add documents, or name the metadata key with [framework] id_key"
            )
        return item(doc_id, doc.page_content, metadata.get("score"), metadata, self.doc_id_keys)

    # --- what the system says of itself ---------------------------------------------------
    def lookup(self, ids: Collection[str]) -> set[str]:
        held: set[str] = set()
        for leaf in self._leaves():
            get_by_ids = getattr(getattr(leaf, "vectorstore", None), "get_by_ids", None)
            if callable(get_by_ids):
                held |= {str(d.id) for d in get_by_ids(sorted(ids))}
            elif isinstance(getattr(leaf, "docs", None), list):
                held |= {str(self._item(d).id) for d in leaf.docs} & set(ids)
        return held

    @property
    def can_lookup(self) -> bool:
        return any(
            callable(getattr(getattr(r, "vectorstore", None), "get_by_ids", None))
            or isinstance(getattr(r, "docs", None), list)
            for r in self._leaves()
        )

    def _leaves(self) -> list[Any]:
        return [] if self.tree is None else [s.obj for s in self.tree.walk() if s.kind == "leaf"]

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"framework": f"langchain-core {package_version('langchain-core')}"}
        if self.tree is None:
            info[self.name] = type(self.obj).__name__
            return info
        for step in self.tree.walk():
            info[step.name] = type(step.obj).__name__
            values = {k: getattr(step.obj, k) for k in DESCRIBED if getattr(step.obj, k, None) is not None}
            info.update(describe_scalars(values, f"{step.name}."))
        return info


def _step(retriever: Any, taken: list[str]) -> Step:
    """The tree under ``retriever``: its inputs first, then itself (names unique in ``taken``)."""
    subs = getattr(retriever, "retrievers", None)
    base = getattr(retriever, "base_retriever", None)
    if isinstance(subs, list) and subs:
        kind = "ensemble" if callable(getattr(retriever, "weighted_reciprocal_rank", None)) else "merger"
        inputs = [_step(r, taken) for r in subs]
    elif base is not None and getattr(retriever, "base_compressor", None) is not None:
        kind, inputs = "compression", [_step(base, taken)]
    else:
        kind, inputs = "leaf", []
    name = stage_name(retriever.get_name(), taken)
    taken.append(name)
    return Step(name, retriever, kind, inputs)


def _run(step: Step, question: str, lists: dict[str, list[Any]]) -> list[Any]:
    """The step's list, as the object itself makes it; every list kept under its name."""
    inner = [_run(i, question, lists) for i in step.inputs]
    r = step.obj
    if step.kind == "ensemble":
        docs = list(r.weighted_reciprocal_rank(inner))
    elif step.kind == "merger":
        docs = [d[i] for i in range(max((len(d) for d in inner), default=0)) for d in inner if i < len(d)]
    elif step.kind == "compression":
        docs = list(r.base_compressor.compress_documents(inner[0], question)) if inner[0] else []
    else:
        docs = list(r.invoke(question))
    lists[step.name] = docs
    return docs


def _schema(obj: Any, method: str) -> Mapping[str, Any]:
    try:
        schema = getattr(obj, method)()
    except Exception:  # noqa: BLE001 - a runnable that cannot say its schema: treat it as text in, list out
        return {}
    return schema if isinstance(schema, Mapping) else {}
