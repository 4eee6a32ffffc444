"""The two quantile functions the intervals need, without scipy: normal and Student t.

The normal quantile is the standard library's (``statistics.NormalDist().inv_cdf``,
Acklam-quality, ~1e-15). Student's t with an integer number of degrees of freedom ν has a
closed-form CDF (Abramowitz & Stegun 26.7.3–26.7.4, a finite sum in θ = atan(t/√ν)); its
quantile is found by bisection on that CDF, or above 200 degrees of freedom from the
Cornish-Fisher series (A&S 26.7.5). ν is always n − 1 here, an integer.
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
        raise ValueError(f"confidence={confidence} must be strictly between 0 and 1; write 0.95 for a 95 % interval")


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


# Above this many degrees of freedom the Cornish-Fisher series is exact to ~1e-12 and the
# finite sum of t_cdf (ν/2 terms per call) would make a large run's t interval slow.
_EXPANSION_DF = 200


def _t_quantile_expansion(p: float, df: int) -> float:
    """A&S 26.7.5: t ≈ z + g₁/ν + g₂/ν² + g₃/ν³ + g₄/ν⁴ with z = Φ⁻¹(p),
    g₁ = (z³ + z)/4, g₂ = (5z⁵ + 16z³ + 3z)/96, g₃ = (3z⁷ + 19z⁵ + 17z³ − 15z)/384,
    g₄ = (79z⁹ + 776z⁷ + 1482z⁵ − 1920z³ − 945z)/92160."""
    z = normal_quantile(p)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def t_quantile(p: float, df: int) -> float:
    """The t value with P(T ≤ t) = p (0 < p < 1): bisection on ``t_cdf`` to ~1e-12 up to
    200 degrees of freedom, the Cornish-Fisher series (A&S 26.7.5) above."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile: p={p} must be strictly between 0 and 1")
    if p == 0.5:
        return 0.0
    if df > _EXPANSION_DF:
        return _t_quantile_expansion(p, df)
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
