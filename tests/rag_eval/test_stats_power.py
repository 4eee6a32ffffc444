"""Power and minimum detectable drop (rag_eval.stats.power): the worked example of the
steering docs' STATISTICS.md, the inverses, and a simulation that the MDE is detected about 80 % of the time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_eval.stats.distributions import normal_quantile
from rag_eval.stats.power import (
    mde_no_baseline,
    mde_paired_binary,
    mde_paired_continuous,
    n_paired_binary,
    n_paired_continuous,
)

Z975, Z80 = normal_quantile(0.975), normal_quantile(0.8)


def test_worked_example_312_and_306() -> None:
    # δ = 0.05, q = 0.10, z₁₋α = 1.96, power 0.8 (z = 0.8416): ((1.96·√0.1 + 0.8416·√0.0975)/0.05)² ≈ 311.6;
    # simpler ((1.96 + 0.8416)·√0.0975/0.05)² ≈ 306.1.
    full = n_paired_binary(0.05, 0.10, alpha=0.025, power=0.8)
    simple = n_paired_binary(0.05, 0.10, alpha=0.025, power=0.8, simple=True)
    assert full == pytest.approx(((Z975 * math.sqrt(0.1) + Z80 * math.sqrt(0.0975)) / 0.05) ** 2, rel=1e-12)
    assert round(full) == 312 and round(simple) == 306


def test_continuous_n_and_its_inverse() -> None:
    n = n_paired_continuous(0.03, 0.15, alpha=0.025, power=0.8)
    assert n == pytest.approx(((Z975 + Z80) * 0.15 / 0.03) ** 2, rel=1e-12)  # ≈ 196.2
    mde = mde_paired_continuous(197, 0.15, alpha=0.025, power=0.8)
    assert mde.drop == pytest.approx((Z975 + Z80) * 0.15 / math.sqrt(197), rel=1e-12)
    assert mde.drop < 0.03 and mde.basis == "baseline s_d"


def test_binary_mde_inverts_n() -> None:
    for q in (0.05, 0.1, 0.3):
        for n in (83, 312, 1000):
            mde = mde_paired_binary(n, q, alpha=0.025)
            assert n_paired_binary(mde.drop, q, alpha=0.025) == pytest.approx(n, rel=1e-9)
            assert mde.basis == "baseline discordance q"


def test_binary_mde_at_the_demo_size() -> None:
    # 83 items, 10 % discordance: the gate cannot see a drop much under 0.10.
    mde = mde_paired_binary(83, 0.10, alpha=0.025)
    assert 0.09 < mde.drop < 0.11
    assert mde.sentence(tolerance=0.02).startswith(
        f"this gate cannot see a drop smaller than {mde.drop:.2g} with 83 items"
    )
    assert mde.sentence(tolerance=0.02).endswith("that is larger than its tolerance 0.02")


def test_no_baseline_uses_the_runs_own_variance_and_says_which() -> None:
    prop = mde_no_baseline(83, p=0.8)
    assert prop.drop == pytest.approx((normal_quantile(0.95) + Z80) * math.sqrt(0.16) / math.sqrt(83), rel=1e-12)
    assert prop.basis == "run's own p(1-p) (no baseline)"
    values = mde_no_baseline(83, sd=0.3)
    assert values.basis == "run's own s (no baseline)" and "run's own s" in values.sentence()
    with pytest.raises(ValueError, match="either sd"):
        mde_no_baseline(83)


def test_mde_is_detected_with_about_80_percent_power() -> None:
    # Simulate the paired continuous gate at its MDE: a one-sided z test on 200 differences with
    # s_d = 0.2 rejects in about 80 % of 4,000 seeded runs (sd of that rate ≈ 0.006).
    n, sd = 200, 0.2
    drop = mde_paired_continuous(n, sd, alpha=0.05).drop
    rng = np.random.default_rng(0)
    d = rng.normal(drop, sd, size=(4000, n))
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    assert float((z > normal_quantile(0.95)).mean()) == pytest.approx(0.8, abs=0.025)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match=r"drop² < q"):
        n_paired_binary(0.4, 0.1)
    with pytest.raises(ValueError, match="one-sided level"):
        mde_paired_continuous(10, 0.1, alpha=0.7)
