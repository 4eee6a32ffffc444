"""Repeated-trial metrics: pass@k, pass^k, a Wilson interval and flakiness classes.

A case is run n times independently and c of those trials pass (METRICS.md of the
project's steering docs, "Repeated trials"). Two questions have different answers:

- pass@k = 1 − C(n−c, k)/C(n, k) (Chen et al. 2021): the chance that at least one of k
  trials drawn without replacement passes — "can the system do it at all?".
- pass^k = C(c, k)/C(n, k) (τ-bench): the chance that all k drawn trials pass —
  "can users rely on it every time?".

pass@k uses the numerically stable product form of the human-eval estimator, because the
binomials overflow floats for large n; pass^k uses exact integer ``math.comb`` because the
ratio of two exact ints is correctly rounded. The per-case pass rate c/n is reported with a
Wilson score interval, which (unlike the normal approximation) stays inside [0, 1] and is
sensible at c = 0 and c = n — it shows how much a given n actually buys. The interval is
``rag_eval.stats.closed_form.wilson_interval``, the one Wilson of the package.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from rag_eval.stats.closed_form import wilson_interval

TrialClass = Literal["stable_pass", "flaky", "stable_fail"]


def _check_counts(func: str, n: int, c: int, k: int) -> None:
    """Validate (n, c, k); shared by pass_at_k and pass_hat_k so both fail the same way."""
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{func}: {name} must be an int, got {value!r} ({type(value).__name__})")
    if k < 1:
        raise ValueError(f"{func}: k={k} must be at least 1; set k to a positive number of trials")
    if n < k:
        raise ValueError(
            f"{func}: configuration error: n trials must be at least k (n={n}, k={k}); "
            f"run at least {k} trials per case or lower k to {n} or less"
        )
    if not 0 <= c <= n:
        raise ValueError(f"{func}: c={c} passing trials must be within 0..n={n}; c counts passes among the n trials")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimate from c passes in n trials: 1 − C(n−c, k)/C(n, k).

    Computed as ``1 − prod(1 − k / arange(n−c+1, n+1))`` (the human-eval estimator): with
    fewer than k failures every k-subset contains a pass, so the answer is exactly 1.0.
    Raises ValueError when n < k (a configuration error) or c is outside 0..n.
    """
    _check_counts("pass_at_k", n, c, k)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """τ-bench pass^k from c passes in n trials: C(c, k)/C(n, k), exact via ``math.comb``.

    ``math.comb(c, k)`` is 0 when c < k, so a case with fewer than k passes scores 0.0.
    Same validation as ``pass_at_k``.
    """
    _check_counts("pass_hat_k", n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def classify(c: int, n: int) -> TrialClass:
    """stable_pass (c = n), flaky (0 < c < n) or stable_fail (c = 0)."""
    if n <= 0:
        raise ValueError(f"classify: n={n} trials must be at least 1 to classify a case")
    if not 0 <= c <= n:
        raise ValueError(f"classify: c={c} passing trials must be within 0..n={n}")
    if c == n:
        return "stable_pass"
    if c == 0:
        return "stable_fail"
    return "flaky"


@dataclass(frozen=True)
class TrialSummary:
    """Everything repeated trials say about one case: c passes out of n, scored at k."""

    n: int
    c: int
    k: int
    pass_at_k: float
    pass_hat_k: float
    wilson_low: float
    wilson_high: float
    cls: TrialClass

    @property
    def trial_pass_rate(self) -> float:
        """c/n for this case."""
        return self.c / self.n

    def to_metrics(self) -> dict[str, float]:
        """Flat float metrics for results/reports.

        The per-case rate is ``trial_pass_rate``, not ``pass_rate``: the pytest plugin
        already uses ``pass_rate`` for the tier-level share of passing outcomes.
        """
        return {
            f"pass@{self.k}": self.pass_at_k,
            f"pass^{self.k}": self.pass_hat_k,
            "trial_pass_rate": self.trial_pass_rate,
            "wilson_low": self.wilson_low,
            "wilson_high": self.wilson_high,
            "flaky": 1.0 if self.cls == "flaky" else 0.0,
            "stable_pass": 1.0 if self.cls == "stable_pass" else 0.0,
            "stable_fail": 1.0 if self.cls == "stable_fail" else 0.0,
        }


def summarize(outcomes: Sequence[bool], k: int) -> TrialSummary:
    """Summarise one case's trial outcomes (True = the trial passed) at k.

    Raises ValueError when fewer than k outcomes are given (n trials must be at least k).
    """
    n = len(outcomes)
    c = sum(1 for o in outcomes if o)
    at_k = pass_at_k(n, c, k)  # validates n >= k >= 1 first, before n = 0 could reach Wilson
    low, high = wilson_interval(c, n)
    return TrialSummary(
        n=n,
        c=c,
        k=k,
        pass_at_k=at_k,
        pass_hat_k=pass_hat_k(n, c, k),
        wilson_low=low,
        wilson_high=high,
        cls=classify(c, n),
    )
