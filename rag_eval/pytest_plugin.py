"""The former home of the pytest plugin, kept importable for test modules and users that
import from it (``from rag_eval.pytest_plugin import CaseRunner``). The plugin itself is
``rag_eval.plugin`` (hooks in ``rag_eval.plugin.hooks``, the pytest11 entry point)."""

from rag_eval.plugin.runner import CaseRunner

__all__ = ["CaseRunner"]
