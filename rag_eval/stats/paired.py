"""Paired tests of a run against its baseline on the units present on both sides.

Only units present on both sides are compared; the others come back as lists
(``Pairing.only_baseline`` / ``only_current``), never compared, never silently dropped.
- pass/fail per unit: exact one-sided McNemar on b = pass→fail, c = fail→pass;
- values per unit: the drop dᵢ = baseline − current (current − baseline when lower is
  better), its paired bootstrap (units resampled whole) and the sign-flip permutation test;
- a tolerance δ (``max_drop``): fail iff H₀: drop ≤ δ is rejected at α, i.e. the one-sided
  lower confidence bound of the mean drop exceeds δ.
References: scipy.stats.binomtest; sacrebleu's paired bootstrap / approximate randomization.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, TypeVar

import numpy as np

from rag_eval.stats.bootstrap import MIN_RESAMPLES, check_resamples, content_seed, replicate_interval, resampled_sums
from rag_eval.stats.distributions import check_confidence
from rag_eval.stats.interval import Interval, no_interval

T = TypeVar("T")
EXACT_FLIP_MAX_N = 20
MIN_FLIPS = 10_000


@dataclass(frozen=True)
class Pairing:
    """Units on both sides (sorted), and the ones on one side only (sorted)."""

    ids: tuple[str, ...]
    only_baseline: tuple[str, ...]
    only_current: tuple[str, ...]


def pair(baseline: Mapping[str, object], current: Mapping[str, object]) -> Pairing:
    """Split unit ids into both / baseline-only / current-only."""
    b, c = set(baseline), set(current)
    return Pairing(tuple(sorted(b & c)), tuple(sorted(b - c)), tuple(sorted(c - b)))


def mcnemar_exact(b: int, c: int) -> float:
    """One-sided exact McNemar: p = P(X ≥ b), X ~ Binomial(b + c, ½) = Σ_{k=b}^{m} C(m, k) / 2^m.

    b = pass→fail, c = fail→pass; computed in exact rationals. b + c = 0 → p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"mcnemar_exact: b={b} and c={c} are counts and must be >= 0")
    m = b + c
    if m == 0:
        return 1.0
    return float(Fraction(sum(math.comb(m, k) for k in range(b, m + 1)), 2**m))


@dataclass(frozen=True)
class PassFailComparison:
    """b, c, the paired n, the change in pass rate (b − c)/n and the one-sided McNemar p."""

    b: int
    c: int
    n: int
    drop: float | None
    p_value: float
    pairing: Pairing


def compare_pass_fail(baseline: Mapping[str, bool], current: Mapping[str, bool]) -> PassFailComparison:
    """Count b (passed in baseline, fails now) and c (failed, passes now) over paired units."""
    pairing = pair(baseline, current)
    b = sum(1 for k in pairing.ids if baseline[k] and not current[k])
    c = sum(1 for k in pairing.ids if not baseline[k] and current[k])
    n = len(pairing.ids)
    return PassFailComparison(
        b=b, c=c, n=n, drop=(b - c) / n if n else None, p_value=mcnemar_exact(b, c), pairing=pairing
    )


def drops(
    baseline: Mapping[str, float], current: Mapping[str, float], higher_is_better: bool = True
) -> tuple[dict[str, float], Pairing]:
    """Per-unit drop dᵢ = baseline − current (higher is better) or current − baseline, paired units only."""
    pairing = pair(baseline, current)
    sign = 1.0 if higher_is_better else -1.0
    return {k: sign * (float(baseline[k]) - float(current[k])) for k in pairing.ids}, pairing


@dataclass(frozen=True)
class PairedBootstrap:
    """Mean drop with its two-sided interval, the one-sided lower bound at α and the p of H₀: drop ≤ δ."""

    interval: Interval
    lower_bound: float | None
    p_value: float
    delta: float
    alpha: float


def paired_bootstrap(
    d: Mapping[str, float],
    delta: float = 0.0,
    alpha: float = 0.05,
    confidence: float = 0.95,
    resamples: int = MIN_RESAMPLES,
) -> PairedBootstrap:
    """Percentile bootstrap of d̄ = mean(dᵢ) over whole units.

    Interval: [q_{(1−c)/2}, q_{(1+c)/2}] of d̄*; one-sided lower bound: q_α of d̄*;
    p = (#{d̄* ≤ δ} + 1)/(B + 1), so the test rejects H₀: drop ≤ δ (p ≤ α) about when the
    lower bound exceeds δ. Fewer than 2 units, or every dᵢ equal: no interval, p = 1 unless
    every dᵢ (n ≥ 2) exceeds δ — then no resample can fall at or below δ and p = 1/(B + 1).
    """
    check_confidence(confidence)
    check_confidence(1.0 - alpha)
    check_resamples(resamples)
    ids = sorted(d)
    x = np.array([d[k] for k in ids], dtype=float)
    n = int(x.size)
    mean = float(x.mean()) if n else None
    if n < 2 or bool(np.all(x == x[0])):
        reason = (
            f"n={n}: an interval needs at least 2 paired units"
            if n < 2
            else f"every one of the {n} paired differences equals {float(x[0]):g}"
        )
        p = 1.0 / (resamples + 1) if n >= 2 and float(x[0]) > delta else 1.0
        return PairedBootstrap(no_interval(mean, n, confidence, "paired_bootstrap", reason), None, p, delta, alpha)
    rng = np.random.default_rng(content_seed(d))
    replicates = np.concatenate([s[0] / n for s in resampled_sums([x], resamples, rng)])
    lower = float(np.quantile(replicates, alpha))
    p = (int((replicates <= delta).sum()) + 1) / (resamples + 1)
    interval = replicate_interval(mean, replicates, n, confidence, "paired_bootstrap")
    return PairedBootstrap(interval, lower, p, delta, alpha)


@dataclass(frozen=True)
class SignFlip:
    """p of H₀: drop ≤ δ by sign flips of (dᵢ − δ); exact (all 2ⁿ) or R random flips."""

    p_value: float
    exact: bool
    flips: int


def _all_flip_sums(e: np.ndarray) -> np.ndarray:
    """Σ sᵢeᵢ for all 2ⁿ sign vectors s ∈ {±1}ⁿ, built by doubling (2ⁿ floats, not 2ⁿ·n)."""
    sums = np.zeros(1)
    for value in e:
        sums = np.concatenate([sums + value, sums - value])
    return sums


def sign_flip_test(d: Mapping[str, float], delta: float = 0.0, resamples: int = MIN_FLIPS) -> SignFlip:
    """One-sided sign-flip permutation test of mean(dᵢ) > δ.

    eᵢ = dᵢ − δ, T = Σ eᵢ. Exact for n ≤ 20: p = #{s : Σ sᵢeᵢ ≥ T} / 2ⁿ (the identity is one
    of the 2ⁿ). Otherwise R ≥ 10,000 seeded random sign vectors: p = (#{Σ sᵢeᵢ ≥ T} + 1)/(R + 1).
    Ties within 1e-12·Σ|eᵢ| count as ≥ (float sums of the same terms in another order).
    n = 0: p = 1.
    """
    if resamples < MIN_FLIPS:
        raise ValueError(f"resamples={resamples}: the sign-flip test uses at least {MIN_FLIPS} random flips")
    ids = sorted(d)
    e = np.array([d[k] for k in ids], dtype=float) - delta
    n = int(e.size)
    if n == 0:
        return SignFlip(1.0, True, 0)
    observed = float(e.sum())
    tol = 1e-12 * max(1.0, float(np.abs(e).sum()))
    if n <= EXACT_FLIP_MAX_N:
        sums = _all_flip_sums(e)
        return SignFlip(int((sums >= observed - tol).sum()) / sums.size, True, int(sums.size))
    rng = np.random.default_rng(content_seed(d, {"delta": delta}))
    count, done, rows = 0, 0, max(1, 2_000_000 // n)
    while done < resamples:
        b = min(rows, resamples - done)
        signs = rng.integers(0, 2, size=(b, n)) * 2 - 1
        count += int(((signs * e).sum(axis=1) >= observed - tol).sum())
        done += b
    return SignFlip((count + 1) / (resamples + 1), False, resamples)


Method = Literal["auto", "bootstrap", "sign_flip"]


@dataclass(frozen=True)
class RegressionTest:
    """A tolerance test of the mean drop: the difference with its interval, p, verdict and sentence."""

    bootstrap: PairedBootstrap
    p_value: float
    method: Literal["bootstrap", "sign_flip"]
    failed: bool
    pairing: Pairing
    sentence: str


def regression_test(
    baseline: Mapping[str, float],
    current: Mapping[str, float],
    max_drop: float,
    alpha: float = 0.05,
    higher_is_better: bool = True,
    method: Method = "auto",
    confidence: float = 0.95,
) -> RegressionTest:
    """Fail iff H₀: drop ≤ max_drop is rejected at α (p ≤ α) by ``method`` over paired units.

    The difference and its interval always come from the paired bootstrap; the p-value from
    the bootstrap (rejects about when its one-sided lower bound exceeds max_drop) or from the
    sign-flip test. ``auto``: the exact sign-flip test up to 20 paired units, where the
    bootstrap's p is too small (d = 1, 1, 0 gives 1/27 ≈ 0.04 against the exact 2/8), the
    bootstrap above. Per-case pass/fail values (1.0 / 0.0) work too.
    """
    if max_drop < 0:
        raise ValueError(f"max_drop={max_drop} must be >= 0 (the tolerated drop)")
    d, pairing = drops(baseline, current, higher_is_better)
    boot = paired_bootstrap(d, max_drop, alpha, confidence)
    used: Literal["bootstrap", "sign_flip"] = (
        "sign_flip" if method == "sign_flip" or (method == "auto" and len(d) <= EXACT_FLIP_MAX_N) else "bootstrap"
    )
    p = boot.p_value if used == "bootstrap" else sign_flip_test(d, max_drop).p_value
    failed = p <= alpha
    est = boot.interval
    shown = (
        "no paired units"
        if est.estimate is None
        else f"drop {est.estimate:.3f}"
        + (f" [{est.low:.3f}, {est.high:.3f}]" if est.low is not None and est.high is not None else f" ({est.reason})")
    )
    verdict = "significantly more than" if failed else "not significantly more than"
    sentence = (
        f"{shown}, n={len(pairing.ids)}, p={p:.3g} ({used.replace('_', '-')}): "
        f"{verdict} {max_drop:g} at alpha={alpha:g} → " + ("fail" if failed else "pass")
    )
    return RegressionTest(boot, p, used, failed, pairing, sentence)


@dataclass(frozen=True)
class Holm:
    """Holm–Bonferroni over named p-values: adjusted p, which are rejected, and the statement."""

    adjusted: dict[str, float]
    rejected: dict[str, bool]
    alpha: float
    sentence: str


def holm(p_values: Mapping[str, float], alpha: float = 0.05) -> Holm:
    """Sort the m p-values ascending; reject p₍ᵢ₎ while p₍ᵢ₎ ≤ α/(m − i + 1), stop at the first that is not.

    Adjusted p₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1)·p₍ⱼ₎) (reject iff adjusted ≤ α; equals
    statsmodels ``multipletests(method="holm")``). Ties in p keep the names' order.
    """
    check_confidence(1.0 - alpha)
    names = sorted(p_values, key=lambda k: (p_values[k], k))
    m = len(names)
    adjusted: dict[str, float] = {}
    running = 0.0
    for i, name in enumerate(names):
        running = max(running, min(1.0, (m - i) * float(p_values[name])))
        adjusted[name] = running
    rejected = {name: adjusted[name] <= alpha for name in names}
    count = sum(rejected.values())
    sentence = f"Holm–Bonferroni over {m} significance-tested gate(s) at alpha={alpha:g}: {count} rejected"
    return Holm(adjusted, rejected, alpha, sentence)
