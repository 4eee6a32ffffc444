"""Aggregate per-case results into per-tier metrics, each with the n it rests on."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.gates import uncertainty
from rag_eval.stats.interval import Interval
from rag_eval.tiers.pooled import pooled


@dataclass(frozen=True)
class MetricValue:
    """A mean over ``n`` cases, of which ``errors`` errored and count as the worst value.

    A tier's run-level rate is a ratio of sums instead (``numerator`` / ``denominator`` over
    the cases' contributions, ``rag_eval.tiers.pooled``: the dialogue rates): ``n`` is the
    cases it rests on and the ``errors`` (e.g. replays that did not finish) are left out of
    it, listed apart."""

    value: float | None
    n: int
    errors: int = 0
    numerator: float | None = None
    denominator: int | None = None
    # its estimate is ``value``; None: not computed. Not part of equality: a MetricValue is its
    # value, n and errors; the interval is derived from the same cases (to_dict carries it).
    interval: Interval | None = dataclasses.field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"value": self.value, "n": self.n, "errors": self.errors}
        if self.denominator is not None:
            out.update(numerator=self.numerator, denominator=self.denominator)
        out.update(uncertainty.interval_fields(self.interval))
        return out


def metric_of(results: Mapping[str, Any], name: str) -> MetricValue:
    """Value, n and errors of a ``metrics`` key (e.g. 'retrieval.recall@5') of a results dict
    (its ``metrics_n``, what ``MetricValue.to_dict`` wrote); value None when not measured."""
    row = results["metrics_n"].get(name)
    if row is None:
        return MetricValue(None, 0)
    return MetricValue(row["value"], row["n"], row["errors"])


def metric_value(
    cases: Sequence[CaseResult], key: str, confidence: float = uncertainty.DEFAULT_CONFIDENCE
) -> MetricValue:
    """The value of one metric key over already-selected cases of one tier, with its
    interval at ``confidence`` (``rag_eval.gates.uncertainty``)."""
    mv, interval = _value_and_interval(cases, key, confidence)
    return dataclasses.replace(mv, interval=dataclasses.replace(interval, estimate=mv.value))


def select(cases: Iterable[CaseResult], tier: str, tags: Mapping[str, str] | None = None) -> list[CaseResult]:
    """Cases of one tier whose tags match every ``key=value`` of ``tags``."""
    out = []
    for c in cases:
        if c.tier != tier or c.outcome == "skip":
            continue
        if tags and any(str(c.tags.get(k, "")) != v for k, v in tags.items()):
            continue
        out.append(c)
    return out


def _value_and_interval(cases: Sequence[CaseResult], key: str, confidence: float) -> tuple[MetricValue, Interval]:
    errors = sum(1 for c in cases if c.outcome == "error")
    if key == "pass_rate":
        # A case the tier only measured (a retrieval negative under negative = "measure")
        # was never judged: it is neither a pass nor a fail (see measured_count).
        judged = [c for c in cases if not is_measured_only(c)]
        return _rate(judged, lambda c: c.outcome == "pass", errors, confidence)
    if key == "error_rate":
        return _rate(cases, lambda c: c.outcome == "error", errors, confidence)
    if key in uncertainty.COUNT_KEYS:
        mv = _count(cases, key, errors)
        return mv, uncertainty.count_interval(mv.value, mv.n, confidence)
    tier = _tier_of(cases)
    if tier is not None and tier.pools(key):
        rate = pooled(cases, key, tier.contribution)
        mv = MetricValue(rate.value, rate.n, rate.errors, rate.numerator, rate.denominator)
        return mv, uncertainty.of_pooled_rate(cases, key, tier.contribution, confidence)
    values = [float(c.metrics[key]) for c in cases if key in c.metrics]
    # Errors are never dropped from a denominator (dropping them makes scores rise as
    # things break): each error case that would have measured the metric counts as its
    # worst value.
    failed = errors_for(key, cases)
    worst = worst_value(key, tier.name if tier is not None else None)
    values += [worst] * failed
    mv = MetricValue(sum(values) / len(values) if values else None, len(values), failed)
    scoped = [c for c in cases if c.outcome != "error" or errors_for(key, [c])]
    return mv, uncertainty.of_values(uncertainty.per_case_values(scoped, key, worst, failed), confidence)


def _count(cases: Sequence[CaseResult], key: str, errors: int) -> MetricValue:
    if key == "measured_count":
        return MetricValue(float(sum(1 for c in cases if is_measured_only(c))), len(cases), errors)
    if key == "flaky_count":  # repeated trials: how many cases were flaky (0 < c < n)
        flags = [c.metrics["flaky"] for c in cases if "flaky" in c.metrics]
        return MetricValue(float(sum(flags)), len(flags), errors)
    return MetricValue(float(sum(1 for c in cases if c.outcome != "pass")), len(cases), errors)


def _tier_of(cases: Sequence[CaseResult]) -> tiers.Tier | None:
    """The tier of already-selected cases (one tier's), None for none."""
    return tiers.of(cases[0].tier) if cases else None


def lower_is_better(key: str, tier: str | None = None) -> bool:
    """A metric key (without its tier) where lower is better, as its tier declares it
    (``Tier.lower_is_better``): the worst value of an errored case is 1, and a regression's
    "drop" is a rise. Without ``tier`` (or a name no tier registered, e.g. ``regression``): as
    any registered tier declares it."""
    if tier is not None and tier in tiers.names():
        return tiers.get(tier).lower_is_better(key)
    return any(t.lower_is_better(key) for t in tiers.all_tiers())


def is_measured_only(case: CaseResult) -> bool:
    """True for a case whose tier measured it but had no pass condition to judge it by."""
    return tiers.of(case.tier).measured_only(case.details)


def worst_value(key: str, tier: str | None = None) -> float:
    """What an errored case counts as: 0 for a higher-is-better metric, 1 otherwise."""
    return 1.0 if lower_is_better(key, tier) else 0.0


def errors_for(key: str, cases: Sequence[CaseResult]) -> int:
    """Error cases that would have measured ``key``, as their tier says (``Tier.counts_error``:
    a retrieval negative measures only negative.*)."""
    return sum(1 for c in cases if c.outcome == "error" and tiers.of(c.tier).counts_error(c, key))


def _rate(
    cases: Sequence[CaseResult], pred: Callable[[CaseResult], bool], errors: int, confidence: float
) -> tuple[MetricValue, Interval]:
    n = len(cases)
    hits = sum(1 for c in cases if pred(c))
    return MetricValue(hits / n if n else None, n, errors), uncertainty.proportion(hits, n, confidence)


def aggregate_tier(
    cases: Sequence[CaseResult], tier: str, confidence: float = uncertainty.DEFAULT_CONFIDENCE
) -> dict[str, MetricValue]:
    """Every metric any case of the tier measured, plus pass and error rates."""
    scoped = select(cases, tier)
    keys = sorted({k for c in scoped for k in c.metrics})
    keys += tiers.of(tier).pooled_names(scoped)  # run-level rates: pooled, not averaged per case
    out = {f"{tier}.{k}": metric_value(scoped, k, confidence) for k in keys}
    out[f"{tier}.pass_rate"] = metric_value(scoped, "pass_rate", confidence)
    if any(is_measured_only(c) for c in scoped):
        out[f"{tier}.measured_count"] = metric_value(scoped, "measured_count", confidence)
    out[f"{tier}.error_rate"] = metric_value(scoped, "error_rate", confidence)
    return out


def aggregate_all(
    cases: Sequence[CaseResult], confidence: float = uncertainty.DEFAULT_CONFIDENCE
) -> dict[str, MetricValue]:
    out: dict[str, MetricValue] = {}
    for t in sorted({c.tier for c in cases}):
        out.update(aggregate_tier(cases, t, confidence))
    return out


def outcome_counts(cases: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for c in cases:
        row = out.setdefault(c.tier, {"pass": 0, "fail": 0, "error": 0, "skip": 0})
        row[c.outcome] = row.get(c.outcome, 0) + 1
    return out
