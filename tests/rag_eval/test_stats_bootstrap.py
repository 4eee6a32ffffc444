"""Content-seeded bootstrap over whole units (rag_eval.stats.bootstrap): a mean of units and a
pooled ratio, against closed forms (s/√n, the t interval, the delta method)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag_eval.stats import bootstrap
from rag_eval.stats.bootstrap import bootstrap_mean, bootstrap_ratio, content_seed, ratio_delta_se, unit_means
from rag_eval.stats.closed_form import t_interval


def _recall_like(n: int, seed: int) -> dict[str, float]:
    """Per-item recall@5-like values: mostly 1, some 0, a few halves and thirds."""
    rng = np.random.default_rng(seed)
    values = rng.choice([1.0, 0.0, 0.5, 1 / 3, 2 / 3], size=n, p=[0.7, 0.12, 0.1, 0.04, 0.04])
    return {f"q{i:03d}": float(v) for i, v in enumerate(values)}


def test_seed_is_from_content_not_order() -> None:
    units = _recall_like(40, 1)
    reordered = dict(reversed(list(units.items())))
    assert content_seed(units) == content_seed(reordered)
    assert bootstrap_mean(units) == bootstrap_mean(reordered)
    changed = dict(units, q000=1.0 - units["q000"])
    assert content_seed(changed) != content_seed(units)
    assert content_seed({"a": 1, "b": [np.float64(0.5)]}) == content_seed({"a": 1.0, "b": (0.5,)})


def test_estimate_is_the_mean_of_unit_values() -> None:
    got = bootstrap_mean({"a": 1.0, "b": 0.0, "c": [1.0, 0.0, 0.5, 0.5]})
    assert got.estimate == pytest.approx((1.0 + 0.0 + 0.5) / 3, abs=1e-15)
    assert got.method == "bootstrap" and got.n == 3


def _judge_like(n: int, seed: int) -> dict[str, float]:
    """Per-item judge scores spread symmetrically over [0, 1] (Beta(2, 2))."""
    rng = np.random.default_rng(seed)
    return {f"q{i:03d}": float(v) for i, v in enumerate(rng.beta(2.0, 2.0, size=n))}


def _gaps(units: dict[str, float]) -> tuple[float, float]:
    boot, t = bootstrap_mean(units, resamples=10_000), t_interval(list(units.values()))
    assert boot.low is not None and boot.high is not None and t.low is not None and t.high is not None
    return abs(boot.low - t.low), abs(boot.high - t.high)


@pytest.mark.parametrize("units", [_judge_like(83, 83), _recall_like(300, 300)], ids=["judge-83", "recall-300"])
def test_t_interval_agrees_with_bootstrap_within_0_005(units: dict[str, float]) -> None:
    # Where the t interval is "exact enough" (the steering docs' STATISTICS.md): symmetric scores at the demo's n = 83,
    # and skewed recall-like values at n = 300: both bounds within 0.005 of the bootstrap's.
    low_gap, high_gap = _gaps(units)
    assert low_gap <= 0.005 and high_gap <= 0.005


@pytest.mark.parametrize("seed", [40, 1, 2, 3])
def test_t_interval_is_not_exact_enough_for_skewed_recall_at_40(seed: int) -> None:
    # Skewed recall-like values at n = 40: the bootstrap's upper bound sits 0.010-0.013 below
    # the symmetric t bound (the ideal bootstrap, B = 400,000: 0.0102-0.0132 for these seeds).
    # At the demo's n = 83 the same gap is 0.004-0.005 (ideal), on the tolerance's edge, where
    # a B = 10,000 draw lands on either side of it: means use the bootstrap at every n rather
    # than a t interval that is exact enough only from some n on.
    _, high_gap = _gaps(_recall_like(40, seed))
    assert high_gap > 0.0075


def test_few_distinct_values_draw_counts_from_the_same_distribution_as_indices() -> None:
    # recall-like values take 5 distinct values: each resample's counts of them are drawn
    # (multinomial) instead of n indices. Same distribution: the quantiles and the SE of many
    # resamples agree with the index draw's to Monte Carlo precision.
    values = np.array(list(_recall_like(400, 9).values()))
    rng = np.random.default_rng(0)
    counts = bootstrap.resampled_means(values, 100_000, rng)  # 5 * 16 <= 400: the counts draw
    idx = np.concatenate([s[0] / values.size for s in bootstrap.resampled_sums([values], 100_000, rng)])
    assert np.unique(values).size * 16 <= values.size
    assert np.quantile(counts, [0.025, 0.5, 0.975]) == pytest.approx(np.quantile(idx, [0.025, 0.5, 0.975]), abs=0.0015)
    assert counts.std() == pytest.approx(idx.std(), rel=0.02)
    assert counts.mean() == pytest.approx(values.mean(), abs=0.0005)


def test_t_interval_is_not_the_bootstrap_on_few_skewed_units() -> None:
    # Where it is not: 12 units, one of them far out — the t interval is symmetric, the bootstrap is not.
    units = {f"u{i}": 0.0 for i in range(11)} | {"u11": 1.0}
    boot, t = bootstrap_mean(units), t_interval(list(units.values()))
    assert t.low is not None and t.low < 0.0  # below any possible mean
    assert boot.low == 0.0 and boot.high is not None and t.high is not None and abs(boot.high - t.high) > 0.005


def test_bootstrap_se_is_the_plug_in_se_of_a_mean() -> None:
    # The ideal bootstrap SE of a mean is s·√((n − 1)/n)/√n (s with ddof 1); B = 10,000 is within 3 %.
    units = _recall_like(83, 7)
    x = np.array(list(units.values()))
    expected = x.std(ddof=1) * math.sqrt((x.size - 1) / x.size) / math.sqrt(x.size)
    got = bootstrap_mean(units, resamples=10_000)
    assert got.se == pytest.approx(expected, rel=0.03)


def test_units_are_resampled_whole() -> None:
    # 20 units of 5 trials each that all agree within the unit: the information is 20 units, not
    # 100 trials. The clustered interval is as wide as the t interval on the 20 unit values and
    # about √5 times the naive one over 100 "independent" trials.
    rng = np.random.default_rng(3)
    unit_pass = rng.random(20) < 0.6
    units = {f"case{i}": [float(p)] * 5 for i, p in enumerate(unit_pass)}
    clustered = bootstrap_mean(units, resamples=10_000)
    per_unit = t_interval([float(p) for p in unit_pass])
    naive = t_interval([float(p) for p in unit_pass for _ in range(5)])
    assert clustered.high is not None and clustered.low is not None
    assert per_unit.high is not None and per_unit.low is not None and naive.high is not None and naive.low is not None
    width = clustered.high - clustered.low
    assert width == pytest.approx(per_unit.high - per_unit.low, rel=0.1)
    assert width / (naive.high - naive.low) > 2.0


@pytest.mark.parametrize(
    "units,reason",
    [
        ({"a": 0.5}, "n=1: an interval needs at least 2 units"),
        ({"a": 1.0, "b": [1.0, 1.0]}, "every one of the 2 values equals 1: the spread is unknown, not zero"),
    ],
)
def test_no_zero_width_certainty(units: dict[str, float | list[float]], reason: str) -> None:
    got = bootstrap_mean(units)
    assert got.reason == reason and got.low is None and got.se is None and got.estimate is not None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2000"):
        bootstrap_mean({"a": 1.0, "b": 0.0}, resamples=500)
    with pytest.raises(ValueError, match="unit 'b' has no observations"):
        unit_means({"a": 1.0, "b": []})


def _dialogues(m: int, seed: int) -> dict[str, tuple[float, float]]:
    """Per-dialogue (failed turns, turns): dialogue-level propensity, so turns are correlated."""
    rng = np.random.default_rng(seed)
    turns = rng.integers(1, 9, size=m)
    propensity = rng.beta(1.0, 3.0, size=m)
    fails = rng.binomial(turns, propensity)
    return {f"d{i:03d}": (float(f), float(t)) for i, (f, t) in enumerate(zip(fails, turns))}


def test_ratio_estimate_is_pooled_hand_arithmetic() -> None:
    got = bootstrap_ratio({"d1": (1, 4), "d2": (0, 2), "d3": (3, 3)})
    assert got.estimate == pytest.approx((1 + 0 + 3) / (4 + 2 + 3), abs=1e-15)
    assert got.method == "ratio_bootstrap" and got.n == 3


def test_ratio_bootstrap_se_matches_the_delta_method() -> None:
    units = _dialogues(120, 5)
    num = np.array([v[0] for v in units.values()])
    den = np.array([v[1] for v in units.values()])
    got = bootstrap_ratio(units, resamples=10_000)
    # delta method: √(Σ(nᵢ − R dᵢ)²/(m(m−1)))/d̄; the bootstrap's plug-in is √((m−1)/m) of it.
    assert got.se == pytest.approx(ratio_delta_se(num, den) * math.sqrt(119 / 120), rel=0.05)


def test_ratio_delta_se_hand_arithmetic() -> None:
    # num (1, 0, 3), den (4, 2, 3): R = 4/9; residuals 1 − 16/9, −8/9, 3 − 12/9; d̄ = 3.
    r = 4 / 9
    resid = [1 - r * 4, 0 - r * 2, 3 - r * 3]
    expected = math.sqrt(sum(e * e for e in resid) / (3 * 2)) / 3
    assert ratio_delta_se(np.array([1.0, 0.0, 3.0]), np.array([4.0, 2.0, 3.0])) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    "units,reason",
    [
        ({"d1": (0, 0), "d2": (0, 0)}, "no unit has a denominator"),
        ({"d1": (1, 3), "d2": (0, 0)}, "1 unit(s) with a denominator: an interval needs 2"),
        ({"d1": (1, 2), "d2": (2, 4)}, "every unit's rate equals 0.5: the spread is unknown, not zero"),
    ],
)
def test_ratio_without_interval_says_why(units: dict[str, tuple[float, float]], reason: str) -> None:
    got = bootstrap_ratio(units)
    assert got.reason == reason and got.low is None


# --------------------------------------------------------------------------- one draw per distinct content


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of units of each resampling drawn (the memo emptied first)."""
    monkeypatch.setattr(bootstrap, "_memo", {})
    seen: list[int] = []
    means, sums = bootstrap.resampled_means, bootstrap.resampled_sums
    inside = [False]  # a mean's index draw goes through resampled_sums: one draw, counted once

    def counting_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
        seen.append(int(values.size))
        inside[0] = True
        try:
            return means(values, resamples, rng)
        finally:
            inside[0] = False

    def counting_sums(columns: list[np.ndarray], resamples: int, rng: np.random.Generator):  # type: ignore[no-untyped-def]
        if not inside[0]:
            seen.append(int(columns[0].size))
        return sums(columns, resamples, rng)

    monkeypatch.setattr(bootstrap, "resampled_means", counting_means)
    monkeypatch.setattr(bootstrap, "resampled_sums", counting_sums)
    return seen


def test_identical_value_lists_share_one_draw_with_identical_results(draws: list[int]) -> None:
    recall = _recall_like(120, 7)
    fresh = bootstrap_mean(dict(recall))  # e.g. recall@5
    same = bootstrap_mean({k: np.float64(v) for k, v in reversed(recall.items())})  # context.recall@5
    assert same == fresh and len(draws) == 1
    # the same content drawn without the memo: identical to the bit
    bootstrap._memo.clear()
    again = bootstrap_mean(dict(recall))
    assert [again.estimate, again.se, again.low, again.high] == [fresh.estimate, fresh.se, fresh.low, fresh.high]
    assert len(draws) == 2


def test_other_content_confidence_or_resamples_draw_again(draws: list[int]) -> None:
    recall = _recall_like(80, 8)
    base = bootstrap_mean(recall)
    other = bootstrap_mean(dict(recall, q000=1.0 - recall["q000"]))
    wider = bootstrap_mean(recall, confidence=0.99)
    longer = bootstrap_mean(recall, resamples=3000)
    assert len(draws) == 4 and len({base, other, wider, longer}) == 4
    units = {"a": (1.0, 2.0), "b": (3.0, 4.0), "c": (0.0, 5.0)}
    assert bootstrap_ratio(units) == bootstrap_ratio(dict(reversed(units.items()))) and len(draws) == 5
    # the same content read as a mean of each unit's pair: the same digest, another interval
    as_mean = bootstrap_mean(units)  # type: ignore[arg-type]
    assert as_mean.method == "bootstrap" and as_mean != bootstrap_ratio(units) and len(draws) == 6


def test_the_memo_is_bounded(draws: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "MEMO_SIZE", 3)
    for seed in range(5):
        bootstrap_mean(_recall_like(20, seed))
    assert len(bootstrap._memo) == 3 and len(draws) == 5
    bootstrap_mean(_recall_like(20, 0))  # dropped first: drawn again
    assert len(draws) == 6
