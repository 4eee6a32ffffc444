"""Adapters: how the gate reaches a system under test (rag_app in process, your Python
object, a service over HTTP, Dify) and how gold meets what the system returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.spec import PipelineSpec, load_spec
from rag_eval.core.contract import SystemUnderTest
from rag_eval.core.records import Chunk, Document

__all__ = [
    "AdapterConfigError",
    "PipelineSpec",
    "SystemContext",
    "build_system",
    "corpus_chunker",
    "corpus_reader",
    "load_spec",
]


@dataclass(frozen=True)
class SystemContext:
    """What an adapter may need besides its spec: the run's ``--rag-set`` overrides (rag_app
    only), the project root (its pyproject and cache), and the dataset's corpus, if any."""

    overrides: Mapping[str, Any] = field(default_factory=dict)
    project_root: Path | None = None
    corpus: Path | None = None


SystemBuilder = Callable[[PipelineSpec, SystemContext], SystemUnderTest]


def _python(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    from rag_eval.adapters.python import PythonSystem

    return PythonSystem(spec.target, spec.options, spec.where, spec.framework)


def _http(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    from rag_eval.adapters.http import HttpSystem

    assert spec.http is not None  # load_spec parsed the [http] / [dify] table
    return HttpSystem(spec.http)


def _rag_app(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    from rag_eval.adapters.rag_app import RagAppSystem

    return RagAppSystem(context.overrides, context.project_root, context.corpus)


# spec.kind → how that system is built; each builder imports its adapter only when chosen
BUILDERS: dict[str, SystemBuilder] = {"python": _python, "http": _http, "dify": _http, "rag_app": _rag_app}


def build_system(spec: PipelineSpec, context: SystemContext) -> SystemUnderTest:
    """The system a spec names (rag_app builds or loads its index when first used)."""
    builder = BUILDERS.get(spec.kind)
    if builder is None:
        raise AdapterConfigError(
            f"{spec.where}: no adapter builds a {spec.kind!r} system; known: {', '.join(BUILDERS)}"
        )
    return builder(spec, context)


def corpus_reader(spec: PipelineSpec, context: SystemContext) -> Callable[[Path], tuple[Document, ...]]:
    """How the dataset's local corpus is read: by rag_app's own loader when rag_app is
    evaluated or gold must meet rag_app's chunking (``gold = "corpus"``), else by the
    framework's reader of the shared layout."""
    if spec.kind == "rag_app" or spec.gold == "corpus":
        from rag_eval.adapters.rag_app import RagAppSystem

        return RagAppSystem(context.overrides, context.project_root, context.corpus).corpus_documents
    from rag_eval.corpus import load_documents

    return load_documents


def corpus_chunker(spec: PipelineSpec, context: SystemContext) -> Callable[[Sequence[Document]], list[Chunk]] | None:
    """``gold = "corpus"``: rag_app's chunking of the corpus, which returned ids must match
    (rag_app in process or behind its HTTP API). Other modes chunk nothing."""
    if spec.gold != "corpus":
        return None
    from rag_eval.adapters.rag_app import RagAppSystem

    return RagAppSystem(context.overrides, context.project_root, context.corpus).corpus_chunks
