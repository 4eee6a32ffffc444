"""The dialogue tier over a run: its rates pooled over the dialogues (``rag_eval.tiers.pooled``)
from each case's contributions, and the results file's ``dialogue_rates`` block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.dialogue.pooled import RATES_KEY, names_in
from rag_eval.tiers.base import Contribution
from rag_eval.tiers.pooled import pooled


def shares(case: CaseResult) -> Mapping[str, Any]:
    """A dialogue case's contributions by rate name (``DialogueDetails.dialogue_rates``)."""
    rates = case.details.get(RATES_KEY)
    return rates if isinstance(rates, Mapping) else {}


def contribution(case: CaseResult, name: str) -> Contribution | None:
    entry = shares(case).get(name)
    if not isinstance(entry, Mapping):
        return None
    excluded = entry.get("excluded") or {}
    return Contribution(
        float(entry.get("numerator") or 0),
        int(entry.get("denominator") or 0),
        {str(reason): tuple(str(i) for i in ids) for reason, ids in excluded.items()},
        tuple(str(i) for i in entry.get("errors") or ()),
    )


def rate_names(cases: Sequence[CaseResult]) -> list[str]:
    """Every rate some of these dialogue cases contributed to, in the results' order."""
    return names_in(shares(c) for c in cases)


def rates_block(cases: Sequence[CaseResult], tier: str) -> dict[str, Any]:
    """``{"dialogue_rates": {"<tier>.<rate>": pooled rate}}`` over ``cases`` (one tier's,
    skips left out), absent without a rate."""
    scoped = [c for c in cases if c.tier == tier and c.outcome != "skip"]
    rates = {f"{tier}.{name}": pooled(scoped, name, contribution).to_dict() for name in rate_names(scoped)}
    return {RATES_KEY: rates} if rates else {}
