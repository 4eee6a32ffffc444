"""Paired tests against a baseline (rag_eval.stats.paired): McNemar vs scipy.stats.binomtest, sign
flips vs brute force and scipy.stats.permutation_test, the tolerance form, Holm vs statsmodels."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from rag_eval.stats.paired import (
    compare_pass_fail,
    drops,
    holm,
    mcnemar_exact,
    pair,
    paired_bootstrap,
    regression_test,
    sign_flip_test,
)


@pytest.mark.parametrize("b,c", [(0, 0), (1, 0), (0, 3), (3, 1), (5, 5), (9, 2), (12, 30), (40, 25), (200, 160)])
def test_mcnemar_matches_scipy_binomtest(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else sps.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_mcnemar_hand_value() -> None:
    # b = 3, c = 0: P(X >= 3 | m = 3) = 1/8.
    assert mcnemar_exact(3, 0) == 1 / 8
    assert mcnemar_exact(2, 1) == 4 / 8  # C(3,2) + C(3,3) = 4 of 8


def test_compare_pass_fail_counts_and_lists_one_sided_items() -> None:
    base = {"a": True, "b": True, "c": False, "d": True, "old": True}
    cur = {"a": False, "b": True, "c": True, "d": False, "new": False}
    got = compare_pass_fail(base, cur)
    assert (got.b, got.c, got.n) == (2, 1, 4)  # a, d pass→fail; c fail→pass
    assert got.drop == pytest.approx((2 - 1) / 4)
    assert got.p_value == mcnemar_exact(2, 1)
    assert got.pairing.only_baseline == ("old",) and got.pairing.only_current == ("new",)


def test_drops_sign_follows_direction() -> None:
    d, pairing = drops({"a": 0.8, "b": 0.5, "x": 1.0}, {"a": 0.6, "b": 0.5, "y": 0.0})
    assert d == {"a": pytest.approx(0.2), "b": 0.0} and pairing.ids == ("a", "b")
    assert pairing.only_baseline == ("x",) and pairing.only_current == ("y",)
    d_low, _ = drops({"a": 0.1}, {"a": 0.3}, higher_is_better=False)  # error rate rose 0.2: a drop of 0.2
    assert d_low == {"a": pytest.approx(0.2)}


def test_sign_flip_exact_hand_values() -> None:
    # d = (1, 2, 3): of the 8 sums ±1±2±3 only +6 reaches the observed 6 → p = 1/8.
    assert sign_flip_test({"a": 1.0, "b": 2.0, "c": 3.0}).p_value == 1 / 8
    # d = (1, −1, 2): sums 4, 0, 2, −2, 2, −2, 0, −4; three are >= 2 → p = 3/8.
    got = sign_flip_test({"a": 1.0, "b": -1.0, "c": 2.0})
    assert (got.p_value, got.exact, got.flips) == (3 / 8, True, 8)


def test_sign_flip_exact_equals_brute_force_and_scipy() -> None:
    rng = np.random.default_rng(11)
    x = np.round(rng.normal(0.03, 0.1, size=12), 3)
    d = {f"u{i}": float(v) for i, v in enumerate(x)}
    observed = x.sum()
    brute = sum(1 for s in itertools.product((1, -1), repeat=12) if np.dot(s, x) >= observed - 1e-12) / 2**12
    ref = sps.permutation_test((x,), np.mean, permutation_type="samples", alternative="greater", n_resamples=np.inf)
    got = sign_flip_test(d)
    assert got.exact and got.p_value == brute
    assert got.p_value == pytest.approx(ref.pvalue, abs=1e-12)


def test_sign_flip_random_above_20_is_seeded_and_near_scipy() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(0.02, 0.1, size=60)
    d = {f"u{i}": float(v) for i, v in enumerate(x)}
    got = sign_flip_test(d)
    assert not got.exact and got.flips == 10_000 and got == sign_flip_test(dict(reversed(list(d.items()))))
    ref = sps.permutation_test(
        (x,),
        np.mean,
        permutation_type="samples",
        alternative="greater",
        n_resamples=20_000,
        rng=np.random.default_rng(0),
    )
    # two Monte Carlo p-values near 0.07 (sd ≈ √(p(1−p)/R): 0.0026 and 0.0018): within 4 sd of each other
    assert got.p_value == pytest.approx(ref.pvalue, abs=0.012)


def test_paired_bootstrap_interval_and_bound() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(0.05, 0.2, size=300)
    d = {f"u{i}": float(v) for i, v in enumerate(x)}
    got = paired_bootstrap(d, delta=0.0, alpha=0.05)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert got.interval.estimate == pytest.approx(x.mean(), abs=1e-15)
    assert got.interval.se == pytest.approx(se, rel=0.06)
    assert got.interval.low == pytest.approx(x.mean() - 1.96 * se, abs=0.006)
    assert got.lower_bound == pytest.approx(x.mean() - 1.645 * se, abs=0.006)


@pytest.mark.parametrize(
    "true_drop,delta,fails",
    [
        (0.00, 0.00, False),  # no change: H0 drop <= 0 is not rejected
        (0.10, 0.00, True),  # a real 10-point drop
        (0.10, 0.02, True),  # larger than the tolerance, significantly
        (0.03, 0.02, False),  # larger than the tolerance, but not significantly
        (0.00, 0.02, False),
    ],
)
def test_tolerance_form_fails_iff_the_lower_bound_exceeds_delta(true_drop: float, delta: float, fails: bool) -> None:
    rng = np.random.default_rng(int(true_drop * 100) + int(delta * 1000))
    base = rng.uniform(0.3, 1.0, size=200)
    cur = base - true_drop + rng.normal(0.0, 0.1, size=200)  # unclipped: clipping at 1 would be a drop itself
    baseline = {f"q{i}": float(v) for i, v in enumerate(base)}
    current = {f"q{i}": float(v) for i, v in enumerate(cur)}
    for method in ("auto", "bootstrap", "sign_flip"):
        got = regression_test(baseline, current, max_drop=delta, alpha=0.05, method=method)  # type: ignore[arg-type]
        assert got.failed is fails, (method, got.sentence)
    boot = regression_test(baseline, current, max_drop=delta, alpha=0.05)
    assert boot.bootstrap.lower_bound is not None and (boot.bootstrap.lower_bound > delta) is fails


def test_regression_sentence_and_one_sided_items_are_listed() -> None:
    baseline = {"a": 1.0, "b": 1.0, "c": 0.0, "gone": 1.0}
    current = {"a": 0.0, "b": 0.0, "c": 0.0, "added": 1.0}
    got = regression_test(baseline, current, max_drop=0.0, alpha=0.05)
    assert got.pairing.only_baseline == ("gone",) and got.pairing.only_current == ("added",)
    assert got.bootstrap.interval.n == 3
    assert got.sentence.startswith("drop 0.667 [") and ", n=3, p=" in got.sentence
    # d = (1, 1, 0): the exact sign-flip p is 2/8 (sums ±1±1±0 reaching 2); the bootstrap alone
    # would say about (1/3)³ = 1/27 < 0.05, too sure from 3 items.
    assert got.method == "sign_flip" and got.p_value == 2 / 8 and not got.failed
    assert got.sentence.endswith("p=0.25 (sign-flip): not significantly more than 0 at alpha=0.05 → pass")
    assert regression_test(baseline, current, 0.0, method="bootstrap").p_value < 0.05


def test_paired_bootstrap_degenerate() -> None:
    same = paired_bootstrap({"a": 0.0, "b": 0.0})
    assert same.interval.reason == "every one of the 2 paired differences equals 0" and same.p_value == 1.0
    one = paired_bootstrap({"a": 0.3})
    assert one.interval.reason == "n=1: an interval needs at least 2 paired units" and one.p_value == 1.0


def test_pair_lists_both_sides() -> None:
    got = pair({"b": 1, "a": 2, "z": 0}, {"a": 1, "b": 2, "c": 3})
    assert (got.ids, got.only_baseline, got.only_current) == (("a", "b"), ("z",), ("c",))


@pytest.mark.parametrize(
    "pvals",
    [
        [0.01, 0.04, 0.03],
        [0.001, 0.2, 0.012, 0.5, 0.0125],
        [0.04, 0.04, 0.04],
        [0.9, 0.02],
    ],
)
def test_holm_matches_statsmodels(pvals: list[float]) -> None:
    named = {f"gate{i}": p for i, p in enumerate(pvals)}
    got = holm(named, alpha=0.05)
    reject, adjusted, _, _ = multipletests(pvals, alpha=0.05, method="holm")
    for i in range(len(pvals)):
        assert got.adjusted[f"gate{i}"] == pytest.approx(adjusted[i], abs=1e-15)
        assert got.rejected[f"gate{i}"] is bool(reject[i])


def test_holm_three_gates_by_hand() -> None:
    # sorted 0.01, 0.03, 0.04 against 0.05/3, 0.05/2, 0.05/1: 0.01 <= 0.0167 rejected, 0.03 > 0.025 stops.
    got = holm({"recall@5": 0.03, "mrr": 0.01, "pass_rate": 0.04})
    assert got.rejected == {"mrr": True, "recall@5": False, "pass_rate": False}
    assert got.adjusted == {
        "mrr": pytest.approx(0.03),
        "recall@5": pytest.approx(0.06),
        "pass_rate": pytest.approx(0.06),
    }
    assert got.sentence == "Holm–Bonferroni over 3 significance-tested gate(s) at alpha=0.05: 1 rejected"
