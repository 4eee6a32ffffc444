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
from dataclasses import dataclass
from typing import Any, Sequence, Union

import numpy as np

from rag_eval.stats.distributions import check_confidence, two_sided_z
from rag_eval.stats.interval import Interval, no_interval
from rag_eval.stats.intervals import spread_reason

Values = Union[Sequence[float], "np.ndarray[Any, Any]"]


@dataclass(frozen=True)
class PPIEstimate:
    """The corrected mean with its interval, and the λ used (``tuned`` when PPI++ chose it)."""

    interval: Interval
    lam: float
    tuned: bool
    n_labelled: int
    n_unlabelled: int


def _arrays(y: Values, yhat: Values, yhat_unlabelled: Values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ya, ha, ua = (np.asarray(v, dtype=float).ravel() for v in (y, yhat, yhat_unlabelled))
    if ya.size != ha.size:
        raise ValueError(f"ppi: {ya.size} human labels but {ha.size} judge scores on the labelled units; pair them one to one")
    return ya, ha, ua


def tuned_lambda(y: Values, yhat: Values, yhat_unlabelled: Values) -> float:
    """PPI++'s power-tuned λ̂ (module doc), clipped to [0, 1]; 0 when the judge's scores do not vary."""
    ya, ha, ua = _arrays(y, yhat, yhat_unlabelled)
    n, big_n = ya.size, ua.size
    if n < 1 or big_n < 1:
        raise ValueError(f"tuned_lambda: needs labelled (n={n}) and unlabelled (N={big_n}) units")
    scores = np.concatenate([ha, ua])
    var = float(scores.var(ddof=1)) if scores.size > 1 else 0.0
    if var == 0.0:
        return 0.0
    cov = float(((ya - ya.mean()) * (ha - ha.mean())).sum() / n)
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def ppi_mean(y: Values, yhat: Values, yhat_unlabelled: Values,
             lam: float | None = None, confidence: float = 0.95) -> PPIEstimate:
    """θ̂_λ with its normal interval (module doc). ``lam=None`` tunes λ (PPI++); 1.0 is PPI; 0.0 labels only.

    Fewer than 2 labels: no interval, said. An explicit λ outside [0, 1] is refused.
    """
    check_confidence(confidence)
    ya, ha, ua = _arrays(y, yhat, yhat_unlabelled)
    n, big_n = int(ya.size), int(ua.size)
    tuned = lam is None
    if lam is None:
        lam = tuned_lambda(ya, ha, ua)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"ppi_mean: lam={lam} must be within [0, 1] (1 = classic PPI, 0 = labels only)")
    if n == 0 or (lam > 0 and big_n == 0):
        raise ValueError(f"ppi_mean: needs labelled units (n={n}) and, for lam > 0, unlabelled ones (N={big_n})")
    imputed = lam * float(ua.mean()) if lam > 0 else 0.0
    rectifier = ya - lam * ha
    estimate = imputed + float(rectifier.mean())
    if n < 2:
        interval = no_interval(estimate, n, confidence, "ppi", f"n={n} human label(s): an interval needs at least 2")
        return PPIEstimate(interval, lam, tuned, n, big_n)
    var_u = lam * lam * float(ua.var()) / big_n if lam > 0 else 0.0
    se = math.sqrt(var_u + float(rectifier.var()) / n)
    if se == 0.0:
        interval = no_interval(estimate, n + big_n, confidence, "ppi",
                               "every label, judge score and difference is constant: the spread is unknown, not zero")
        return PPIEstimate(interval, lam, tuned, n, big_n)
    half = two_sided_z(confidence) * se
    method = "labels_only" if lam == 0 else ("ppi" if lam == 1 and not tuned else "ppi++")
    interval = Interval(estimate=estimate, se=se, low=estimate - half, high=estimate + half,
                        n=n + big_n, confidence=confidence, method=method)
    return PPIEstimate(interval, lam, tuned, n, big_n)


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
    return Interval(estimate=mean, se=se, low=mean - half, high=mean + half, n=int(x.size),
                    confidence=confidence, method="judge_only")
