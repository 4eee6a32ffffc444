"""How far a judge agrees with people, and people with each other.

Judge vs human on the labelled units: accuracy and Cohen's κ (binary or categorical
verdicts), Spearman ρ and mean absolute error (continuous scores), and the judge's bias
mean(Ŷ − Y). Between annotators: Krippendorff's α (nominal or interval), which takes any
number of annotators and missing labels. A coefficient that is undefined for the data
(no variation to agree on) is ``None``, never 0 or 1.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

import numpy as np

from rag_eval.stats import correlation


def _pair(a: Sequence[object], b: Sequence[object], func: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"{func}: {len(a)} labels against {len(b)}; pair them one to one")
    if len(a) == 0:
        raise ValueError(f"{func}: no paired labels")


def accuracy(human: Sequence[Hashable], judge: Sequence[Hashable]) -> float:
    """Share of units where the two verdicts are equal: (1/n)·Σ [hᵢ = jᵢ]."""
    _pair(human, judge, "accuracy")
    return sum(1 for h, j in zip(human, judge) if h == j) / len(human)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """κ = (p_o − p_e)/(1 − p_e): p_o observed agreement, p_e = Σ_k p_a(k)·p_b(k).

    None when p_e = 1 (both raters used one and the same category: nothing to agree beyond chance).
    """
    _pair(a, b, "cohen_kappa")
    n = len(a)
    p_o = accuracy(a, b)
    cats = set(a) | set(b)
    p_e = sum((sum(1 for x in a if x == k) / n) * (sum(1 for x in b if x == k) / n) for k in cats)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """ρ = Pearson correlation of the (tie-averaged) ranks; None when either side is constant
    (:func:`rag_eval.stats.correlation.spearman`)."""
    _pair(x, y, "spearman")
    return correlation.spearman(x, y)


def mean_absolute_error(human: Sequence[float], judge: Sequence[float]) -> float:
    """(1/n)·Σ |Ŷᵢ − Yᵢ|."""
    _pair(human, judge, "mean_absolute_error")
    return float(np.abs(np.asarray(judge, dtype=float) - np.asarray(human, dtype=float)).mean())


def judge_bias(human: Sequence[float], judge: Sequence[float]) -> float:
    """(1/n)·Σ (Ŷᵢ − Yᵢ): positive when the judge scores higher than people."""
    _pair(human, judge, "judge_bias")
    return float((np.asarray(judge, dtype=float) - np.asarray(human, dtype=float)).mean())


Level = Literal["nominal", "interval"]


def krippendorff_alpha(units: Mapping[str, Sequence[float | str]], level: Level = "nominal") -> float | None:
    """Krippendorff's α = 1 − D_o/D_e over units each labelled by any number of annotators.

    Only units with m_u ≥ 2 labels are pairable; n = Σ m_u over them.
    D_o = (1/n)·Σ_u (1/(m_u − 1))·Σ_{i≠j in u} δ²(v_i, v_j),
    D_e = (1/(n(n − 1)))·Σ_{i≠j over all pairable values} δ²(v_i, v_j),
    δ² = [v_i ≠ v_j] (nominal) or (v_i − v_j)² (interval). None when D_e = 0 (one value
    throughout) or fewer than 2 pairable values. Krippendorff (2011), "Computing
    Krippendorff's Alpha-Reliability": his 4-annotator example gives 0.743 / 0.849.
    """
    if level not in ("nominal", "interval"):
        raise ValueError(f"krippendorff_alpha: level={level!r} must be 'nominal' or 'interval'")
    groups = [list(v) for v in units.values() if len(v) >= 2]
    if not groups:
        return None
    if level == "nominal":
        codes: dict[float | str, int] = {}
        groups_num = [np.array([codes.setdefault(v, len(codes)) for v in g], dtype=float) for g in groups]
    else:
        groups_num = [np.asarray(g, dtype=float) for g in groups]

    def delta2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        diff = x[:, None] - y[None, :]
        return (diff != 0).astype(float) if level == "nominal" else diff * diff

    n = sum(g.size for g in groups_num)
    d_o = sum(float(delta2(g, g).sum()) / (g.size - 1) for g in groups_num) / n
    pooled = np.concatenate(groups_num)
    d_e = float(delta2(pooled, pooled).sum()) / (n * (n - 1))
    if d_e == 0.0:
        return None
    return 1.0 - d_o / d_e
