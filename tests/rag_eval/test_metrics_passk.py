"""Repeated-trial metrics: pass@k against the human-eval estimator and the exact binomial
formula, pass^k against brute-force enumeration of k-subsets, Wilson against hand values."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from rag_eval.metrics.passk import (
    TrialSummary,
    classify,
    pass_at_k,
    pass_hat_k,
    summarize,
    wilson_interval,
)

ALL_NCK = [(n, c, k) for n in range(1, 13) for k in range(1, n + 1) for c in range(n + 1)]


def estimate(n: int, c: int, k: int) -> float:
    """Reference estimator from openai/human-eval (human_eval/evaluation.py), verbatim logic."""
    return 1.0 if n - c < k else 1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))


def test_pass_at_k_matches_human_eval_and_exact_comb_for_all_small_cases() -> None:
    assert len(ALL_NCK) == sum((n + 1) * n for n in range(1, 13))  # every (n, c, k) is covered
    for n, c, k in ALL_NCK:
        got = pass_at_k(n, c, k)
        assert isinstance(got, float)
        assert got == pytest.approx(estimate(n, c, k), abs=1e-12), (n, c, k)
        assert got == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12), (n, c, k)


def test_pass_at_k_hand_values() -> None:
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 3, 1) == pytest.approx(3 / 10)  # k = 1 is the plain pass rate
    # n=5, c=2, k=2: 1 − C(3,2)/C(5,2) = 1 − 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 4, 2) == 1.0  # one failure cannot fill a 2-subset


def test_pass_hat_k_matches_brute_force_over_all_k_subsets() -> None:
    checked = 0
    for n in range(1, 9):
        for c in range(n + 1):
            trials = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(trials, k))
                all_pass = sum(1 for s in subsets if all(s)) / len(subsets)
                any_pass = sum(1 for s in subsets if any(s)) / len(subsets)
                assert pass_hat_k(n, c, k) == pytest.approx(all_pass, abs=1e-12), (n, c, k)
                assert pass_at_k(n, c, k) == pytest.approx(any_pass, abs=1e-12), (n, c, k)
                checked += 1
    assert checked == sum((n + 1) * n for n in range(1, 9))


def test_pass_hat_k_hand_values() -> None:
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)  # C(2,2)/C(5,2)
    assert pass_hat_k(5, 1, 2) == 0.0  # fewer passes than k
    assert pass_hat_k(4, 4, 3) == 1.0
    assert pass_hat_k(10, 7, 1) == pytest.approx(0.7)


@pytest.mark.parametrize("func", [pass_at_k, pass_hat_k])
def test_n_below_k_is_a_configuration_error(func: object) -> None:
    with pytest.raises(ValueError, match=r"configuration error.*n trials must be at least k.*n=3, k=5"):
        func(3, 1, 5)  # type: ignore[operator]


@pytest.mark.parametrize("func", [pass_at_k, pass_hat_k])
@pytest.mark.parametrize(("n", "c", "k"), [(5, -1, 1), (5, 6, 1), (5, 2, 0), (5, 2, -1)])
def test_invalid_counts_raise(func: object, n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        func(n, c, k)  # type: ignore[operator]


def test_non_int_counts_raise_type_error() -> None:
    with pytest.raises(TypeError, match="n must be an int"):
        pass_at_k(5.0, 2, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="c must be an int"):
        pass_hat_k(5, True, 1)  # bool is not a count


def test_wilson_hand_checked_values() -> None:
    # c=5, n=10, z=1.96: p=0.5, z²/n=0.38416, centre=0.5,
    # half = 1.96·sqrt(0.025 + 0.009604)/1.38416 = 0.26341
    low, high = wilson_interval(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    # c=0, n=10: low=0, high = (z²/n)/(1+z²/n) = 0.38416/1.38416 = 0.27754
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.38416 / 1.38416, abs=1e-12)
    # c=n is the mirror image
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(1 - 0.38416 / 1.38416, abs=1e-12) and high == 1.0
    # z=0 collapses to the point estimate
    assert wilson_interval(3, 4, z=0.0) == (0.75, 0.75)


def test_wilson_bounds_are_ordered_and_inside_unit_interval() -> None:
    for n in range(1, 41):
        for c in range(n + 1):
            low, high = wilson_interval(c, n)
            assert 0.0 <= low <= c / n <= high <= 1.0, (c, n)
    # more trials buy a narrower interval at the same rate
    assert (
        wilson_interval(50, 100)[1] - wilson_interval(50, 100)[0]
        < wilson_interval(5, 10)[1] - wilson_interval(5, 10)[0]
    )


@pytest.mark.parametrize(("c", "n"), [(0, 0), (-1, 3), (4, 3)])
def test_wilson_invalid_raises(c: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(c, n)


def test_classify() -> None:
    assert classify(5, 5) == "stable_pass"
    assert classify(1, 5) == "flaky"
    assert classify(4, 5) == "flaky"
    assert classify(0, 5) == "stable_fail"
    assert classify(1, 1) == "stable_pass"
    assert classify(0, 1) == "stable_fail"
    with pytest.raises(ValueError):
        classify(0, 0)
    with pytest.raises(ValueError):
        classify(6, 5)


def test_summarize_flaky_case() -> None:
    s = summarize([True, False, True, True, False], k=2)
    assert (s.n, s.c, s.k, s.cls) == (5, 3, 2, "flaky")
    assert s.pass_at_k == pytest.approx(1 - 1 / 10)  # 1 − C(2,2)/C(5,2)
    assert s.pass_hat_k == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert (s.wilson_low, s.wilson_high) == wilson_interval(3, 5)
    assert s.to_metrics() == {
        "pass@2": pytest.approx(0.9),
        "pass^2": pytest.approx(0.3),
        "trial_pass_rate": pytest.approx(0.6),
        "wilson_low": s.wilson_low,
        "wilson_high": s.wilson_high,
        "flaky": 1.0,
        "stable_pass": 0.0,
        "stable_fail": 0.0,
    }
    assert "pass_rate" not in s.to_metrics()  # reserved for the plugin's tier-level rate
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.c = 4  # type: ignore[misc]


def test_summarize_stable_cases() -> None:
    good = summarize([True] * 4, k=3)
    assert good.cls == "stable_pass" and good.pass_at_k == 1.0 and good.pass_hat_k == 1.0
    assert good.to_metrics()["stable_pass"] == 1.0 and good.to_metrics()["flaky"] == 0.0
    bad = summarize([False] * 4, k=1)
    assert bad.cls == "stable_fail" and bad.pass_at_k == 0.0 and bad.pass_hat_k == 0.0
    assert bad.to_metrics() == {
        "pass@1": 0.0,
        "pass^1": 0.0,
        "trial_pass_rate": 0.0,
        "wilson_low": 0.0,
        "wilson_high": pytest.approx(0.9604 / 1.9604, abs=1e-12),
        "flaky": 0.0,
        "stable_pass": 0.0,
        "stable_fail": 1.0,
    }  # n=4: z²/n = 3.8416/4 = 0.9604, high = 0.9604/1.9604
    assert isinstance(bad, TrialSummary)


def test_summarize_too_few_trials_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="n trials must be at least k"):
        summarize([True, True], k=3)
    with pytest.raises(ValueError, match="n trials must be at least k"):
        summarize([], k=1)
