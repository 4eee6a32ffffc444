"""Seeded data sets for the PPI coverage simulation (tests/rag_eval/test_stats_ppi.py and
bench/ppi_coverage.py): R data sets of n + N cases at once, human labels and several judges.

binary: Y ~ Bernoulli(0.7); judges flip Y on 5 %, 10 %, 20 % of cases, and a biased judge
turns 40 % of the people's 0s into 1s (it says "faithful" too often).
continuous: Y ~ Beta(5, 2) (mean 5/7); judges add N(0, sd) noise with sd 0.05, 0.10, 0.20,
and a biased judge adds 0.1 + N(0, 0.1).
The generating mean is returned: coverage is measured against it (the steering docs' STATISTICS.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def simulate(kind: str, reps: int, cases: int, rng: np.random.Generator) -> tuple[float, Array, dict[str, Array]]:
    """(generating mean, Y of shape (reps, cases), {judge name: Ŷ of the same shape})."""
    shape = (reps, cases)
    if kind == "binary":
        y = (rng.random(shape) < 0.7).astype(float)
        judges = {
            f"disagrees {int(e * 100)} %": np.where(rng.random(shape) < e, 1.0 - y, y) for e in (0.05, 0.10, 0.20)
        }
        judges["biased upwards"] = np.where((y == 0) & (rng.random(shape) < 0.4), 1.0, y)
        return 0.7, y, judges
    if kind == "continuous":
        y = rng.beta(5.0, 2.0, size=shape)
        judges = {f"noise sd {e:.2f}": y + rng.normal(0.0, e, shape) for e in (0.05, 0.10, 0.20)}
        judges["biased upwards"] = y + 0.1 + rng.normal(0.0, 0.1, shape)
        return 5.0 / 7.0, y, judges
    raise ValueError(f"simulate: kind={kind!r} must be 'binary' or 'continuous'")
