"""Adapters: how the gate reaches a system under test (rag_app in process, your Python
object, a service over HTTP, Dify) and how gold meets what the system returns. Each kind
of system is one declaration in the registry (rag_eval.adapters.kinds)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rag_eval.adapters import kinds
from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.kinds import AdapterKind, CorpusView, SettingsCheck, SystemContext, register
from rag_eval.adapters.spec import PipelineSpec, load_spec
from rag_eval.core.contract import SystemUnderTest
from rag_eval.core.records import Chunk, Document

__all__ = [
    "AdapterConfigError",
    "AdapterKind",
    "CorpusView",
    "PipelineSpec",
    "SystemContext",
    "build_system",
    "corpus_chunker",
    "corpus_reader",
    "load_spec",
    "pin_reader",
    "register",
    "rehash_options",
    "settings_check",
]


def build_system(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    """The system a spec names (rag_app builds or loads its index when first used)."""
    kind = kinds.get(spec.kind)
    if kind is None:
        known = ", ".join(k.name for k in kinds.all_kinds())
        raise AdapterConfigError(f"{spec.where}: no adapter builds a {spec.kind!r} system; known: {known}")
    return kind.build(spec, context)


def corpus_view(spec: PipelineSpec) -> CorpusView | None:
    """How the local corpus is read and chunked for this spec: the kind's own system's way,
    or a borrowed one under ``gold = "corpus"``; None: the framework reads the shared layout."""
    kind = kinds.get(spec.kind)
    view = kind.corpus if kind is not None else None
    return view if view is not None and (view.own or spec.gold == "corpus") else None


def corpus_reader(spec: PipelineSpec, context: SystemContext) -> Callable[[Path], tuple[Document, ...]]:
    """How the dataset's local corpus is read: by the system's own loader where its kind
    has one (see :func:`corpus_view`), else by the framework's reader of the shared layout."""
    view = corpus_view(spec)
    return view.read(context) if view is not None else _neutral()


def pin_reader(context: SystemContext) -> Callable[[Path], tuple[Document, ...]]:
    """How ``python -m rag_eval corpus-hash`` reads the corpus without options: as a
    ``gold = "corpus"`` run of the kind native to that mode (rag_app's loader). A golden set
    pinned by that command is the same corpus to a run that reads it another way. Nothing
    of that kind is imported until the reader is called."""

    def read(path: Path) -> tuple[Document, ...]:
        name = kinds.native_kind("corpus")
        return tuple((corpus_reader(PipelineSpec(name, gold="corpus"), context) if name else _neutral())(path))

    return read


def rehash_options(spec: PipelineSpec) -> str:
    """Options of ``corpus-hash`` that read the corpus as a run of ``spec`` does."""
    if spec.config_path is not None:
        return f"--rag-pipeline-config {spec.config_path}"
    return f"--gold {spec.gold}" if spec.gold and spec.gold != "corpus" else ""


def _neutral() -> Callable[[Path], tuple[Document, ...]]:
    from rag_eval.corpus import load_documents

    return load_documents


def corpus_chunker(spec: PipelineSpec, context: SystemContext) -> Callable[[Sequence[Document]], list[Chunk]] | None:
    """``gold = "corpus"``: the system's chunking of the corpus, which returned ids must
    match (in process or behind an API). Other modes chunk nothing."""
    view = corpus_view(spec)
    return view.chunk(context) if view is not None and spec.gold == "corpus" else None


def settings_check(spec: PipelineSpec) -> SettingsCheck | None:
    """Who checks ``--rag-set`` for this spec (None: no setting applies to its system)."""
    view = corpus_view(spec)
    return view.settings if view is not None else None
