"""What a paired gate can see: items needed for a drop, and the smallest drop seen at n.

One-sided level α (z₁₋α) and power 1 − β (z₁₋β), STATISTICS.md of the project's steering docs, "power":
- paired binary, discordance q = (b + c)/n, true drop δ:
  n ≈ ((z₁₋α·√q + z₁₋β·√(q − δ²)) / δ)²   (Connor 1987), or the simpler
  n ≈ ((z₁₋α + z₁₋β)·√(q − δ²) / δ)²;
- paired continuous, s_d = sd of the per-unit differences: n ≈ ((z₁₋α + z₁₋β)·s_d / δ)².
The minimum detectable drop (MDE) at n inverts them. Without a baseline the run's own
variance stands in: s of the per-unit values, or √(p(1 − p)) for a proportion; ``basis``
says which was used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from rag_eval.stats.distributions import normal_quantile

Basis = Literal["baseline discordance q", "baseline s_d", "run's own s (no baseline)", "run's own p(1-p) (no baseline)"]


@dataclass(frozen=True)
class Detectable:
    """The smallest drop a gate detects at its n, α and power, and what variance it came from."""

    drop: float
    n: int
    alpha: float
    power: float
    basis: Basis

    def sentence(self, tolerance: float | None = None) -> str:
        """'this gate cannot see a drop smaller than 0.09 with 83 items' (and vs its tolerance)."""
        text = f"this gate cannot see a drop smaller than {self.drop:.2g} with {self.n} items"
        text += f" ({self.power:.0%} power, one-sided alpha={self.alpha:g}, from the {self.basis})"
        if tolerance is not None and self.drop > tolerance:
            text += f"; that is larger than its tolerance {tolerance:g}"
        return text


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha={alpha} must be a one-sided level in (0, 0.5), e.g. 0.05")
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power={power} must be in [0.5, 1), e.g. 0.8")
    return normal_quantile(1.0 - alpha), normal_quantile(power)


def n_paired_binary(drop: float, q: float, alpha: float = 0.025, power: float = 0.8, simple: bool = False) -> float:
    """Units needed (unrounded) to detect a pass-rate drop δ with discordance q: see module doc.

    Example: δ = 0.05, q = 0.10, α = 0.025, power 0.8 → 311.6 (306.1 with ``simple``).
    Needs 0 < δ and δ² < q (a drop of δ needs at least δ discordance).
    """
    za, zb = _z(alpha, power)
    if drop <= 0 or not 0 < q <= 1 or drop * drop >= q:
        raise ValueError(f"n_paired_binary: need 0 < drop and drop² < q <= 1 (drop={drop}, q={q})")
    rest = math.sqrt(q - drop * drop)
    top = (za + zb) * rest if simple else za * math.sqrt(q) + zb * rest
    return (top / drop) ** 2


def n_paired_continuous(drop: float, sd: float, alpha: float = 0.025, power: float = 0.8) -> float:
    """Units needed (unrounded): n = ((z₁₋α + z₁₋β)·s_d/δ)²."""
    za, zb = _z(alpha, power)
    if drop <= 0 or sd < 0:
        raise ValueError(f"n_paired_continuous: need drop > 0 and sd >= 0 (drop={drop}, sd={sd})")
    return ((za + zb) * sd / drop) ** 2


def mde_paired_continuous(
    n: int, sd: float, alpha: float = 0.05, power: float = 0.8, basis: Basis = "baseline s_d"
) -> Detectable:
    """Smallest detectable mean drop at n: δ = (z₁₋α + z₁₋β)·s_d/√n."""
    za, zb = _z(alpha, power)
    if n < 1:
        raise ValueError(f"mde: n={n} must be at least 1")
    return Detectable((za + zb) * sd / math.sqrt(n), n, alpha, power, basis)


def mde_paired_binary(n: int, q: float, alpha: float = 0.05, power: float = 0.8) -> Detectable:
    """Smallest detectable pass-rate drop at n with discordance q: the δ that solves the Connor form.

    n·δ² = (z₁₋α·√q + z₁₋β·√(q − δ²))², solved by bisection on δ ∈ (0, √q); the left side
    grows and the right side shrinks in δ, so the root is unique. q = 0 (no discordance seen):
    ValueError — use the no-baseline form.
    """
    za, zb = _z(alpha, power)
    if n < 1 or not 0 < q <= 1:
        raise ValueError(f"mde_paired_binary: need n >= 1 and 0 < q <= 1 (n={n}, q={q})")

    def gap(d: float) -> float:
        return n * d * d - (za * math.sqrt(q) + zb * math.sqrt(max(q - d * d, 0.0))) ** 2

    low, high = 0.0, math.sqrt(q)
    if gap(high) < 0:  # even δ = √q (every discordant pair a loss) is not detectable at this n
        return Detectable(high, n, alpha, power, "baseline discordance q")
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if gap(mid) < 0 else (low, mid)
    return Detectable((low + high) / 2.0, n, alpha, power, "baseline discordance q")


def mde_no_baseline(
    n: int, sd: float | None = None, p: float | None = None, alpha: float = 0.05, power: float = 0.8
) -> Detectable:
    """MDE from the run's own variance when no baseline exists: s of the per-unit values, or p(1 − p).

    δ = (z₁₋α + z₁₋β)·σ/√n with σ = sd, or σ = √(p(1 − p)) for a proportion. Give exactly one.
    """
    if (sd is None) == (p is None):
        raise ValueError("mde_no_baseline: give either sd (a mean of values) or p (a proportion)")
    if p is not None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"mde_no_baseline: p={p} must be a proportion in [0, 1]")
        return mde_paired_continuous(n, math.sqrt(p * (1.0 - p)), alpha, power, "run's own p(1-p) (no baseline)")
    assert sd is not None
    return mde_paired_continuous(n, sd, alpha, power, "run's own s (no baseline)")
