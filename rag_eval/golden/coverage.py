"""Coverage gaps: a golden set's items counted per cell of any tag dimensions (e.g.
``scenario × difficulty``), the empty and thin cells (fewer than ``minimum`` items), the
most important first (docs/golden-sets.md#coverage-gaps).

Cells are every combination of the values seen for each dimension; the ``scenario``
dimension also has every scenario the drafting recipes write (``DRAFTED_SCENARIOS``), so
a scenario nobody wrote yet shows as an empty cell. A value's importance comes from the
items that carry it: ``critical`` (a tag ``critical`` of ``true``, ``yes``, ``1`` or
``high``) and ``priority`` (a number, or ``high`` 3 / ``medium`` 2 / ``low`` 1), the
highest of those items'. A cell is as important as its most important value. Gaps are
ordered critical first, then by priority, then fewest items, then by name.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag_eval.golden.model import SCENARIOS, GoldenItem

DRAFTED_SCENARIOS: tuple[str, ...] = (
    "standard",
    "colloquial",
    "no-term",
    "missing-condition",
    "cross-topic",
    "multi-chunk",
    "similar-stem",
    "negative",
)
_TRUE = frozenset({"true", "yes", "1", "high"})
_LEVELS = {"high": 3.0, "medium": 2.0, "low": 1.0}
MISSING = "(none)"  # an item without the dimension's tag


@dataclass(frozen=True)
class Cell:
    values: tuple[tuple[str, str], ...]  # (dimension, value), in the dimensions' order
    count: int
    thin: bool
    critical: bool
    priority: float

    @property
    def label(self) -> str:
        return " × ".join(f"{d}={v}" for d, v in self.values)


def _value(item: GoldenItem, dimension: str) -> str:
    return item.scenario if dimension == "scenario" else str(item.tags.get(dimension, MISSING))


def _priority(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        return _LEVELS.get(raw.strip().lower(), 0.0)


def coverage_cells(items: Sequence[GoldenItem], dimensions: Sequence[str], minimum: int) -> list[Cell]:
    """Every cell of ``dimensions``, gaps (empty or below ``minimum``) first in importance order."""
    values: list[list[str]] = []
    for d in dimensions:
        seen = sorted({_value(i, d) for i in items})
        if d == "scenario":
            known = [s for s in dict.fromkeys((*SCENARIOS, *DRAFTED_SCENARIOS))]
            seen = known + [s for s in seen if s not in known]
        values.append(seen)
    counts = Counter(tuple(_value(i, d) for d in dimensions) for i in items)
    critical: set[tuple[str, str]] = set()
    priority: dict[tuple[str, str], float] = {}
    for item in items:
        for d in dimensions:
            key = (d, _value(item, d))
            if str(item.tags.get("critical", "")).strip().lower() in _TRUE:
                critical.add(key)
            priority[key] = max(priority.get(key, 0.0), _priority(str(item.tags.get("priority", "0"))))
    cells = []
    for combo in itertools.product(*values):
        pairs = tuple(zip(dimensions, combo))
        n = counts.get(combo, 0)
        cells.append(
            Cell(
                pairs,
                n,
                n < minimum,
                any(p in critical for p in pairs),
                max((priority.get(p, 0.0) for p in pairs), default=0.0),
            )
        )
    return sorted(cells, key=lambda c: (not c.thin, not c.critical, -c.priority, c.count, c.label))


def gaps_table(cells: Sequence[Cell], minimum: int) -> str:
    """The gaps as text lines (the full cell list follows, so every figure has its n)."""
    gaps = [c for c in cells if c.thin]
    lines = [f"coverage gaps: {len(gaps)} of {len(cells)} cells have fewer than {minimum} item(s)"]
    for c in gaps:
        marks = ("critical, " if c.critical else "") + (f"priority {c.priority:g}, " if c.priority else "")
        lines.append(f"  {c.label}: {c.count} item(s) ({marks}{'empty' if not c.count else 'thin'})")
    return "\n".join(lines)
