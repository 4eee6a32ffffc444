"""The interval of every aggregate: which estimator fits which metric, over which units.

- a proportion of cases (pass_rate, error_rate, a metric whose per-case values are all
  0 or 1 such as hit@k or a check's pass flag): Wilson;
- a tier's pooled run-level rate (the dialogue rates: turns inside dialogues): the ratio
  estimator with each case's contribution resampled whole (``stats.bootstrap.bootstrap_ratio``);
- any other mean over cases (recall@k, MRR, nDCG, judge scores, a passk case's rate):
  the content-seeded bootstrap over cases (a case's trials or turns stay inside it);
- a count (fail_count, flaky_count, measured_count) is not an estimate: no interval, said.

Errors count as the metric's worst value here as in the value itself
(``aggregate.metric_value``), so the interval is around the number the gate decides on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.stats.bootstrap import bootstrap_mean, bootstrap_ratio
from rag_eval.stats.closed_form import wilson
from rag_eval.stats.interval import Interval, no_interval
from rag_eval.tiers.pooled import ContributionOf
from rag_eval.tiers.pooled import units as pooled_units

DEFAULT_CONFIDENCE = 0.95
COUNT_KEYS = frozenset({"fail_count", "flaky_count", "measured_count"})
# the results file's names of the methods (``ci_method``)
METHOD_NAMES = {"wilson": "wilson", "bootstrap": "bootstrap", "ratio_bootstrap": "ratio-bootstrap", "t": "t"}


def per_case_values(cases: Sequence[CaseResult], key: str, worst: float, errors: int) -> dict[str, float]:
    """Each measuring case's value by case key; errored cases (``errors`` of them, as the
    value counts them) at ``worst``."""
    out = {c.key: float(c.metrics[key]) for c in cases if c.outcome != "error" and key in c.metrics}
    erred = [c for c in cases if c.outcome == "error"][:errors]
    out.update({c.key: worst for c in erred})
    return out


def count_interval(value: float | None, n: int, confidence: float) -> Interval:
    return no_interval(value, n, confidence, "count", "a count of cases, not an estimate: it has no interval")


def proportion(k: int, n: int, confidence: float) -> Interval:
    return wilson(k, n, confidence)


def of_values(values: dict[str, float], confidence: float) -> Interval:
    """Wilson when every value is 0 or 1 (a proportion of cases), else the bootstrap over cases."""
    if not values:
        return no_interval(None, 0, confidence, "bootstrap", "n=0: no case measured it")
    if all(v in (0.0, 1.0) for v in values.values()):
        return wilson(int(sum(values.values())), len(values), confidence)
    return bootstrap_mean(values, confidence)


def of_pooled_rate(cases: Sequence[CaseResult], key: str, contribution: ContributionOf, confidence: float) -> Interval:
    """A run-level rate's interval (``rag_eval.tiers.pooled``), each case's contribution
    (a dialogue) resampled whole."""
    units = pooled_units(cases, key, contribution)
    if not units:
        return no_interval(None, 0, confidence, "ratio_bootstrap", "no case contributed to this rate")
    return bootstrap_ratio(units, confidence)


def interval_fields(interval: Interval | None) -> dict[str, Any]:
    """The results file's keys: ``se``, ``ci`` or ``ci_note``, ``ci_method``, ``confidence``."""
    if interval is None:
        return {}
    out: dict[str, Any] = {"confidence": interval.confidence}
    if interval.method in METHOD_NAMES:
        out["ci_method"] = METHOD_NAMES[interval.method]
    if interval.se is not None:
        out["se"] = interval.se
    if interval.low is not None and interval.high is not None:
        out["ci"] = [interval.low, interval.high]
    else:
        out["ci_note"] = interval.reason or "no interval"
    return out


def interval_of_row(row: Any, value: float | None, n: int) -> Interval | None:
    """The Interval behind a ``metrics_n`` row written by ``interval_fields`` (None: no keys)."""
    if "confidence" not in row:
        return None
    names = {v: k for k, v in METHOD_NAMES.items()}
    method = names.get(str(row.get("ci_method")), "count")
    ci = row.get("ci")
    low, high = (ci[0], ci[1]) if ci else (None, None)
    return Interval(value, row.get("se"), low, high, n, row["confidence"], method, row.get("ci_note"))
