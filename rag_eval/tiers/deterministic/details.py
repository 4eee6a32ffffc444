"""A deterministic case's typed details (``$defs/deterministicDetails``): the answer, its
sources and context, every check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval.metrics.deterministic import CheckResult


@dataclass(frozen=True)
class ContextShown:
    """One chunk the answer saw (its text cut at CONTEXT_TEXT_KEPT characters)."""

    chunk_id: str
    label: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "label": self.label, "text": self.text}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ContextShown:
        return cls(str(d["chunk_id"]), str(d.get("label", "")), str(d["text"]))


@dataclass(frozen=True)
class DeterministicDetails:
    """A deterministic case's ``details`` (schema ``$defs/deterministicDetails``; degraded,
    degradation_reason and usage are common to every tier's details)."""

    answer: str
    refused: bool
    generator: str
    sources: tuple[Mapping[str, Any], ...]  # each Source.to_dict(), as the system built it
    context: tuple[ContextShown, ...]
    checks: tuple[CheckResult, ...]
    degraded: bool
    degradation_reason: str | None
    usage: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "refused": self.refused,
            "generator": self.generator,
            "sources": [dict(s) for s in self.sources],
            "context": [c.to_dict() for c in self.context],
            "checks": [c.to_dict() for c in self.checks],
            "degraded": self.degraded,
            "degradation_reason": self.degradation_reason,
            "usage": dict(self.usage),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeterministicDetails:
        return cls(
            str(d["answer"]),
            bool(d["refused"]),
            str(d.get("generator", "")),
            tuple(dict(s) for s in d["sources"]),
            tuple(ContextShown.from_dict(c) for c in d["context"]),
            tuple(CheckResult.from_dict(c) for c in d["checks"]),
            bool(d.get("degraded", False)),
            d.get("degradation_reason"),
            dict(d.get("usage", {})),
        )
