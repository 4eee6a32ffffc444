"""A dialogue case's typed details (``$defs/dialogueDetails``, ``$defs/dialoguePasskDetails``):
the transcript, the verdict, the rate contributions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval.dialogue.pooled import RATES_KEY
from rag_eval.tiers.passk.details import TrialOutcome


@dataclass(frozen=True)
class DialogueDetails:
    """A dialogue case's ``details`` (schema ``$defs/dialogueDetails``). ``usage`` is written
    when the case made model calls (LLM student, hint judge); ``hint_verdict`` only when a
    judge is configured (``judged``), and then null when the judge gave no verdict."""

    transcript: Mapping[str, Any]  # transcript_details(): retrieved texts shortened, per-stage lists left out
    verdict: Mapping[str, Any]  # CaseVerdict.to_dict()
    evidence: tuple[Mapping[str, Any], ...]
    clarification_limit: int
    simulator: str
    calls: Mapping[str, int]
    dialogue_rates: Mapping[str, Any]  # this dialogue's numerator/denominator of every rate (RATES_KEY)
    usage: Mapping[str, Any] | None = None
    hint_verdict: Mapping[str, Any] | None = None
    judged: bool = False  # not written: whether hint_verdict is

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "transcript": dict(self.transcript),
            "verdict": dict(self.verdict),
            "evidence": [dict(e) for e in self.evidence],
            "clarification_limit": self.clarification_limit,
            "simulator": self.simulator,
            "calls": dict(self.calls),
            RATES_KEY: dict(self.dialogue_rates),
        }
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        if self.judged:
            out["hint_verdict"] = dict(self.hint_verdict) if self.hint_verdict is not None else None
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DialogueDetails:
        return cls(
            dict(d["transcript"]),
            dict(d["verdict"]),
            tuple(d["evidence"]),
            int(d["clarification_limit"]),
            str(d["simulator"]),
            dict(d["calls"]),
            dict(d[RATES_KEY]),
            d.get("usage"),
            d.get("hint_verdict"),
            "hint_verdict" in d,
        )


@dataclass(frozen=True)
class DialoguePasskDetails:
    """A dialogue's passk case's ``details`` (schema ``$defs/dialoguePasskDetails``: the
    passk fields, each replay a trial, plus the replays' cost). ``c`` and ``cls`` (JSON
    ``class``) are absent when a replay did not finish."""

    trials: tuple[TrialOutcome, ...]
    n: int
    k: int
    trials_run: int
    not_finished: int
    calls: Mapping[str, int]
    simulator: str | None = None
    clarification_limit: int | None = None
    usage: Mapping[str, Any] | None = None
    c: int | None = None
    cls: str | None = None
    deterministic_generator: bool = False  # a student and a tutor: never one replay for all
    dialogue: bool = True  # a dialogue's replays, not a golden item's trials

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dialogue": self.dialogue,
            "trials": [t.to_dict() for t in self.trials],
            "n": self.n,
            "k": self.k,
            "trials_run": self.trials_run,
            "deterministic_generator": self.deterministic_generator,
            "not_finished": self.not_finished,
            "calls": dict(self.calls),
        }
        optional = {
            "simulator": self.simulator,
            "clarification_limit": self.clarification_limit,
            "usage": dict(self.usage) if self.usage is not None else None,
            "c": self.c,
            "class": self.cls,
        }
        out.update((key, value) for key, value in optional.items() if value is not None)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DialoguePasskDetails:
        return cls(
            tuple(TrialOutcome.from_dict(t) for t in d["trials"]),
            int(d["n"]),
            int(d["k"]),
            int(d["trials_run"]),
            int(d["not_finished"]),
            dict(d["calls"]),
            d.get("simulator"),
            d.get("clarification_limit"),
            d.get("usage"),
            d.get("c"),
            d.get("class"),
            bool(d.get("deterministic_generator", False)),
        )
