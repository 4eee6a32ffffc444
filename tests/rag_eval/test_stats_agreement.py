"""Judge–human and annotator agreement (rag_eval.stats.agreement): κ vs scikit-learn, Spearman vs
scipy, Krippendorff's α on Krippendorff's own published example and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from rag_eval.stats.agreement import (
    accuracy,
    cohen_kappa,
    judge_bias,
    krippendorff_alpha,
    mean_absolute_error,
    spearman,
)


def test_accuracy_and_kappa_by_hand() -> None:
    # 10 cases: agree on 8 (6 both 1, 2 both 0); p_o = 0.8; human 1 on 7, judge 1 on 7:
    # p_e = 0.7·0.7 + 0.3·0.3 = 0.58; κ = (0.8 − 0.58)/(1 − 0.58) = 0.22/0.42.
    human = [1, 1, 1, 1, 1, 1, 1, 0, 0, 0]
    judge = [1, 1, 1, 1, 1, 1, 0, 1, 0, 0]
    assert accuracy(human, judge) == 0.8
    assert cohen_kappa(human, judge) == pytest.approx(0.22 / 0.42, abs=1e-12)


@pytest.mark.parametrize(
    "seed,cats", [(0, [0, 1]), (1, ["fail", "partial", "pass"]), (2, [0.0, 0.5, 1.0]), (3, [0, 1, 2, 3])]
)
def test_kappa_matches_sklearn(seed: int, cats: list[object]) -> None:
    rng = np.random.default_rng(seed)
    a = list(rng.choice(np.array(cats, dtype=object), size=80))
    b = [x if rng.random() < 0.7 else cats[int(rng.integers(len(cats)))] for x in a]
    # scikit-learn refuses float class labels such as 0.5 ("continuous"): it gets their text
    expected = cohen_kappa_score([str(x) for x in a], [str(x) for x in b])
    assert cohen_kappa(a, b) == pytest.approx(expected, abs=1e-12)


def test_kappa_undefined_when_one_category_throughout() -> None:
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spearman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=60)
    y = np.clip(x + rng.normal(0, 0.3, size=60), 0, 1).round(1)
    assert spearman(list(x), list(y)) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)


def test_spearman_undefined_for_a_constant_side() -> None:
    assert spearman([1.0, 1.0, 1.0], [0.1, 0.5, 0.9]) is None


def test_mae_and_bias_by_hand() -> None:
    human, judge = [1.0, 0.0, 0.5, 1.0], [1.0, 0.5, 1.0, 0.5]
    assert mean_absolute_error(human, judge) == pytest.approx((0 + 0.5 + 0.5 + 0.5) / 4)
    assert judge_bias(human, judge) == pytest.approx((0 + 0.5 + 0.5 - 0.5) / 4)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, missing values; published α = 0.743 (nominal) and 0.849 (interval).
_A = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
_B = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
_C = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
_D = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
KRIPPENDORFF_EXAMPLE = {f"unit{i + 1}": [float(r[i]) for r in (_A, _B, _C, _D) if r[i] is not None] for i in range(12)}


def test_krippendorff_published_example() -> None:
    assert round(krippendorff_alpha(KRIPPENDORFF_EXAMPLE, "nominal") or 0.0, 3) == 0.743
    assert round(krippendorff_alpha(KRIPPENDORFF_EXAMPLE, "interval") or 0.0, 3) == 0.849


def test_krippendorff_by_hand() -> None:
    # Two units labelled by two people: (1, 1) and (1, 0). Nominal: n = 4 pairable values;
    # D_o = (1/4)·(0/1 + 2/1) = 1/2; all values 1, 1, 1, 0 → ordered unequal pairs 2·3 = 6,
    # D_e = 6/(4·3) = 1/2; α = 1 − 1 = 0. Interval gives the same here (differences are 0 or 1).
    units = {"a": [1.0, 1.0], "b": [1.0, 0.0]}
    assert krippendorff_alpha(units, "nominal") == pytest.approx(0.0, abs=1e-15)
    assert krippendorff_alpha(units, "interval") == pytest.approx(0.0, abs=1e-15)
    # perfect agreement with variation: α = 1; a unit labelled once is not pairable and ignored
    assert krippendorff_alpha({"a": ["pass", "pass"], "b": ["fail", "fail"], "c": ["pass"]}) == 1.0
    assert krippendorff_alpha({"a": [1.0, 1.0], "b": [1.0, 1.0]}) is None  # nothing varies
    assert krippendorff_alpha({"a": [1.0]}) is None


def test_length_mismatch_is_refused() -> None:
    with pytest.raises(ValueError, match="pair them one to one"):
        accuracy([1, 0], [1])
