"""The system under test, as the evaluation sees it.

Evaluation needs ranked chunk ids per stage (retrieval) and an answer with its
context (generation). ``rag_app`` is one implementation of this contract.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from rag_app.settings import Settings
from rag_app.types import ChatResult, Chunk, Document, RetrievalResult


class SystemUnderTest(Protocol):
    def retrieve(self, question: str, top_k: int | None = None) -> RetrievalResult: ...

    def chat(self, question: str, top_k: int | None = None, history: Sequence[dict[str, str]] = ()) -> ChatResult: ...

    def describe(self) -> dict[str, Any]:
        """Index fingerprint, models, generator kind: shown in results and reports."""
        ...

    @property
    def chunks(self) -> Mapping[str, Chunk]: ...

    @property
    def documents(self) -> Sequence[Document]: ...


class RagAppSystem:
    """Adapter from ``rag_app.pipeline.RagPipeline`` to the contract."""

    def __init__(self, settings: Settings, corpus_path: Path) -> None:
        from rag_app.pipeline import RagPipeline  # heavy imports only when a case runs

        self.pipeline = RagPipeline(settings, corpus_path=corpus_path)

    def retrieve(self, question: str, top_k: int | None = None) -> RetrievalResult:
        return self.pipeline.retrieve(question, top_k)

    def chat(self, question: str, top_k: int | None = None, history: Sequence[dict[str, str]] = ()) -> ChatResult:
        return self.pipeline.chat(question, top_k, history)

    def describe(self) -> dict[str, Any]:
        return asdict(self.pipeline.info)

    @property
    def chunks(self) -> Mapping[str, Chunk]:
        return self.pipeline.index.chunks

    @property
    def documents(self) -> Sequence[Document]:
        return self.pipeline.documents
