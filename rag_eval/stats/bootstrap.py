"""Percentile bootstrap over units, seeded from the content: a mean of units and a pooled ratio.

The unit of resampling is the golden item or the dialogue; what is inside a unit (a case's
passk trials, a dialogue's turns) travels with it (STATISTICS.md of the project's steering docs, "Units
and clustering"). The generator is seeded from a SHA-256 of the sorted unit ids and their
values, so identical inputs give an identical interval on every machine and every run,
and any change in the data changes the draw.

Because the interval is a function of that content (and the confidence and B) alone, it is
computed once per distinct content in a process: a run's metrics often share one list of
per-case values (``recall@5`` and the final stage's ``context.recall@5``, chunk- and
doc-level metrics when every chunk is its own document), and those share one draw.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from rag_eval.stats.closed_form import spread_reason
from rag_eval.stats.distributions import check_confidence
from rag_eval.stats.interval import Interval, no_interval

MIN_RESAMPLES = 2000
# Rows of the (B, n) index matrix drawn at once: bounds memory at ~16 MB whatever n is.
_CHUNK_CELLS = 2_000_000

UnitValues = Mapping[str, float | Sequence[float]]
# Intervals already drawn in this process, by what determines them (:func:`_once`).
MEMO_SIZE = 256
_memo: dict[tuple[str, bytes, float, int], Interval] = {}
_memo_lock = threading.Lock()


def _canonical(value: object) -> str:
    """One text per value: numbers as ``repr(float)``, sequences element-wise, so 1, 1.0 and
    numpy.float64(1.0) seed alike."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return repr(float(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        return "(" + ",".join(_canonical(v) for v in value) + ")"
    return repr(value)


def content_digest(*parts: Mapping[str, object]) -> bytes:
    """SHA-256 of each mapping's sorted ``id → value`` pairs (values canonical: ``_canonical``)."""
    digest = hashlib.sha256()
    for part in parts:
        for key in sorted(part):
            digest.update(f"{key}\x1f{_canonical(part[key])}\x1e".encode())
        digest.update(b"\x1d")
    return digest.digest()


def content_seed(*parts: Mapping[str, object]) -> int:
    """A 64-bit seed from SHA-256 of each mapping's sorted ``id → value`` pairs.

    Identical inputs → identical seed; the order the units arrive in does not matter, nor
    whether a value is an int, a float or a numpy scalar.
    """
    return _seed(content_digest(*parts))


def _seed(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "big")


def _once(kind: str, digest: bytes, confidence: float, resamples: int, draw: Callable[[], Interval]) -> Interval:
    """``draw()``, or the Interval it gave before for the same content, confidence and B.

    The draw is seeded from ``digest`` and reads nothing but the content it digests, so
    the same key always gives the same Interval (frozen: shared safely). At most
    MEMO_SIZE are kept, the oldest dropped first.
    """
    key = (kind, digest, float(confidence), int(resamples))
    with _memo_lock:
        known = _memo.get(key)
    if known is not None:
        return known
    interval = draw()
    with _memo_lock:
        if len(_memo) >= MEMO_SIZE:
            del _memo[next(iter(_memo))]
        _memo[key] = interval
    return interval


def unit_means(units: UnitValues) -> tuple[list[str], np.ndarray]:
    """Sorted unit ids and each unit's value: a float as is, a sequence by its mean.

    A unit with an empty sequence has no value and is refused (ValueError naming it).
    """
    ids = sorted(units)
    values = np.empty(len(ids), dtype=float)
    for i, key in enumerate(ids):
        value = units[key]
        if isinstance(value, (int, float)):
            values[i] = float(value)
            continue
        inner = np.asarray(value, dtype=float)
        if inner.size == 0:
            raise ValueError(f"unit {key!r} has no observations; drop it or give it a value")
        values[i] = float(inner.mean())
    return ids, values


def check_resamples(resamples: int) -> None:
    """B must be at least MIN_RESAMPLES (2,000) for percentile bounds that are stable."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"resamples={resamples}: use at least {MIN_RESAMPLES} for a percentile bootstrap")


def resampled_sums(
    columns: Sequence[np.ndarray], resamples: int, rng: np.random.Generator
) -> Iterator[list[np.ndarray]]:
    """Yield, chunk by chunk, Σ over a resample of units (drawn with replacement) of each column.

    Every column is indexed by the same draw, so a unit's numerator and denominator (or its
    baseline and current value) stay together.
    """
    n = int(columns[0].size)
    rows = max(1, _CHUNK_CELLS // max(n, 1))
    done = 0
    while done < resamples:
        b = min(rows, resamples - done)
        idx = rng.integers(0, n, size=(b, n))
        yield [col[idx].sum(axis=1) for col in columns]
        done += b


# Few distinct values (recall@k, hit rates, MRR over ranks 1..20 have a handful): draw each
# resample's counts of those values instead of n indices, when k · this <= n.
_COUNTS_FACTOR = 16


def resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``resamples`` resamples of ``values`` drawn with replacement.

    With k distinct values, the counts of each value in one resample of n units drawn with
    replacement are Multinomial(n, (n₁/n, …, n_k/n)): the same distribution as the mean of n
    drawn indices, in B·k draws instead of B·n (at n = 10,000 and k = 21: ~3 ms instead of
    ~220 ms per metric). Used when k·16 <= n, where it is the faster of the two; else the
    index draw of :func:`resampled_sums`.
    """
    n = values.size
    distinct, counts = np.unique(values, return_counts=True)
    if distinct.size * _COUNTS_FACTOR <= n:
        drawn = rng.multinomial(n, counts / n, size=resamples)
        return np.asarray(drawn @ distinct / n, dtype=float)
    return np.concatenate([sums[0] / n for sums in resampled_sums([values], resamples, rng)])


def percentile_bounds(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """The (1 − c)/2 and (1 + c)/2 quantiles of the replicates (numpy's linear rule)."""
    low, high = np.quantile(replicates, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return float(low), float(high)


def replicate_interval(
    estimate: float | None, replicates: np.ndarray, n: int, confidence: float, method: str
) -> Interval:
    """The percentile interval of ``replicates`` around ``estimate``, se = sd(replicates) (ddof = 1)."""
    low, high = percentile_bounds(replicates, confidence)
    return Interval(
        estimate=estimate,
        se=float(replicates.std(ddof=1)),
        low=low,
        high=high,
        n=n,
        confidence=confidence,
        method=method,
    )


def bootstrap_mean(units: UnitValues, confidence: float = 0.95, resamples: int = MIN_RESAMPLES) -> Interval:
    """Mean over units of each unit's value, with a percentile bootstrap over whole units.

    θ̂ = (1/n)·Σᵢ vᵢ, vᵢ = the unit's value (the mean of its inner observations, so each unit
    weighs the same). B resamples of n units with replacement → θ̂*₁…θ̂*_B; interval =
    [q_{α/2}, q_{1−α/2}] of θ̂*, se = sd(θ̂*) (ddof = 1). n < 2 or all vᵢ equal: said.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    _, values = unit_means(units)
    estimate = float(values.mean()) if values.size else None
    reason = spread_reason(values)
    if reason is not None:
        return no_interval(estimate, int(values.size), confidence, "bootstrap", reason)
    digest = content_digest(units)

    def draw() -> Interval:
        rng = np.random.default_rng(_seed(digest))
        return replicate_interval(
            estimate, resampled_means(values, resamples, rng), values.size, confidence, "bootstrap"
        )

    return _once("mean", digest, confidence, resamples, draw)


def ratio_delta_se(numerators: np.ndarray, denominators: np.ndarray) -> float:
    """Delta-method (linearisation) SE of R = Σnᵢ/Σdᵢ over units:

    SE² = Σ (nᵢ − R·dᵢ)² / (m(m − 1)) / d̄², with m units and d̄ = mean(dᵢ).
    """
    m = numerators.size
    ratio = numerators.sum() / denominators.sum()
    resid = numerators - ratio * denominators
    return float(math.sqrt((resid**2).sum() / (m * (m - 1))) / denominators.mean())


def bootstrap_ratio(
    units: Mapping[str, tuple[float, float]], confidence: float = 0.95, resamples: int = MIN_RESAMPLES
) -> Interval:
    """A pooled rate R = Σ numᵢ / Σ denᵢ over units (e.g. turns pooled over dialogues).

    Units (dialogues) are resampled whole: R* = Σ num[idx] / Σ den[idx]. Resamples whose
    Σ den is 0 have no ratio and are left out (their count lowers the B used). Interval =
    percentile bounds of R*, se = sd(R*). Fewer than 2 units with a denominator, Σ den = 0, or
    every resample giving the same R (every unit's ratio equal): said, no interval.
    """
    check_confidence(confidence)
    check_resamples(resamples)
    ids = sorted(units)
    num = np.array([float(units[k][0]) for k in ids])
    den = np.array([float(units[k][1]) for k in ids])
    if np.any(den < 0) or np.any(num < 0):
        raise ValueError("bootstrap_ratio: numerators and denominators must be counts (>= 0)")
    total = float(den.sum())
    estimate = float(num.sum()) / total if total > 0 else None
    with_den = int((den > 0).sum())
    if estimate is None or with_den < 2:
        why = (
            "no unit has a denominator"
            if estimate is None
            else f"{with_den} unit(s) with a denominator: an interval needs 2"
        )
        return no_interval(estimate, len(ids), confidence, "ratio_bootstrap", why)
    rates = num[den > 0] / den[den > 0]
    if np.all(rates == rates[0]):
        return no_interval(
            estimate,
            len(ids),
            confidence,
            "ratio_bootstrap",
            f"every unit's rate equals {float(rates[0]):g}: the spread is unknown, not zero",
        )
    digest = content_digest({k: units[k] for k in ids})

    def draw() -> Interval:
        rng = np.random.default_rng(_seed(digest))
        chunks = [s[0][s[1] > 0] / s[1][s[1] > 0] for s in resampled_sums([num, den], resamples, rng)]
        return replicate_interval(estimate, np.concatenate(chunks), len(ids), confidence, "ratio_bootstrap")

    return _once("ratio", digest, confidence, resamples, draw)
