"""The one record every interval function returns: an estimate, its standard error and its bounds.

An interval that cannot be computed is absent and says why (``reason``): n < 2, or every
value equal (a zero spread is not certainty, it is an unknown spread), or nothing to count.
``low``/``high``/``se`` are then ``None``, never a zero-width interval.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Interval:
    """``estimate`` with standard error ``se`` and a two-sided ``confidence`` interval [low, high].

    method: "wilson", "t", "bootstrap", "ratio_bootstrap", "paired_bootstrap", "ppi", ….
    n: the number of units (cases, dialogues) the interval is over.
    reason: why there is no interval (then low, high and se are None), else None.
    """

    estimate: float | None
    se: float | None
    low: float | None
    high: float | None
    n: int
    confidence: float
    method: str
    reason: str | None = None

    @property
    def has_interval(self) -> bool:
        """True when both bounds are known."""
        return self.low is not None and self.high is not None

    def to_dict(self) -> dict[str, Any]:
        """JSON primitives, for results files and xdist."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Interval:
        """Inverse of ``to_dict``."""
        return cls(**data)


def no_interval(estimate: float | None, n: int, confidence: float, method: str, reason: str) -> Interval:
    """An Interval without bounds, saying ``reason``."""
    return Interval(
        estimate=estimate, se=None, low=None, high=None, n=n, confidence=confidence, method=method, reason=reason
    )


def fmt_interval(interval: Interval, digits: int = 2) -> str:
    """``0.74 [0.66, 0.82]``, or ``0.74 (no interval: every value equal)``."""
    if interval.estimate is None:
        return f"no estimate ({interval.reason})"
    value = f"{interval.estimate:.{digits}f}"
    if interval.low is None or interval.high is None:
        return f"{value} (no interval: {interval.reason})"
    return f"{value} [{interval.low:.{digits}f}, {interval.high:.{digits}f}]"
