"""Prediction-powered inference for a mean: a judge's scores on every case plus a few human labels.

n labelled units carry a human label Y and the judge's score Ŷ; N other units carry the
judge's score Ŷᵘ only (the two sets are apart: a labelled unit's score is in Ŷ, not in Ŷᵘ).
For a weight λ (Angelopoulos et al. 2023; PPI++, Angelopoulos, Duchi, Zrnic 2023):

    θ̂_λ = λ·mean(Ŷᵘ) + mean(Y − λŶ),
    SE  = √(λ²·Var(Ŷᵘ)/N + Var(Y − λŶ)/n)      (Var with ddof = 0, as ppi_py),
    interval θ̂_λ ± z₁₋α/₂·SE.

λ = 1 is classic PPI (ARES), λ = 0 the labels-only mean. PPI++ tunes λ:

    λ̂ = Ĉov(Y, Ŷ) / ((1 + n/N)·Var(Ŷ ∪ Ŷᵘ)), clipped to [0, 1],

with Ĉov = (1/n)·Σᵢ (Yᵢ − Ȳ)(Ŷᵢ − mean(Ŷ)) over the labelled units, and Var over all
n + N judge scores with ddof = 1 — exactly ppi_py's ``_calc_lam_glm`` for a mean, so the two agree
to rounding. The interval is valid whatever the judge's bias; λ̂ makes it no wider than
labels-only up to estimation noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from rag_eval.stats.closed_form import spread_reason
from rag_eval.stats.distributions import check_confidence, two_sided_z
from rag_eval.stats.interval import Interval, no_interval

Values = Union[Sequence[float], "np.ndarray[Any, Any]"]


@dataclass(frozen=True)
class PPIEstimate:
    """The corrected mean with its interval, and the λ used (``tuned`` when PPI++ chose it)."""

    interval: Interval
    lam: float
    tuned: bool
    n_labelled: int
    n_unlabelled: int


@dataclass(frozen=True)
class PPIRows:
    """Row-wise PPI over R independent data sets at once (simulations): arrays of shape (R,)."""

    estimate: np.ndarray[Any, Any]
    se: np.ndarray[Any, Any]
    lam: np.ndarray[Any, Any]


def _rows(a: Values) -> np.ndarray[Any, Any]:
    x = np.asarray(a, dtype=float)
    return x.reshape(1, -1) if x.ndim == 1 else x


def ppi_rows(y: Values, yhat: Values, yhat_unlabelled: Values, lam: float | None = None) -> PPIRows:
    """θ̂_λ, SE and λ for each row (module doc): y and yhat of shape (R, n), yhat_unlabelled (R, N).

    ``lam=None`` tunes λ per row (PPI++; 0 when a row's judge scores do not vary), else the
    given λ for every row. The one implementation: ``ppi_mean`` is this on one row.
    """
    ya, ha, ua = _rows(y), _rows(yhat), _rows(yhat_unlabelled)
    if ya.shape != ha.shape:
        raise ValueError(
            f"ppi: {ya.shape[-1]} human labels but {ha.shape[-1]} judge scores on the labelled units; "
            "pair them one to one"
        )
    n, big_n = ya.shape[1], ua.shape[1]
    if n < 1 or big_n < 1:
        raise ValueError(f"ppi: needs labelled (n={n}) and unlabelled (N={big_n}) units")
    if lam is None:
        # Var over all n + N scores (ddof = 1) from sums, without concatenating (R, n + N) arrays
        total, squares = ha.sum(axis=1) + ua.sum(axis=1), (ha * ha).sum(axis=1) + (ua * ua).sum(axis=1)
        var = np.maximum(squares - total * total / (n + big_n), 0.0) / (n + big_n - 1)
        cov = ((ya - ya.mean(axis=1, keepdims=True)) * (ha - ha.mean(axis=1, keepdims=True))).sum(axis=1) / n
        with np.errstate(divide="ignore", invalid="ignore"):
            # a variance at rounding level of the scores' second moment means constant scores: λ = 0
            varies = var > 1e-12 * np.maximum(squares / (n + big_n), 1e-300)
            lams = np.where(varies, np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0), 0.0)
    elif 0.0 <= lam <= 1.0:
        lams = np.full(ya.shape[0], float(lam))
    else:
        raise ValueError(f"ppi: lam={lam} must be within [0, 1] (1 = classic PPI, 0 = labels only)")
    rectifier = ya - lams[:, None] * ha
    estimate = lams * ua.mean(axis=1) + rectifier.mean(axis=1)
    se = np.sqrt(lams**2 * ua.var(axis=1) / big_n + rectifier.var(axis=1) / n)
    return PPIRows(estimate=estimate, se=se, lam=lams)


def tuned_lambda(y: Values, yhat: Values, yhat_unlabelled: Values) -> float:
    """PPI++'s power-tuned λ̂ (module doc), clipped to [0, 1]; 0 when the judge's scores do not vary."""
    return float(ppi_rows(y, yhat, yhat_unlabelled).lam[0])


def ppi_mean(
    y: Values, yhat: Values, yhat_unlabelled: Values, lam: float | None = None, confidence: float = 0.95
) -> PPIEstimate:
    """θ̂_λ with its normal interval (module doc). ``lam=None`` tunes λ (PPI++); 1.0 is PPI; 0.0 labels only.

    Fewer than 2 labels, or a zero SE (nothing varies): no interval, said.
    """
    check_confidence(confidence)
    rows = ppi_rows(y, yhat, yhat_unlabelled, lam)
    n, big_n = _rows(y).shape[1], _rows(yhat_unlabelled).shape[1]
    estimate, se, used = float(rows.estimate[0]), float(rows.se[0]), float(rows.lam[0])
    tuned = lam is None
    method = "labels_only" if used == 0 and not tuned else ("ppi" if used == 1 and not tuned else "ppi++")
    reason = (
        f"n={n} human label(s): an interval needs at least 2"
        if n < 2
        else (
            "every label, judge score and difference is constant: the spread is unknown, not zero" if se == 0 else None
        )
    )
    if reason is not None:
        return PPIEstimate(no_interval(estimate, n + big_n, confidence, method, reason), used, tuned, n, big_n)
    half = two_sided_z(confidence) * se
    interval = Interval(
        estimate=estimate,
        se=se,
        low=estimate - half,
        high=estimate + half,
        n=n + big_n,
        confidence=confidence,
        method=method,
    )
    return PPIEstimate(interval, used, tuned, n, big_n)


def judge_only(yhat_all: Values, confidence: float = 0.95) -> Interval:
    """The judge's mean over all its scores with the normal interval mean ± z·s/√n (s ddof = 1).

    Its interval covers the judge's own noise only, not its bias: the point of PPI.
    """
    check_confidence(confidence)
    x = np.asarray(yhat_all, dtype=float).ravel()
    mean = float(x.mean()) if x.size else None
    reason = spread_reason(x)
    if reason is not None or mean is None:
        return no_interval(mean, int(x.size), confidence, "judge_only", reason or "no scores")
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    half = two_sided_z(confidence) * se
    return Interval(
        estimate=mean,
        se=se,
        low=mean - half,
        high=mean + half,
        n=int(x.size),
        confidence=confidence,
        method="judge_only",
    )
