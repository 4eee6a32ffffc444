"""Framework objects as systems under test: a ``package.module:factory`` that returns a
Haystack ``Pipeline``, a LangChain retriever or runnable, or a LlamaIndex retriever or
query engine is evaluated with no wrapper code.

Which framework an object belongs to is read from the modules its class comes from
(``haystack``, ``langchain_core``…, ``llama_index``), so nothing is imported to find
out; its adapter module (``rag_eval.adapters.haystack``, ``.langchain``,
``.llamaindex``) is imported only then, and each adapter imports its framework only
then. Outside ``rag_eval/adapters`` no module knows a framework exists: an adapter
gives back an object of the Python contract (``retrieve``, optionally ``chat``,
``describe``, ``stages``, ``lookup``), which ``PythonSystem`` checks like any other.

This module holds what the three share: the ``[framework]`` table of the pipeline
configuration, an item's document id from its metadata, unique stage names, and the
stage levels of a tree of retrievers (leaves side by side, each fusion after them).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.core.contract import Retrieval, RetrievedItem
from rag_eval.core.stages import RESERVED, StageSpec


@dataclass(frozen=True)
class Framework:
    """One framework: the top-level modules its classes live in, its adapter, its package."""

    name: str
    roots: tuple[str, ...]
    adapter: str
    package: str


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("haystack", ("haystack",), "rag_eval.adapters.haystack", "haystack-ai"),
    Framework(
        "langchain",
        ("langchain_core", "langchain", "langchain_classic", "langchain_community"),
        "rag_eval.adapters.langchain",
        "langchain-core",
    ),
    Framework("llamaindex", ("llama_index",), "rag_eval.adapters.llamaindex", "llama-index-core"),
)
#: the [framework] keys every adapter takes; each adapter adds its own (``Adapter.OPTIONS``)
COMMON_OPTIONS: tuple[str, ...] = ("doc_id_key",)
DEFAULT_DOC_ID_KEYS: tuple[str, ...] = ("doc_id", "file_path", "source")


def framework_of(obj: Any) -> Framework | None:
    """The framework whose classes ``obj`` is an instance of, or None (a plain object)."""
    roots = {str(getattr(c, "__module__", "")).split(".")[0] for c in type(obj).__mro__}
    return next((fw for fw in FRAMEWORKS if roots & set(fw.roots)), None)


def package_hint(module_name: str) -> str:
    """'' or the pip command that installs the framework a missing module belongs to."""
    root = module_name.split(".")[0]
    fw = next((f for f in FRAMEWORKS if root in f.roots), None)
    if fw is None:
        return ""
    package = "langchain-community" if root == "langchain_community" else fw.package
    package = "langchain-classic" if root == "langchain_classic" else package
    return f"; it belongs to {fw.name}: pip install {package}"


def adapt(obj: Any, target: str, where: str, options: Mapping[str, Any]) -> Any:
    """``obj`` itself when it belongs to no framework (``options`` must then be empty),
    else its framework adapter, which speaks the Python contract."""
    fw = framework_of(obj)
    if fw is None:
        if options:
            raise AdapterConfigError(
                f"{where}: [framework] is for a factory that returns a Haystack, LangChain or LlamaIndex object; "
                f"{target} returned a {type(obj).__name__}"
            )
        return obj
    try:
        module = importlib.import_module(fw.adapter)
        return module.adapt(obj, FrameworkOptions.parse(options, module.OPTIONS, where), f"{where}: {target}")
    except ModuleNotFoundError as exc:
        raise AdapterConfigError(
            f"{where}: {target} returned a {fw.name} object, but {exc.name or exc} cannot be imported"
            f"{package_hint(exc.name or fw.roots[0]) or f'; pip install {fw.package}'}"
        ) from None


@dataclass(frozen=True)
class FrameworkOptions:
    """The ``[framework]`` table of the pipeline configuration, checked against the
    keys the object's adapter takes."""

    values: Mapping[str, Any] = field(default_factory=dict)
    where: str = "[framework]"

    @classmethod
    def parse(cls, table: Mapping[str, Any], valid: Sequence[str], where: str) -> FrameworkOptions:
        allowed = (*COMMON_OPTIONS, *valid)
        unknown = sorted(set(table) - set(allowed))
        if unknown:
            raise AdapterConfigError(
                f"{where}: [framework] key(s) {', '.join(map(repr, unknown))} do not apply to this object; "
                f"valid: {', '.join(allowed)}"
            )
        return cls(dict(table), f"{where} [framework]")

    def strings(self, key: str, default: Sequence[str] = ()) -> tuple[str, ...]:
        """A string or a list of strings (``doc_id_key = "source"`` or ``["doc_id", "path"]``)."""
        value = self.values.get(key, list(default))
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
            raise AdapterConfigError(f"{self.where}: {key} must be a string or a list of strings, got {value!r}")
        return tuple(values)

    def string(self, key: str, default: str) -> str:
        value = self.values.get(key, default)
        if not isinstance(value, str) or not value:
            raise AdapterConfigError(f"{self.where}: {key} must be a non-empty string, got {value!r}")
        return value

    @property
    def doc_id_keys(self) -> tuple[str, ...]:
        return self.strings("doc_id_key", DEFAULT_DOC_ID_KEYS)


def item(item_id: Any, text: Any, score: Any, metadata: Mapping[str, Any], doc_id_keys: Sequence[str]) -> RetrievedItem:
    """A contract item from a framework's document: its document is the first of
    ``doc_id_keys`` the metadata has (kept beside the rest of the metadata). Called for
    every document of every stage of every call: kept to a dict copy and a few lookups."""
    meta = dict(metadata)
    for key in doc_id_keys:
        doc = meta.get(key)
        if doc is not None and doc != "":
            meta["doc_id"] = str(doc)
            break
    number = float(score) if type(score) in (float, int) else None  # a bool is no score
    return RetrievedItem(str(item_id), text if type(text) is str else "" if text is None else str(text), number, meta)


def stage_name(raw: str, taken: Iterable[str]) -> str:
    """A valid stage name from a framework's own name (``VectorIndexRetriever``), unique
    among ``taken`` (a second one is ``VectorIndexRetriever_2``)."""
    base = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in raw) or "stage"
    base = base if base[0].isalpha() or base[0] == "_" else f"s_{base}"
    base = f"{base}_stage" if base in RESERVED else base
    used = set(taken)
    name, n = base, 1
    while name in used:
        n += 1
        name = f"{base}_{n}"
    return name


@dataclass
class Step:
    """One list-producing step of a framework object (a retriever, a fusion, a
    postprocessor), under its stage name, and the steps whose lists it takes."""

    name: str
    obj: Any
    kind: str  # what makes its list; each adapter names its own kinds
    inputs: list[Step] = field(default_factory=list)

    @property
    def height(self) -> int:
        return 1 + max((n.height for n in self.inputs), default=-1)

    def walk(self) -> list[Step]:
        """Every step, inputs first (post-order)."""
        return [n for i in self.inputs for n in i.walk()] + [self]


def tree_spec(root: Step) -> StageSpec:
    """Stage levels of a tree: the leaves side by side, each step one level after the
    highest of its inputs; the root's list is the final one."""
    levels: dict[int, list[str]] = {}
    for node in root.walk():
        levels.setdefault(node.height, []).append(node.name)
    return StageSpec(tuple(tuple(levels[h]) for h in sorted(levels)), root.name)


def cut(items: Sequence[RetrievedItem], top_k: int | None) -> tuple[RetrievedItem, ...]:
    """``--rag-top-k``: the first ``top_k`` of the final list (all without one)."""
    return tuple(items if top_k is None else items[:top_k])


def retrieval(
    lists: Mapping[str, Sequence[Any]], convert: Callable[[Any], RetrievedItem], final: str, top_k: int | None
) -> Retrieval:
    """The contract's ``Retrieval`` of a framework's lists per stage (``convert``: one of
    its documents to an item); the final list cut at ``top_k``. The adapter's own work on
    a call: ``bench/framework_adapters.py`` times it beside the framework's."""
    stages = {name: tuple(convert(d) for d in docs) for name, docs in lists.items()}
    items = cut(stages.get(final, ()), top_k)
    return Retrieval(items, {**stages, final: items})


def package_version(package: str) -> str:
    """An installed distribution's version, for ``describe()``."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"
