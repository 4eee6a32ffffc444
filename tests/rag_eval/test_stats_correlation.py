"""rag_eval.stats.correlation: Pearson and Spearman by hand and against scipy; the clustered bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rag_eval.stats.agreement import spearman as agreement_spearman
from rag_eval.stats.correlation import bootstrap_correlation, pearson, ranks, spearman


def test_pearson_by_hand() -> None:
    # x̄ = 2, ȳ = 7/3: dx = (−1, 0, 1), dy = (−4/3, −1/3, 5/3); Σdx·dy = 4/3 + 5/3 = 3,
    # Σdx² = 2, Σdy² = (16 + 1 + 25)/9 = 42/9 → r = 3 / √(2 · 42/9)
    assert pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(3 / math.sqrt(2 * 42 / 9))


def test_spearman_with_ties_by_hand() -> None:
    # ranks of (1, 2, 2, 3) are (1, 2.5, 2.5, 4); of (1, 3, 2, 4) themselves; r of those ranks:
    # dx = (−1.5, 0, 0, 1.5), dy = (−1.5, 0.5, −0.5, 1.5): Σdx·dy = 4.5, Σdx² = 4.5, Σdy² = 5
    assert list(ranks(np.array([1.0, 2.0, 2.0, 3.0]))) == [1.0, 2.5, 2.5, 4.0]
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))


def test_constant_side_is_undefined_not_zero() -> None:
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    assert spearman([1, 2, 3], [5, 5, 5]) is None


def test_refuses_unpaired_input() -> None:
    with pytest.raises(ValueError, match="3 values against 2"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="no paired values"):
        spearman([], [])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_scipy_on_tied_labels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=200)
    y = rng.integers(-2, 3, size=200).astype(float)  # labels in −2..2: many ties
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert agreement_spearman(list(x), list(y)) == spearman(x, y)


def _units(seed: int, n: int = 60) -> dict[str, list[tuple[float, float]]]:
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        v = float(rng.normal())
        out[f"u{i}"] = [(v, float(v + rng.normal())), (v, float(v + rng.normal()))]
    return out


def test_bootstrap_brackets_the_estimate_and_is_seeded_by_content() -> None:
    units = _units(0)
    iv = bootstrap_correlation(units, "spearman", resamples=2000)
    pooled = [p for u in units.values() for p in u]
    assert iv.estimate == spearman([a for a, _ in pooled], [b for _, b in pooled])
    assert iv.low is not None and iv.high is not None and iv.low < iv.estimate < iv.high
    assert iv.n == 60
    assert bootstrap_correlation(dict(reversed(list(units.items()))), "spearman") == iv  # order does not matter
    assert bootstrap_correlation(_units(1), "spearman") != iv


def test_bootstrap_resamples_units_not_pairs() -> None:
    # the same 30 values, each unit's pair written 4 times: the pairs quadruple, the units do not,
    # so the interval is that of 30 units (as wide as the single-pair one), not half as wide
    rng = np.random.default_rng(3)
    single = {f"u{i}": [(float(v), float(v + rng.normal()))] for i, v in enumerate(rng.normal(size=30))}
    doubled = {k: pairs * 4 for k, pairs in single.items()}
    a, b = bootstrap_correlation(single, "pearson"), bootstrap_correlation(doubled, "pearson")
    assert a.estimate == pytest.approx(b.estimate)
    assert a.high is not None and a.low is not None and b.high is not None and b.low is not None
    assert (b.high - b.low) == pytest.approx(a.high - a.low, rel=0.25)


def test_bootstrap_says_why_there_is_no_interval() -> None:
    constant = {"a": [(1.0, 1.0)], "b": [(1.0, 2.0)]}
    assert bootstrap_correlation(constant, "pearson").reason == "a side is constant: the correlation is undefined"
    one = {"a": [(1.0, 1.0), (2.0, 3.0)]}
    iv = bootstrap_correlation(one, "pearson")
    assert iv.estimate == pytest.approx(1.0) and iv.low is None and iv.reason == "fewer than 2 units"
    with pytest.raises(ValueError, match="method='kendall'"):
        bootstrap_correlation(one, "kendall")  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_a_weighted_resample_is_the_resample_written_out(method: str) -> None:
    """The bootstrap draws each unit's count (a multinomial); r over the pairs weighted by those
    counts equals scipy's r over the resample with every pair repeated count times."""
    from rag_eval.stats.correlation import _weighted_r

    rng = np.random.default_rng(5)
    x = rng.normal(size=40).round(1)  # rounded: ties, as in the labels
    y = rng.integers(-2, 3, size=40).astype(float)
    counts = rng.multinomial(40, np.full(40, 1 / 40), size=3)
    got = _weighted_r(counts.astype(float), x, y, method)
    ref = stats.pearsonr if method == "pearson" else stats.spearmanr
    for row, r in zip(counts, got):
        assert r == pytest.approx(ref(np.repeat(x, row), np.repeat(y, row))[0], abs=1e-12)
