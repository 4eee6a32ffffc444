"""The two quantile functions the intervals need, without scipy: normal and Student t.

The normal quantile is the standard library's (``statistics.NormalDist().inv_cdf``,
Acklam-quality, ~1e-15). Student's t with an integer number of degrees of freedom ν has a
closed-form CDF (Abramowitz & Stegun 26.7.3–26.7.4, a finite sum in θ = atan(t/√ν)); its
quantile is found by bisection on that CDF. ν is always n − 1 here, an integer.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_NORMAL = NormalDist()


def normal_quantile(p: float) -> float:
    """Φ⁻¹(p) for 0 < p < 1 (e.g. normal_quantile(0.975) = 1.959963…)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"normal_quantile: p={p} must be strictly between 0 and 1")
    return _NORMAL.inv_cdf(p)


def normal_cdf(x: float) -> float:
    """Φ(x)."""
    return _NORMAL.cdf(x)


def two_sided_z(confidence: float) -> float:
    """z = Φ⁻¹(1 − α/2) for a two-sided interval at ``confidence`` = 1 − α (0.95 → 1.96)."""
    check_confidence(confidence)
    return normal_quantile(0.5 + confidence / 2.0)


def check_confidence(confidence: float) -> None:
    """A confidence level must lie strictly between 0 and 1 (0.95, not 95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(
            f"confidence={confidence} must be strictly between 0 and 1; write 0.95 for a 95 % interval"
        )


def t_cdf(t: float, df: int) -> float:
    """P(T ≤ t) for Student's t with integer df ≥ 1 (A&S 26.7.3/26.7.4).

    With θ = atan(t/√ν) and c = cos²θ, A(t|ν) = P(|T| < |t|) is
    ν odd:  (2/π)·(θ + sinθ·cosθ·(1 + (2/3)c + (2·4)/(3·5)c² + … up to c^((ν−3)/2)))  (ν = 1: 2θ/π),
    ν even: sinθ·(1 + (1/2)c + (1·3)/(2·4)c² + … up to c^((ν−2)/2)),
    and P(T ≤ t) = (1 + sign(t)·A)/2.
    """
    if df < 1:
        raise ValueError(f"t_cdf: df={df} must be at least 1")
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 1:
        total, term = 0.0, 1.0
        if df > 1:
            total = 1.0
            for k in range(1, (df - 3) // 2 + 1):
                term *= c * (2 * k) / (2 * k + 1)
                total += term
        a = (2.0 / math.pi) * (theta + s * math.cos(theta) * total)
    else:
        total, term = 1.0, 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c * (2 * k - 1) / (2 * k)
            total += term
        a = s * total
    return 0.5 + math.copysign(a, t) / 2.0


def t_quantile(p: float, df: int) -> float:
    """The t value with P(T ≤ t) = p, by bisection on ``t_cdf`` to ~1e-12 (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile: p={p} must be strictly between 0 and 1")
    if p == 0.5:
        return 0.0
    target = max(p, 1.0 - p)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < target:
        low, high = high, high * 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < target:
            low = mid
        else:
            high = mid
        if high - low < 1e-13 * max(1.0, high):
            break
    q = (low + high) / 2.0
    return q if p > 0.5 else -q
