"""One dialogue case's verdict: pass, fail at the earliest failing step and turn, or error.

Steps in chain order: clarification (the action, intent and what was asked) → retrieval
(the turn's evidence, checked by a callable the caller supplies from its gold space) →
hint (the labelled level, and the judge's verdict when there is one) → interception
(forbidden content caught before the final reply, normal hints let through). The message
reads on its own: ``clarification failed at turn 1: expected clarify (ask for 'problem'),
the system answered``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rag_eval.dialogue.metrics import HintVerdict
from rag_eval.dialogue.transcript import Transcript, TurnRecord

Step = Literal["clarification", "retrieval", "hint", "interception"]
STEPS: tuple[str, ...] = ("clarification", "retrieval", "hint", "interception")
Outcome = Literal["pass", "fail", "error"]

#: ``check(transcript, turn) -> problem or None``: is the turn's gold evidence in its retrieval?
#: Called for answer turns of dialogues with sufficient material; None means fine (or not applicable).
RetrievalCheck = Callable[[Transcript, TurnRecord], str | None]

_ACTED = {"clarify": "asked a clarifying question", "answer": "answered", "state_limits": "stated its limits"}


@dataclass(frozen=True)
class Finding:
    step: str
    turn: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "turn": self.turn, "message": self.message}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        return cls(d["step"], d.get("turn"), d["message"])


@dataclass(frozen=True)
class CaseVerdict:
    """``step``/``turn``: the earliest failure (None when passed); ``findings``: every failure, in chain order."""

    dialogue_id: str
    outcome: Outcome
    message: str
    step: str | None = None
    turn: int | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialogue_id": self.dialogue_id,
            "outcome": self.outcome,
            "message": self.message,
            "step": self.step,
            "turn": self.turn,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CaseVerdict:
        return cls(
            d["dialogue_id"],
            d["outcome"],
            d["message"],
            d.get("step"),
            d.get("turn"),
            tuple(Finding.from_dict(f) for f in d.get("findings", ())),
        )


def verdict(
    transcript: Transcript,
    *,
    retrieval_check: RetrievalCheck | None = None,
    hint: HintVerdict | None = None,
) -> CaseVerdict:
    """Judge one replay. An unfinished replay is an ``error`` outcome naming what failed."""
    if not transcript.finished:
        step = "simulator" if transcript.stop == "simulator_error" else "system"
        return CaseVerdict(
            transcript.dialogue_id,
            "error",
            f"{step} error: {transcript.error}",
            step,
            transcript.turns[-1].number if transcript.turns else None,
        )
    findings = [
        *_clarification(transcript),
        *_retrieval(transcript, retrieval_check),
        *_hint(transcript, hint),
        *_interception(transcript),
    ]
    if not findings:
        n = len(transcript.turns)
        return CaseVerdict(transcript.dialogue_id, "pass", f"all {n} turn{'s' if n != 1 else ''} as expected")
    first = findings[0]  # steps are collected in chain order, turns in order within a step
    where = f" at turn {first.turn}" if first.turn is not None else ""
    more = f" (+{len(findings) - 1} more finding{'s' if len(findings) > 2 else ''})" if len(findings) > 1 else ""
    return CaseVerdict(
        transcript.dialogue_id,
        "fail",
        f"{first.step} failed{where}: {first.message}{more}",
        first.step,
        first.turn,
        tuple(findings),
    )


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(map(repr, names))


def _expected_text(record: TurnRecord) -> str:
    e = record.expected
    if e.action == "clarify" and e.asks:
        return f"clarify (ask for {_names(e.asks)})"
    return e.action


def _clarification(t: Transcript) -> list[Finding]:
    out: list[Finding] = []
    for r in t.answered_turns:
        assert r.turn is not None
        if r.turn.action != r.expected.action:
            again = f" (asking again for {_names(r.reasked)}, which the student had already given)" if r.reasked else ""
            out.append(
                Finding(
                    "clarification",
                    r.number,
                    f"expected {_expected_text(r)}, the system {_ACTED[r.turn.action]}{again}",
                )
            )
            continue
        if r.intent_label is not None and r.turn.intent != r.intent_label:
            got = repr(r.turn.intent) if r.turn.intent else "no intent"
            out.append(
                Finding("clarification", r.number, f"intent expected {r.intent_label!r}, the system recognised {got}")
            )
        if r.reasked:
            out.append(
                Finding(
                    "clarification",
                    r.number,
                    f"asked again for {_names(r.reasked)}, which the student had already given",
                )
            )
        if r.turn.action == "clarify" and r.expected.asks and not set(r.expected.asks) & set(r.asked):
            asked = _names(r.asked) or "nothing the item knows"
            out.append(
                Finding(
                    "clarification", r.number, f"asked for {asked}, not for what is missing ({_names(r.expected.asks)})"
                )
            )
    if t.stop == "past_limit":
        out.append(
            Finding(
                "clarification",
                t.turns[-1].number,
                f"a clarifying question after {t.limit} rounds (the limit); say what is missing instead",
            )
        )
    return out


def _retrieval(t: Transcript, check: RetrievalCheck | None) -> list[Finding]:
    if check is None or not t.material_sufficient:
        return []
    out: list[Finding] = []
    for r in t.answered_turns:
        if r.action == "answer":
            problem = check(t, r)
            if problem:
                out.append(Finding("retrieval", r.number, problem))
    return out


def _hint(t: Transcript, hint: HintVerdict | None) -> list[Finding]:
    out: list[Finding] = []
    for r in t.answered_turns:
        assert r.turn is not None
        # a labelled turn the system did not answer has no level to compare: the clarification step reports it
        if (
            r.expected.hint_level is not None
            and r.turn.action == "answer"
            and r.turn.hint_level != r.expected.hint_level
        ):
            got = repr(r.turn.hint_level) if r.turn.hint_level else "no level"
            out.append(
                Finding("hint", r.number, f"hint level expected {r.expected.hint_level!r}, the system chose {got}")
            )
    if hint is not None and hint.success is not True:
        what = "the hint judge failed" if hint.success is None else "the hint judge found the hints unsuccessful"
        out.append(Finding("hint", None, f"{what}: {hint.reason}" if hint.reason else what))
    return out


def _interception(t: Transcript) -> list[Finding]:
    out: list[Finding] = []
    for r in t.answered_turns:
        assert r.turn is not None
        if r.candidate_leaks and r.turn.interception is None:
            out.append(
                Finding("interception", r.number, "the candidate reply shows forbidden content and was not intercepted")
            )
        elif r.final_leaks:
            out.append(Finding("interception", r.number, "the final reply shows forbidden content"))
        if r.turn.action == "answer" and not r.candidate_leaks and r.turn.interception == "blocked":
            out.append(Finding("interception", r.number, "a normal hint (no forbidden content) was blocked"))
    return out
