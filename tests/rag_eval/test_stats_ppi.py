"""Prediction-powered inference (rag_eval.stats.ppi): parity with ppi_py to 1e-9 for λ = 1, λ = 0
and the tuned λ, and a seeded coverage simulation against the generating mean."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from rag_eval.stats.distributions import two_sided_z
from rag_eval.stats.ppi import judge_only, ppi_mean, ppi_rows, tuned_lambda
from tests.support.ppi_sim import simulate


def _fixture(kind: str, n: int, big_n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "binary":
        y = (rng.random(n + big_n) < 0.7).astype(float)
        h = np.where(rng.random(n + big_n) < 0.1, 1.0 - y, y)
    elif kind == "verdicts":  # 0 / 0.5 / 1 categorical verdicts, judge off by one step on 20 %
        y = rng.choice([0.0, 0.5, 1.0], size=n + big_n, p=[0.2, 0.3, 0.5])
        h = np.clip(y + rng.choice([-0.5, 0.0, 0.5], size=n + big_n, p=[0.1, 0.8, 0.1]), 0.0, 1.0)
    elif kind == "poor_judge":  # a judge that gets it backwards: λ̂ clips to 0
        y = rng.random(n + big_n)
        h = rng.random(n + big_n) - 0.5 * y  # negatively related: the raw λ̂ is below 0
    else:  # continuous, biased judge
        y = rng.beta(5.0, 2.0, size=n + big_n)
        h = y + 0.1 + rng.normal(0.0, 0.1, size=n + big_n)
    return y[:n], h[:n], h[n:]


FIXTURES = [
    ("binary", 60, 200, 1),
    ("binary", 150, 1000, 2),
    ("verdicts", 40, 300, 3),
    ("continuous", 150, 1000, 4),
    ("poor_judge", 50, 400, 5),
]


@pytest.mark.parametrize("kind,n,big_n,seed", FIXTURES)
@pytest.mark.parametrize("lam", [1.0, 0.0, None])
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_parity_with_ppi_py(kind: str, n: int, big_n: int, seed: int, lam: float | None, confidence: float) -> None:
    y, h, u = _fixture(kind, n, big_n, seed)
    got = ppi_mean(y, h, u, lam=lam, confidence=confidence)
    point = float(np.asarray(ppi_mean_pointestimate(y, h, u, lam=lam)).ravel()[0])
    low, high = (float(np.asarray(v).ravel()[0]) for v in ppi_mean_ci(y, h, u, alpha=1 - confidence, lam=lam))
    assert got.interval.estimate == pytest.approx(point, abs=1e-9)
    assert got.interval.low == pytest.approx(low, abs=1e-9)
    assert got.interval.high == pytest.approx(high, abs=1e-9)
    assert got.tuned is (lam is None) and 0.0 <= got.lam <= 1.0


def test_tuned_lambda_clips_for_a_useless_judge() -> None:
    y, h, u = _fixture("poor_judge", 50, 400, 5)
    assert tuned_lambda(y, h, u) == 0.0
    assert ppi_mean(y, h, u).interval.method == "ppi++"


def test_hand_arithmetic_on_a_small_fixture() -> None:
    # Y = (1, 0, 1, 1), Ŷ = (1, 1, 1, 1), Ŷᵘ = (1, 0, 1, 1, 1, 0): λ = 1
    # θ̂ = mean(Ŷᵘ) + mean(Y − Ŷ) = 4/6 + (−1/4); SE² = Var(Ŷᵘ)/6 + Var(Y − Ŷ)/4 (ddof 0)
    #    = (2/9)/6 + (3/16)/4.
    got = ppi_mean([1, 0, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1, 1, 0], lam=1.0)
    se = math.sqrt((2 / 9) / 6 + (3 / 16) / 4)
    assert got.interval.estimate == pytest.approx(4 / 6 - 1 / 4, abs=1e-15)
    assert got.interval.se == pytest.approx(se, abs=1e-15)
    assert got.interval.low == pytest.approx(4 / 6 - 1 / 4 - two_sided_z(0.95) * se, abs=1e-15)
    assert got.interval.method == "ppi"
    # λ = 0: labels only, mean(Y) = 3/4, SE² = Var(Y)/4 = (3/16)/4.
    only = ppi_mean([1, 0, 1, 1], [1, 1, 1, 1], [1, 0, 1, 1, 1, 0], lam=0.0)
    assert (only.interval.estimate, only.interval.se, only.interval.method) == (
        0.75,
        pytest.approx(math.sqrt(3 / 64)),
        "labels_only",
    )


def test_judge_only_and_degenerate_cases() -> None:
    assert judge_only([1.0, 1.0, 1.0]).reason == "every one of the 3 values equals 1: the spread is unknown, not zero"
    j = judge_only([1.0, 0.0, 1.0, 1.0])
    assert j.estimate == 0.75 and j.se == pytest.approx(0.5 / 2)
    one = ppi_mean([1.0], [1.0], [1.0, 0.0])
    assert one.interval.reason == "n=1 human label(s): an interval needs at least 2"
    flat = ppi_mean([1.0, 1.0], [1.0, 1.0], [1.0, 1.0, 1.0])
    assert flat.interval.reason is not None and flat.interval.low is None and flat.lam == 0.0
    with pytest.raises(ValueError, match="pair them one to one"):
        ppi_mean([1.0, 0.0], [1.0], [1.0])
    with pytest.raises(ValueError, match="within"):
        ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0], lam=1.5)


# -- coverage: R seeded data sets per judge, all at once ------------------------------------------
R, N_LABELLED, N_UNLABELLED = 3000, 150, 1000
MC_SD = math.sqrt(0.95 * 0.05 / R)  # ≈ 0.004: the simulation's own noise on a coverage of 0.95


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_coverage_against_the_generating_mean(kind: str) -> None:
    # Judges of tests/support/ppi_sim.py. Coverage is measured against the GENERATING mean (0.7, or 5/7 for Beta(5, 2)), not the drawn
    # cases' own mean, which would show ~98 % (the steering docs' STATISTICS.md). The band 0.94–0.96 is widened by
    # 2.5 × the simulation's sd (0.004 at R = 3,000). bench/ppi_coverage.py measures it with 20,000
    # data sets: every row is in 0.944–0.951 except PPI++ with the biased binary judge, 0.935
    # [0.931, 0.938] — a known small-sample shortfall (BENCHMARKS.md) this band admits.
    rng = np.random.default_rng(2023 if kind == "binary" else 2024)
    mu, y, judges = simulate(kind, R, N_LABELLED + N_UNLABELLED, rng)
    z = two_sided_z(0.95)
    for name, h in judges.items():
        rows = {lam: ppi_rows(y[:, :N_LABELLED], h[:, :N_LABELLED], h[:, N_LABELLED:], lam) for lam in (0.0, 1.0, None)}
        for lam, r in rows.items():
            coverage = float(np.mean(np.abs(r.estimate - mu) <= z * r.se))
            assert 0.94 - 2.5 * MC_SD <= coverage <= 0.96 + 2.5 * MC_SD, (kind, name, lam, coverage)
        width_gap = 2 * z * (rows[None].se - rows[0.0].se)  # PPI++ minus labels-only, per data set
        assert width_gap.mean() <= 2.5 * width_gap.std(ddof=1) / math.sqrt(R), (kind, name)
