"""A tier's run-level rates: sums of per-case numerators over sums of denominators.

A tier that pools a rate (:meth:`Tier.pools`, e.g. the dialogue tier's rates over turns)
gives each case's part of it (:meth:`Tier.contribution`), written by the worker that ran
the case. The controller adds them up here, so a rate over 40 cases is exactly the ratio
over their 40 contributions, whichever process ran which case, and never a mean of
per-case values (a dialogue with 5 labelled turns weighs 5 times one with 1).

``n`` of a pooled rate is the number of cases whose contribution has a non-zero
denominator (what ``min_cases`` counts); cases left out (e.g. a dialogue that did not
finish) are listed under ``excluded`` by reason, never counted as successes or failures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.tiers.base import Contribution

ContributionOf = Callable[[CaseResult, str], Contribution | None]


@dataclass(frozen=True)
class PooledRate:
    """``value`` = numerator / denominator over the cases, absent (None) when nothing was counted."""

    name: str
    numerator: float
    denominator: int
    n: int  # cases with a non-zero denominator
    dialogues: int  # cases measured (skips excluded); the results file's name for them
    errors: int  # error cases in scope (left out of the denominator)
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


def pooled(cases: Sequence[CaseResult], name: str, contribution: ContributionOf) -> PooledRate:
    """One rate over already-selected cases of one tier (``rag_eval.gates.aggregate.select``)."""
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
        entry = contribution(case, name)
        if entry is None:
            continue
        numerator += entry.numerator
        denominator += entry.denominator
        n += entry.denominator > 0
        for reason, ids in entry.excluded.items():
            bucket = excluded.setdefault(reason, [])
            bucket.extend(i for i in ids if i not in bucket)
        judge_errors.extend(entry.errors)
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


def pulling(cases: Sequence[CaseResult], name: str, op: str, contribution: ContributionOf) -> list[CaseResult]:
    """Cases that pull a rate the wrong way: errors first, then those whose own
    contribution is on the bad side (any miss for a higher-is-better rate, any hit for a
    lower-is-better one), the largest share first."""
    errors = sorted((c for c in cases if c.outcome == "error"), key=lambda c: c.id)
    bad: list[tuple[float, str, CaseResult]] = []
    for c in cases:
        entry = contribution(c, name)
        if c.outcome == "error" or entry is None or not entry.denominator:
            continue
        wrong = entry.numerator if op == "max" else entry.denominator - entry.numerator
        if wrong > 0:
            bad.append((-wrong / entry.denominator, c.id, c))
    return errors + [c for _, _, c in sorted(bad, key=lambda t: (t[0], t[1]))]


def units(cases: Sequence[CaseResult], name: str, contribution: ContributionOf) -> dict[str, tuple[float, float]]:
    """Each contributing case's (numerator, denominator) by case key: the units a ratio
    bootstrap resamples whole."""
    out: dict[str, tuple[float, float]] = {}
    for c in cases:
        entry = contribution(c, name)
        if entry is not None:
            out[c.key] = (entry.numerator, float(entry.denominator))
    return out
