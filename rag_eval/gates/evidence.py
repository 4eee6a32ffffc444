"""A tier gate's statistics: its interval, the rule that decided it, and the smallest drop it can see.

``decide`` applies the gate's rule (``stats.floors``: estimate, clearly_below,
clearly_above) to the metric's interval; under ``estimate`` the verdict is the point
estimate's, as before intervals. ``detectable`` is the minimum detectable drop at 80 %
power and one-sided alpha 0.05 from the run's own variance (no baseline): √(p(1 − p))
for a proportion, the standard deviation of the per-unit values otherwise (se·√n).
"""

from __future__ import annotations

import math
from typing import Any, cast

from rag_eval.gates.aggregate import MetricValue
from rag_eval.gates.thresholds import Gate
from rag_eval.gates.uncertainty import interval_fields
from rag_eval.stats.floors import FloorKind, Rule, decide_floor
from rag_eval.stats.interval import Interval, no_interval
from rag_eval.stats.power import Detectable, mde_no_baseline

MDE_ALPHA = 0.05
MDE_POWER = 0.8


def detectable(interval: Interval) -> Detectable | str:
    """The gate's minimum detectable drop, or why there is none."""
    n = interval.n
    if interval.estimate is None or n < 2:
        return f"n={n}: a detectable drop needs at least 2 units"
    if interval.method == "wilson":
        p = interval.estimate
        if p in (0.0, 1.0):
            return f"every one of the {n} units is {p:g}: no spread seen, the detectable drop is unknown"
        return mde_no_baseline(n, p=p, alpha=MDE_ALPHA, power=MDE_POWER)
    if interval.se is None:
        return interval.reason or "no spread: the detectable drop is unknown"
    return mde_no_baseline(n, sd=interval.se * math.sqrt(n), alpha=MDE_ALPHA, power=MDE_POWER)


def tier_evidence(gate: Gate, mv: MetricValue, confidence: float) -> tuple[bool, dict[str, Any]]:
    """The verdict of ``gate`` on ``mv`` by its rule, and the gate row's statistics."""
    interval = mv.interval or no_interval(mv.value, mv.n, confidence, "count", "no interval computed")
    floor = decide_floor(interval, gate.threshold, cast(FloorKind, gate.op), cast(Rule, gate.decide))
    out: dict[str, Any] = {**interval_fields(interval), "decide": gate.decide, "decision": floor.sentence}
    seen = detectable(interval)
    if isinstance(seen, Detectable):
        out["mde"] = seen.drop
        out["mde_note"] = seen.sentence()
    else:
        out["mde_note"] = seen
    return floor.passed, out
