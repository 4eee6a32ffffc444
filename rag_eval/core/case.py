"""Per-case results: what one golden item's case measured, and how it ended.

These cross from xdist workers to the controller as JSON (on the test report), so
every value is a JSON primitive: a case equals its JSON round trip, which is what lets a
serial run hand the case over in process and still give the numbers of ``-n 2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["pass", "fail", "error", "skip"]
OUTCOMES: tuple[str, ...] = ("pass", "fail", "error", "skip")
USER_PROPERTY = "rag_eval_case"


@dataclass(frozen=True)
class CaseResult:
    id: str
    tier: str
    outcome: Outcome
    failed_stage: str | None = None
    message: str = ""
    metrics: Mapping[str, float] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    split: str = "tune"
    negative: bool = False
    duration: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        # Shallow on purpose: values are already JSON primitives, and asdict's deep copy
        # cost ~0.75 ms per case (bench/gate_overhead.py).
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["metrics"] = dict(self.metrics)
        d["tags"] = dict(self.tags)
        d["details"] = dict(self.details)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CaseResult:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    @property
    def key(self) -> str:
        return f"{self.tier}::{self.id}"


def case_key(case: Mapping[str, Any]) -> str:
    """``tier::id``, the key of a case (a results file's case dict) across files, as
    ``CaseResult.key``."""
    return f"{case['tier']}::{case['id']}"
