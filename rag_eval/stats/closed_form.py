"""Closed-form intervals for one run: Wilson for a proportion of units, t for a mean of units.

Proportions (pass_rate, error_rate, hit@k, a check's pass rate) get the Wilson score
interval, which stays inside [0, 1] and is honest at k = 0 and k = n. Means of per-unit
values get the t interval where it agrees with the bootstrap (``bootstrap.py``); the tests
show where it does. Formulas in each docstring (STATISTICS.md of the project's steering docs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rag_eval.stats.distributions import check_confidence, t_quantile, two_sided_z
from rag_eval.stats.interval import Interval, no_interval


def wilson_interval(c: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for the proportion c/n at normal quantile z (1.96 ≈ 95 %).

    centre = (p + z²/2n) / (1 + z²/n), half = z·sqrt(p(1−p)/n + z²/4n²) / (1 + z²/n).
    At c = 0 the lower bound is exactly 0 and at c = n the upper bound exactly 1
    (centre ∓ half cancel algebraically); they are set explicitly because float rounding
    would otherwise give e.g. 0.9999999999999999 and put c/n outside its own interval.
    """
    if n <= 0:
        raise ValueError(f"wilson_interval: n={n} trials must be at least 1; there is no pass rate without trials")
    if not 0 <= c <= n:
        raise ValueError(f"wilson_interval: c={c} passing trials must be within 0..n={n}")
    if z < 0:
        raise ValueError(f"wilson_interval: z={z} must be non-negative (e.g. 1.96 for 95 %)")
    p = c / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if c == 0 else max(0.0, centre - half)
    high = 1.0 if c == n else min(1.0, centre + half)
    return low, high


def wilson(k: int, n: int, confidence: float = 0.95) -> Interval:
    """k of n units: estimate k/n with its Wilson interval at ``confidence``.

    se is the Wilson half-width divided by z, i.e. √(p(1−p)/n + z²/4n²)/(1 + z²/n): unlike
    the Wald √(p(1−p)/n) it is not 0 at k = 0 or k = n. n = 0: no estimate, said.
    """
    check_confidence(confidence)
    if n == 0:
        return no_interval(None, 0, confidence, "wilson", "n=0: no units to count")
    z = two_sided_z(confidence)
    low, high = wilson_interval(k, n, z)
    p = k / n
    se = math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n)) / (1.0 + z * z / n)
    return Interval(estimate=p, se=se, low=low, high=high, n=n, confidence=confidence, method="wilson")


def spread_reason(values: np.ndarray) -> str | None:
    """Why a mean of these per-unit values has no interval (n < 2, every value equal), or None."""
    n = int(values.size)
    if n < 2:
        return f"n={n}: an interval needs at least 2 units"
    if np.all(values == values[0]):
        return f"every one of the {n} values equals {float(values[0]):g}: the spread is unknown, not zero"
    return None


def t_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean of per-unit values ± t₍n−1, 1−α/2₎·s/√n, with se = s/√n (s with ddof = 1)."""
    check_confidence(confidence)
    x = np.asarray(values, dtype=float)
    mean = float(x.mean()) if x.size else None
    reason = spread_reason(x)
    if reason is not None:
        return no_interval(mean, int(x.size), confidence, "t", reason)
    assert mean is not None
    n = int(x.size)
    se = float(x.std(ddof=1)) / math.sqrt(n)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * se
    return Interval(estimate=mean, se=se, low=mean - half, high=mean + half, n=n, confidence=confidence, method="t")
