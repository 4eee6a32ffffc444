"""Wilson and t intervals (rag_eval.stats.closed_form) and the quantiles under them, against
statsmodels / scipy and hand arithmetic; an interval that cannot be computed says why."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from rag_eval.metrics import passk
from rag_eval.stats import closed_form
from rag_eval.stats.closed_form import t_interval, wilson
from rag_eval.stats.distributions import normal_quantile, t_cdf, t_quantile, two_sided_z
from rag_eval.stats.interval import Interval, fmt_interval


def test_passk_uses_the_one_wilson() -> None:
    assert passk.wilson_interval is closed_form.wilson_interval


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 10, 29, 82, 149, 200, 201, 1000, 100_000])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.95, 0.975, 0.995, 0.025])
def test_t_quantile_matches_scipy(df: int, p: float) -> None:
    assert t_quantile(p, df) == pytest.approx(float(sps.t.ppf(p, df)), abs=1e-8)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 8, 50])
@pytest.mark.parametrize("t", [-3.0, -0.5, 0.0, 0.7, 2.5])
def test_t_cdf_matches_scipy(df: int, t: float) -> None:
    assert t_cdf(t, df) == pytest.approx(float(sps.t.cdf(t, df)), abs=1e-12)


def test_t_cdf_hand_values() -> None:
    # ν = 1 is Cauchy: F(1) = 1/2 + atan(1)/π = 3/4; ν = 2: F(t) = 1/2 + t/(2√(2 + t²)).
    assert t_cdf(1.0, 1) == pytest.approx(0.75, abs=1e-15)
    assert t_cdf(2.0, 2) == pytest.approx(0.5 + 2.0 / (2.0 * math.sqrt(6.0)), abs=1e-15)


def test_normal_quantile_and_z() -> None:
    assert normal_quantile(0.975) == pytest.approx(1.959963984540054, abs=1e-12)
    assert two_sided_z(0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    with pytest.raises(ValueError, match="write 0.95"):
        two_sided_z(95)


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (64, 83), (77, 83), (150, 300)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k: int, n: int, confidence: float) -> None:
    got = wilson(k, n, confidence)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert (got.low, got.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert got.estimate == k / n and got.method == "wilson" and got.n == n


def test_wilson_se_is_the_half_width_over_z() -> None:
    # 5 of 10 at 95 %: half-width = z·√(0.025 + z²/400)/(1 + z²/10); se = half/z, so non-zero at k = 0 too.
    z = two_sided_z(0.95)
    got = wilson(5, 10)
    assert got.se == pytest.approx(math.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10), abs=1e-15)
    assert got.high is not None and got.low is not None
    assert got.se == pytest.approx((got.high - got.low) / (2 * z), abs=1e-12)
    zero = wilson(0, 10)
    assert zero.se is not None and zero.se > 0 and zero.low == 0.0


def test_wilson_without_units_says_so() -> None:
    got = wilson(0, 0)
    assert got.estimate is None and not got.has_interval and got.reason == "n=0: no units to count"


def test_t_interval_hand_arithmetic() -> None:
    # values 1, 2, 3, 4: mean 2.5, s = √(5/3), se = s/2, t(0.975, 3) = 3.182446305284263.
    got = t_interval([1.0, 2.0, 3.0, 4.0])
    se = math.sqrt(5.0 / 3.0) / 2.0
    assert got.estimate == 2.5 and got.se == pytest.approx(se, abs=1e-15)
    assert got.low == pytest.approx(2.5 - 3.182446305284263 * se, abs=1e-9)
    assert got.high == pytest.approx(2.5 + 3.182446305284263 * se, abs=1e-9)


def test_t_interval_matches_scipy() -> None:
    values = [0.2, 0.9, 0.4, 0.4, 1.0, 0.0, 0.75, 0.5, 0.33]
    low, high = sps.t.interval(0.95, len(values) - 1, loc=sum(values) / len(values), scale=sps.sem(values))
    got = t_interval(values)
    assert (got.low, got.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))


@pytest.mark.parametrize(
    "values,reason",
    [
        ([0.7], "n=1: an interval needs at least 2 units"),
        ([], "n=0: an interval needs at least 2 units"),
        ([1.0, 1.0, 1.0], "every one of the 3 values equals 1: the spread is unknown, not zero"),
    ],
)
def test_t_interval_refuses_zero_width(values: list[float], reason: str) -> None:
    got = t_interval(values)
    assert got.reason == reason and got.low is None and got.high is None and got.se is None
    assert got.estimate == (values[0] if values else None)


def test_fmt_and_round_trip() -> None:
    got = Interval(estimate=0.74, se=0.04, low=0.66, high=0.82, n=83, confidence=0.95, method="t")
    assert fmt_interval(got) == "0.74 [0.66, 0.82]"
    assert fmt_interval(got, 3) == "0.740 [0.660, 0.820]"
    assert Interval.from_dict(got.to_dict()) == got
    assert (
        fmt_interval(t_interval([1.0, 1.0]))
        == "1.00 (no interval: every one of the 2 values equals 1: the spread is unknown, not zero)"
    )
