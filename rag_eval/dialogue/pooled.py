"""Dialogue rates over a run: sums of per-dialogue numerators over sums of denominators.

Each dialogue case carries its own contribution to every dialogue rate
(``details["dialogue_rates"]``: numerator, denominator, what it left out and why), written
by the worker that replayed it. The controller adds them up here, so a rate over 40
dialogues is exactly the rate ``rag_eval.dialogue.metrics.compute_all`` gives over the 40
transcripts, whichever process replayed which dialogue, and never a mean of per-dialogue
values (a dialogue with 5 labelled turns weighs 5 times one with 1).

``n`` of a pooled rate is the number of dialogues whose contribution has a non-zero
denominator (the dialogues the rate rests on, what ``min_cases`` counts); dialogues left
out (not finished, student did not answer, material insufficient, not judged) are listed
under ``excluded`` by reason, never counted as successes or failures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_eval.dialogue.rate import Rate
from rag_eval.results.case import CaseResult
from rag_eval.tier_names import DIALOGUE, PASSK

TIER = DIALOGUE
RATES_KEY = "dialogue_rates"  # where a case keeps its contributions (details) and the results file the pooled rates

#: The fixed-name rates; clarification_failure_<L> and past_<L>_rounds carry the clarification limit.
FIXED_RATES: tuple[str, ...] = (
    "intent_accuracy",
    "missed_clarification_rate",
    "over_clarification_rate",
    "hint_level_accuracy",
    "hint_success",
    "interception_rate",
    "false_interception_rate",
    "final_leak_rate",
)
_LIMITED = re.compile(r"^(clarification_failure_([1-9][0-9]*)|past_([1-9][0-9]*)_rounds)$")
#: Rates where lower is better (the gate's "worst case" direction, a regression's "drop").
LOWER_RATES: frozenset[str] = frozenset(
    {"missed_clarification_rate", "over_clarification_rate", "false_interception_rate", "final_leak_rate"}
)


def is_rate(key: str) -> bool:
    """A dialogue rate name (``clarification_failure_<L>`` / ``past_<L>_rounds`` for any limit L >= 1)."""
    return key in FIXED_RATES or _LIMITED.match(key) is not None


def lower_is_better(key: str) -> bool:
    return key in LOWER_RATES or _LIMITED.match(key) is not None


def contributions(rates: Mapping[str, Rate]) -> dict[str, dict[str, Any]]:
    """One dialogue's rates as JSON primitives for its case's details."""
    return {
        name: {
            "numerator": r.numerator,
            "denominator": r.denominator,
            "excluded": {k: list(v) for k, v in r.excluded.items() if v},
            "errors": list(r.errors),
        }
        for name, r in rates.items()
    }


@dataclass(frozen=True)
class PooledRate:
    """``value`` = numerator / denominator over the dialogues, absent (None) when nothing was counted."""

    name: str
    numerator: float
    denominator: int
    n: int  # dialogues with a non-zero denominator
    dialogues: int  # dialogue cases measured (skips excluded)
    errors: int  # error cases in scope (replays that did not finish: left out of the denominator)
    excluded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    judge_errors: tuple[str, ...] = ()

    @property
    def value(self) -> float | None:
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "numerator": self.numerator,
            "denominator": self.denominator,
            "n": self.n,
            "dialogues": self.dialogues,
            "errors": self.errors,
            "excluded": {k: list(v) for k, v in sorted(self.excluded.items())},
            "judge_errors": list(self.judge_errors),
        }


def case_contribution(case: CaseResult, name: str) -> Mapping[str, Any] | None:
    rates = case.details.get(RATES_KEY)
    entry = rates.get(name) if isinstance(rates, Mapping) else None
    return entry if isinstance(entry, Mapping) else None


def pooled(cases: Sequence[CaseResult], name: str) -> PooledRate:
    """One rate over already-selected dialogue cases (``rag_eval.gates.aggregate.select``)."""
    numerator = 0.0
    denominator = 0
    n = 0
    excluded: dict[str, list[str]] = {}
    judge_errors: list[str] = []
    errors = 0
    for case in cases:
        if case.outcome == "error":
            errors += 1
            excluded.setdefault("not_finished", []).append(case.id)
        entry = case_contribution(case, name)
        if entry is None:
            continue
        numerator += float(entry.get("numerator") or 0)
        d = int(entry.get("denominator") or 0)
        denominator += d
        n += d > 0
        for reason, ids in (entry.get("excluded") or {}).items():
            bucket = excluded.setdefault(str(reason), [])
            bucket.extend(str(i) for i in ids if str(i) not in bucket)
        judge_errors.extend(str(i) for i in entry.get("errors") or ())
    return PooledRate(
        name,
        numerator,
        denominator,
        n,
        len(cases),
        errors,
        {k: tuple(sorted(v)) for k, v in excluded.items() if v},
        tuple(sorted(judge_errors)),
    )


def names_in(cases: Iterable[CaseResult]) -> list[str]:
    """Every rate some case contributed to, in the results' order (limits in ascending order)."""
    seen: set[str] = set()
    for case in cases:
        rates = case.details.get(RATES_KEY)
        if isinstance(rates, Mapping):
            seen.update(str(k) for k in rates)
    limits = sorted({int(m.group(2) or m.group(3)) for k in seen if (m := _LIMITED.match(k))})
    limited = [name for limit in limits for name in (f"clarification_failure_{limit}", f"past_{limit}_rounds")]
    order = [*FIXED_RATES[:3], *limited, *FIXED_RATES[3:]]
    return [k for k in order if k in seen] + sorted(seen - set(order))


def pooled_all(cases: Sequence[CaseResult]) -> dict[str, PooledRate]:
    """Every dialogue rate of the run's dialogue cases (skips excluded), by results key ``dialogue.<rate>``."""
    scoped = [c for c in cases if c.tier == TIER and c.outcome != "skip"]
    return {f"{TIER}.{name}": pooled(scoped, name) for name in names_in(scoped)}


def pulling(cases: Sequence[CaseResult], name: str, op: str) -> list[CaseResult]:
    """Dialogues that pull a rate the wrong way: errors first, then those whose own
    contribution is on the bad side (any miss for a higher-is-better rate, any hit for a
    lower-is-better one), the largest share first."""
    errors = sorted((c for c in cases if c.outcome == "error"), key=lambda c: c.id)
    bad: list[tuple[float, str, CaseResult]] = []
    for c in cases:
        entry = case_contribution(c, name)
        if c.outcome == "error" or entry is None or not entry.get("denominator"):
            continue
        num, den = float(entry.get("numerator") or 0), int(entry["denominator"])
        wrong = num if op == "max" else den - num
        if wrong > 0:
            bad.append((-wrong / den, c.id, c))
    return errors + [c for _, _, c in sorted(bad, key=lambda t: (t[0], t[1]))]


def passk_rates(cases: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    """PASS@k / PASS^k over dialogues from the passk tier's dialogue cases (METRICS.md):
    dialogues with at least one (every) passing replay ÷ dialogues with k finished replays;
    dialogues whose replays did not all finish are listed apart, not in the denominator."""
    scoped = [c for c in cases if c.tier == PASSK and c.details.get(DIALOGUE) and c.outcome != "skip"]
    out: dict[str, dict[str, Any]] = {}
    for k in sorted({int(c.details.get("k") or 0) for c in scoped} - {0}):
        at_k = [c for c in scoped if int(c.details.get("k") or 0) == k]
        done = [c for c in at_k if f"pass@{k}" in c.metrics]
        apart = {"not_finished": sorted(c.id for c in at_k if c not in done)}
        for name in (f"pass@{k}", f"pass^{k}"):
            numerator = sum(float(c.metrics[name]) for c in done)
            out[name] = {
                "value": numerator / len(done) if done else None,
                "numerator": numerator,
                "denominator": len(done),
                "n": len(done),
                "dialogues": len(at_k),
                "excluded": {r: ids for r, ids in apart.items() if ids},
            }
    return out


def dialogue_block(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """The results file's ``dialogue_rates`` block (absent without dialogue cases): every
    pooled rate by its ``dialogue.<rate>`` key, and ``passk`` over dialogues when it ran."""
    rates = {key: rate.to_dict() for key, rate in pooled_all(cases).items()}
    passk = passk_rates(cases)
    if passk:
        rates[PASSK] = passk
    return {RATES_KEY: rates} if rates else {}
