"""The dialogue rates' names, directions and per-dialogue contributions.

Each dialogue case carries its own contribution to every dialogue rate
(``details["dialogue_rates"]``: numerator, denominator, what it left out and why), written
by the worker that replayed it. The dialogue tier pools them over the run
(``rag_eval.tiers.pooled``), so a rate over 40 dialogues is exactly the rate
``rag_eval.dialogue.metrics.compute_all`` gives over the 40 transcripts, whichever
process replayed which dialogue. Dialogues left out (not finished, student did not
answer, material insufficient, not judged) are listed under ``excluded`` by reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from rag_eval.dialogue.rate import Rate

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


def names_in(shares: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every rate some dialogue contributed to (each dialogue's ``contributions``), in the
    results' order (limits in ascending order)."""
    seen: set[str] = set()
    for rates in shares:
        seen.update(str(k) for k in rates)
    limits = sorted({int(m.group(2) or m.group(3)) for k in seen if (m := _LIMITED.match(k))})
    limited = [name for limit in limits for name in (f"clarification_failure_{limit}", f"past_{limit}_rounds")]
    order = [*FIXED_RATES[:3], *limited, *FIXED_RATES[3:]]
    return [k for k in order if k in seen] + sorted(seen - set(order))
