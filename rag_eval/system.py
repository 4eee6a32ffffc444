"""The system under test, as the evaluation sees it.

The contract lives in ``rag_eval.contract``; the adapters in ``rag_eval.adapters``.
This module keeps the historical import path for both.
"""

from __future__ import annotations

from rag_eval.adapters.rag_app import RagAppSystem
from rag_eval.contract import SystemUnderTest

__all__ = ["RagAppSystem", "SystemUnderTest"]
