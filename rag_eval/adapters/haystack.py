"""A Haystack 2.x ``Pipeline`` as the system under test, with no wrapper code.

- The question goes to every input socket named ``query``, ``question`` or ``text``
  that no edge feeds (``[framework] inputs = ["retriever.query"]`` names them instead).
- The pipeline runs with ``include_outputs_from`` every component; each component with
  a ``documents`` output is a stage under the component's name, in pipeline order, the
  ones that feed the same later component side by side
  (``[["bm25", "embedding_retriever"], "joiner", "ranker"]``); the last is the context.
- The answer is the first of the last ``answers`` output (a ``GeneratedAnswer``'s or
  ``ExtractedAnswer``'s ``data``; its documents are the sources) or of ``replies``.
- Chunk id = ``Document.id``; document id = ``meta[doc_id_key]`` (default ``doc_id``,
  then ``file_path``, ``source``).
- ``lookup(ids)``: ``filter_documents`` on ``id`` in each document store a component holds.
- ``describe()``: every component's type and scalar init parameters (``Pipeline.to_dict``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.frameworks import FrameworkOptions, item, package_version, retrieval, stage_name
from rag_eval.core.contract import Answer, Retrieval, RetrievedItem, describe_scalars
from rag_eval.core.stages import StageSpec

OPTIONS: tuple[str, ...] = ("inputs",)
QUESTION_SOCKETS: tuple[str, ...] = ("query", "question", "text")
DOCUMENTS = "documents"
ANSWER_SOCKETS: tuple[str, ...] = ("answers", "replies")


def adapt(pipeline: Any, options: FrameworkOptions, where: str) -> HaystackSystem:
    if not (callable(getattr(pipeline, "run", None)) and hasattr(pipeline, "graph")):
        raise AdapterConfigError(
            f"{where} returned a {type(pipeline).__name__}: the haystack adapter takes a Pipeline "
            "(haystack.Pipeline with its components added and connected)"
        )
    return HaystackSystem(pipeline, options, where)


class HaystackSystem:
    """The Python contract over one Haystack pipeline."""

    def __init__(self, pipeline: Any, options: FrameworkOptions, where: str) -> None:
        import networkx as nx  # a dependency of haystack-ai

        self.pipeline = pipeline
        self.where = where
        self.doc_id_keys = options.doc_id_keys
        graph = pipeline.graph
        self.order: list[str] = list(nx.topological_sort(graph))
        self.inputs = _inputs(pipeline, options, where)
        outputs = {n: set(graph.nodes[n]["output_sockets"]) for n in self.order}
        docs = [n for n in self.order if DOCUMENTS in outputs[n]]
        if not docs:
            raise AdapterConfigError(
                f"{where}: no component of the pipeline outputs 'documents' ({', '.join(self.order)}): "
                "nothing to evaluate retrieval on"
            )
        self.names = {n: stage_name(n, []) for n in docs}
        self.stages = _spec(graph, docs, self.names)
        self.answer_at = next(((n, s) for s in ANSWER_SOCKETS for n in reversed(self.order) if s in outputs[n]), None)
        if self.answer_at is not None:
            self.chat = self._chat
        self.answers = self.answer_at is not None

    def _run(self, question: str) -> dict[str, Any]:
        data: dict[str, dict[str, Any]] = {}
        for component, socket in self.inputs:
            data.setdefault(component, {})[socket] = question
        result: dict[str, Any] = self.pipeline.run(data, include_outputs_from=set(self.order))
        return result

    def _documents(self, out: Mapping[str, Any]) -> dict[str, list[Any]]:
        """Each stage's documents in a run's outputs."""
        found = {name: (out.get(component) or {}).get(DOCUMENTS) for component, name in self.names.items()}
        return {name: docs for name, docs in found.items() if docs is not None}

    def lists(self, question: str) -> dict[str, list[Any]]:
        """Every stage's documents, as the pipeline makes them (the framework's work)."""
        return self._documents(self._run(question))

    def retrieval(self, lists: Mapping[str, Sequence[Any]], top_k: int | None) -> Retrieval:
        return retrieval(lists, self._item, self.stages.final, top_k)

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        return self.retrieval(self.lists(question), top_k)

    def _chat(self, question: str, top_k: int | None = None) -> Answer:
        assert self.answer_at is not None
        out = self._run(question)
        found = self.retrieval(self._documents(out), top_k)
        component, socket = self.answer_at
        values = (out.get(component) or {}).get(socket) or []
        first = values[0] if values else None
        text, sources = _answer(first)
        return Answer(
            answer=text or "",
            sources=tuple(self._item(d) for d in sources),
            context=found.items,
            refused=not text,
            retrieval=found,
            generator=f"haystack:{component}",
        )

    def _item(self, doc: Any) -> RetrievedItem:
        return item(doc.id, doc.content, doc.score, doc.meta or {}, self.doc_id_keys)

    def lookup(self, ids: Collection[str]) -> set[str]:
        """The ids among ``ids`` that a document store of the pipeline holds."""
        held: set[str] = set()
        for store in _stores(self.pipeline, self.order):
            found = store.filter_documents(filters={"field": "id", "operator": "in", "value": sorted(ids)})
            held |= {str(d.id) for d in found}
        return held

    @property
    def can_lookup(self) -> bool:
        return bool(_stores(self.pipeline, self.order))

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"framework": f"haystack-ai {package_version('haystack-ai')}"}
        components = self.pipeline.to_dict().get("components", {})
        for name in self.order:
            spec = components.get(name, {})
            info[f"{name}"] = str(spec.get("type", "")).rsplit(".", 1)[-1]
            params = {k: v for k, v in (spec.get("init_parameters") or {}).items() if not isinstance(v, Mapping)}
            info.update(describe_scalars(params, f"{name}."))
        stores = [f"{type(s).__name__} ({s.count_documents()} documents)" for s in _stores(self.pipeline, self.order)]
        if stores:
            info["document_store"] = ", ".join(stores)
        return info


def _inputs(pipeline: Any, options: FrameworkOptions, where: str) -> list[tuple[str, str]]:
    """(component, socket) pairs that receive the question."""
    open_inputs: Mapping[str, Mapping[str, Any]] = pipeline.inputs(include_components_with_connected_inputs=False)
    if "inputs" in options.values:
        chosen: list[tuple[str, str]] = []
        for spec in options.strings("inputs"):
            component, _, socket = spec.partition(".")
            if socket not in open_inputs.get(component, {}):
                offered = [f"{c}.{s}" for c, sockets in open_inputs.items() for s in sockets]
                raise AdapterConfigError(
                    f"{options.where}: inputs names {spec!r}, which is not an input of the pipeline that no edge "
                    f"feeds; those are: {', '.join(offered)}"
                )
            chosen.append((component, socket))
        return chosen
    found = [(c, s) for c, sockets in open_inputs.items() for s in sockets if s in QUESTION_SOCKETS]
    if not found:
        offered = [f"{c}.{s}" for c, sockets in open_inputs.items() for s in sockets]
        raise AdapterConfigError(
            f"{where}: no open input socket named {' / '.join(QUESTION_SOCKETS)} takes the question; name the "
            f'ones that do with [framework] inputs = ["component.socket"] (open inputs: {", ".join(offered)})'
        )
    return found


def _spec(graph: Any, docs: Sequence[str], names: Mapping[str, str]) -> StageSpec:
    """Levels of the documents components: a component's depth is how many documents
    components lie after it on its longest path; equal depths run side by side."""
    import networkx as nx

    later = {n: [m for m in docs if m != n and nx.has_path(graph, n, m)] for n in docs}
    depth: dict[str, int] = {}
    for n in reversed(docs):  # docs are in topological order: every later one is known
        depth[n] = 1 + max((depth[m] for m in later[n]), default=-1)
    levels: dict[int, list[str]] = {}
    for n in docs:
        levels.setdefault(depth[n], []).append(names[n])
    final = names[docs[-1]] if depth[docs[-1]] == 0 else next(names[n] for n in reversed(docs) if depth[n] == 0)
    return StageSpec(tuple(tuple(levels[d]) for d in sorted(levels, reverse=True)), final)


def _answer(value: Any) -> tuple[str | None, list[Any]]:
    """The text of one ``answers`` / ``replies`` entry and the documents it names."""
    if value is None:
        return None, []
    if isinstance(value, str):
        return value, []
    if hasattr(value, "data"):  # GeneratedAnswer / ExtractedAnswer
        documents = list(getattr(value, "documents", None) or [])
        one = getattr(value, "document", None)
        data = value.data
        return (None if data is None else str(data)), documents or ([one] if one is not None else [])
    text = getattr(value, "text", None)  # ChatMessage
    return (str(text) if text is not None else None), []


def _stores(pipeline: Any, order: Sequence[str]) -> list[Any]:
    """The distinct document stores the pipeline's components hold."""
    out: list[Any] = []
    for name in order:
        store = getattr(pipeline.get_component(name), "document_store", None)
        if callable(getattr(store, "filter_documents", None)) and not any(s is store for s in out):
            out.append(store)
    return out
