"""A passk case's typed details (``$defs/passkDetails``, ``$defs/trial``): every trial and the
class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class TrialOutcome:
    trial: int
    outcome: str  # pass | fail | error | skip, as the trial's tier decided
    failed_stage: str | None
    message: str
    answer: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrialOutcome:
        return cls(int(d["trial"]), str(d["outcome"]), d.get("failed_stage"), str(d["message"]), str(d["answer"]))


@dataclass(frozen=True)
class PasskDetails:
    """A golden item's passk case's ``details`` (schema ``$defs/passkDetails``; the JSON key
    of ``cls`` is ``class``). ``c`` and ``cls`` are absent when a trial errored."""

    trials: tuple[TrialOutcome, ...]
    n: int
    k: int
    trials_run: int
    deterministic_generator: bool
    usage: Mapping[str, Any] | None = None
    c: int | None = None
    cls: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trials": [t.to_dict() for t in self.trials],
            "n": self.n,
            "k": self.k,
            "trials_run": self.trials_run,
            "deterministic_generator": self.deterministic_generator,
        }
        if self.usage:  # the judge calls of every trial, attributed to this passk case (run.usage sums these)
            out["usage"] = dict(self.usage)
        if self.c is not None:
            out["c"] = self.c
        if self.cls is not None:
            out["class"] = self.cls
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PasskDetails:
        return cls(
            tuple(TrialOutcome.from_dict(t) for t in d["trials"]),
            int(d["n"]),
            int(d["k"]),
            int(d.get("trials_run", len(d["trials"]))),
            bool(d.get("deterministic_generator", False)),
            d.get("usage"),
            d.get("c"),
            d.get("class"),
        )
