"""Adapters: how the gate reaches a system under test (rag_app in process, your Python
object, a service over HTTP, Dify) and how gold meets what the system returns."""

from __future__ import annotations

from pathlib import Path

from rag_app.settings import Settings
from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.spec import PipelineSpec, load_spec
from rag_eval.contract import SystemUnderTest

__all__ = ["AdapterConfigError", "PipelineSpec", "build_system", "load_spec"]


def build_system(spec: PipelineSpec, settings: Settings, corpus_path: Path) -> SystemUnderTest:
    """The system a spec names (rag_app builds or loads its index here)."""
    if spec.kind == "python":
        from rag_eval.adapters.python import PythonSystem

        return PythonSystem(spec.target, spec.options, spec.where)
    if spec.kind in ("http", "dify"):
        from rag_eval.adapters.http import HttpSystem

        assert spec.http is not None
        return HttpSystem(spec.http)
    from rag_eval.adapters.rag_app import RagAppSystem

    return RagAppSystem(settings, corpus_path)
