"""A rate with its arithmetic: numerator, denominator, the dialogues it covers and what was left out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Rate:
    """``value`` = numerator / denominator, absent (None) when the denominator is 0 — never 0.

    ``n``: dialogues measured; ``excluded``: dialogue ids left out of the denominator, by
    reason (e.g. ``not_finished``, ``student_did_not_answer``); ``errors``: dialogue ids
    counted in the denominator as not passing because their verdict could not be had
    (a judge error is never dropped from a denominator).
    """

    name: str
    numerator: float
    denominator: int
    n: int
    excluded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    errors: tuple[str, ...] = ()

    @property
    def value(self) -> float | None:
        return self.numerator / self.denominator if self.denominator else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "numerator": self.numerator,
            "denominator": self.denominator,
            "n": self.n,
            "excluded": {k: list(v) for k, v in self.excluded.items()},
            "errors": list(self.errors),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Rate:
        return cls(
            d["name"],
            d["numerator"],
            int(d["denominator"]),
            int(d["n"]),
            {k: tuple(v) for k, v in (d.get("excluded") or {}).items()},
            tuple(d.get("errors", ())),
        )
