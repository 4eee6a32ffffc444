"""Pearson's r and Spearman's ρ, and a percentile bootstrap of either over clustered units.

r = Σ(xᵢ − x̄)(yᵢ − ȳ) / √(Σ(xᵢ − x̄)² · Σ(yᵢ − ȳ)²); ρ = r of the tie-averaged ranks.
Either is ``None`` when a side is constant (no variation to correlate), never 0.

The bootstrap resamples *units*, each carrying all its pairs: in a meta-evaluation an
instance's one judge score is paired with each of its annotators' labels, and those pairs
are not independent, so the instance is what is drawn (STATISTICS.md of the project's steering docs,
"Units and clustering"). Seeded from the content (``bootstrap.content_digest``), so the same
pairs give the same interval on every machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import numpy as np

from rag_eval.stats.bootstrap import MIN_RESAMPLES, check_resamples, content_digest, replicate_interval
from rag_eval.stats.distributions import check_confidence
from rag_eval.stats.interval import Interval, no_interval

Method = Literal["pearson", "spearman"]
Pairs = Sequence[tuple[float, float]]
Values = Sequence[float] | np.ndarray


def _pair(x: Values, y: Values, func: str) -> tuple[np.ndarray, np.ndarray]:
    if len(x) != len(y):
        raise ValueError(f"{func}: {len(x)} values against {len(y)}; pair them one to one")
    if len(x) == 0:
        raise ValueError(f"{func}: no paired values")
    return np.asarray(x, dtype=float), np.asarray(y, dtype=float)


def _r(x: np.ndarray, y: np.ndarray) -> float | None:
    dx, dy = x - x.mean(), y - y.mean()
    denom = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    if denom == 0.0:
        return None
    return float(np.clip((dx * dy).sum() / denom, -1.0, 1.0))


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties given the mean of the ranks they span."""
    order = np.argsort(x, kind="mergesort")
    out = np.empty(x.size, dtype=float)
    out[order] = np.arange(1, x.size + 1, dtype=float)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=out)
    return np.asarray((sums / counts)[inverse], dtype=float)


def pearson(x: Values, y: Values) -> float | None:
    """Pearson's r (module doc); None when either side is constant."""
    return _r(*_pair(x, y, "pearson"))


def spearman(x: Values, y: Values) -> float | None:
    """Spearman's ρ = Pearson's r of the tie-averaged ranks; None when either side is constant."""
    a, b = _pair(x, y, "spearman")
    return _r(ranks(a), ranks(b))


_BLOCK = 250  # resamples computed at once: a (250, pairs) weight matrix


def _weighted_ranks(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per row of weights ``w`` (B, P): the tie-averaged rank each pair's x has in the multiset
    where pair j appears w[b, j] times (a resample drawn with replacement, as counts)."""
    distinct, inverse = np.unique(x, return_inverse=True)
    per_value = w @ np.eye(distinct.size)[inverse]  # (B, K): how many copies of each distinct value
    below = np.cumsum(per_value, axis=1) - per_value
    return np.asarray((below + (per_value + 1.0) / 2.0)[:, inverse], dtype=float)


def _weighted_r(w: np.ndarray, x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    """Pearson's r (of the ranks for Spearman) of each weighted row; NaN where a side is constant.

    A pair drawn k times weighs k: the same r as over the resample written out in full."""
    a, b = (_weighted_ranks(w, x), _weighted_ranks(w, y)) if method == "spearman" else (x[None, :], y[None, :])
    total = w.sum(axis=1, keepdims=True)
    da = a - (w * a).sum(axis=1, keepdims=True) / total
    db = b - (w * b).sum(axis=1, keepdims=True) / total
    cov, va, vb = (w * da * db).sum(axis=1), (w * da * da).sum(axis=1), (w * db * db).sum(axis=1)
    drawn = w > 0
    varies = _varies(drawn, np.broadcast_to(a, w.shape)) & _varies(drawn, np.broadcast_to(b, w.shape))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(varies, cov / np.sqrt(va * vb), np.nan)
    return np.clip(r, -1.0, 1.0)


def _varies(drawn: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per row: do the drawn pairs' values differ (not one value throughout)?"""
    return np.asarray(np.where(drawn, v, np.inf).min(axis=1) < np.where(drawn, v, -np.inf).max(axis=1))


CORRELATIONS: dict[str, Callable[[Values, Values], float | None]] = {
    "pearson": pearson,
    "spearman": spearman,
}


def bootstrap_correlation(
    units: Mapping[str, Pairs],
    method: Method,
    confidence: float = 0.95,
    resamples: int = MIN_RESAMPLES,
) -> Interval:
    """The correlation over every pair of every unit, with a percentile bootstrap over units.

    θ̂ = corr over all pairs; B resamples of the n units with replacement (each drawn unit
    brings all its pairs) → θ̂*₁…θ̂*_B; interval = [q_{α/2}, q_{1−α/2}], se = sd(θ̂*). A
    resample whose correlation is undefined (a constant side) is left out of the quantiles;
    the interval is absent (and says why) when θ̂ is undefined, n < 2, or more than half of
    the resamples are undefined.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    if method not in CORRELATIONS:
        raise ValueError(f"bootstrap_correlation: method={method!r} must be one of {', '.join(CORRELATIONS)}")
    func = CORRELATIONS[method]
    ids = sorted(units)
    groups = [np.asarray(units[k], dtype=float).reshape(-1, 2) for k in ids]
    if not groups or any(g.size == 0 for g in groups):
        empty = next((k for k, g in zip(ids, groups) if g.size == 0), None)
        raise ValueError(f"bootstrap_correlation: unit {empty!r} has no pairs" if empty else "no units")
    pooled = np.concatenate(groups)
    estimate = func(pooled[:, 0], pooled[:, 1])
    n = len(groups)
    if estimate is None:
        return no_interval(None, n, confidence, "bootstrap", "a side is constant: the correlation is undefined")
    if n < 2:
        return no_interval(estimate, n, confidence, "bootstrap", "fewer than 2 units")
    digest = content_digest({k: [tuple(p) for p in g.tolist()] for k, g in zip(ids, groups)})
    rng = np.random.default_rng(int.from_bytes(digest[:8], "big"))
    unit_of = np.repeat(np.arange(n), [len(g) for g in groups])
    values: list[float] = []
    done = 0
    while done < resamples:
        b = min(_BLOCK, resamples - done)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=b)  # how often each unit is drawn
        r = _weighted_r(counts[:, unit_of].astype(float), pooled[:, 0], pooled[:, 1], method)
        values.extend(float(v) for v in r[~np.isnan(r)])
        done += b
    if len(values) * 2 < resamples:
        return no_interval(estimate, n, confidence, "bootstrap", "most resamples have a constant side")
    return replicate_interval(estimate, np.asarray(values), n, confidence, "bootstrap")
