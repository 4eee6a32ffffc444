"""The statistical options of thresholds.toml, checked at load: ``confidence``, ``decide``, ``alpha``.

[defaults]
confidence = 0.95                  # the level of every interval (metrics_n, gate lines)
decide = "estimate"                # or "clearly_below" / "clearly_above" (docs/thresholds.md)

[judge]
faithfulness = { min = 0.8, decide = "clearly_below" }   # per gate

[regression]
no_new_failures = { alpha = 0.05 }                     # exact McNemar on pass -> fail
"retrieval.recall@5" = { max_drop = 0.02, alpha = 0.05 }  # paired test of the drop
"""

from __future__ import annotations

import math
from typing import Any

from rag_eval.stats.floors import RULES


def confidence(value: Any, where: str) -> float:
    """A confidence level in (0, 1), e.g. 0.95."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.5 <= float(value) < 1.0:
        raise ValueError(f"{where}: confidence must be a number in [0.5, 1), e.g. 0.95, got {value!r}")
    return float(value)


def decide(value: Any, where: str) -> str:
    """One of the floor rules (rag_eval.stats.floors)."""
    if value not in RULES:
        raise ValueError(
            f"{where}: decide = {value!r}; valid: {', '.join(map(repr, RULES))} "
            '("estimate" decides on the value, the others on its interval)'
        )
    return str(value)


def alpha(value: Any, where: str) -> float:
    """A one-sided significance level in (0, 0.5), e.g. 0.05."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0.0 < float(value) < 0.5
    ):
        raise ValueError(f"{where}: alpha must be a significance level in (0, 0.5), e.g. 0.05, got {value!r}")
    return float(value)
