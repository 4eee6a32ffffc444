"""A retrieval case's typed details (``$defs/retrievalDetails``): the ranked lists per stage,
the gold as the report shows it, where gold ranked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Hit = tuple[str, float]  # (chunk id, score rounded to 6 places); a JSON pair


@dataclass(frozen=True)
class GoldView:
    """The case's gold as the report shows it (``chunks``/``parents`` None: not known at that level)."""

    chunks: tuple[tuple[str, ...], ...] | None
    parents: tuple[tuple[str, ...], ...] | None
    docs: tuple[tuple[str, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"chunks": _lists(self.chunks), "parents": _lists(self.parents), "docs": _lists(self.docs)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GoldView:
        return cls(_tuples(d["chunks"]), _tuples(d["parents"]), _tuples(d["docs"]) or ())


@dataclass(frozen=True)
class RetrievalDetails:
    """A retrieval case's ``details`` (schema ``$defs/retrievalDetails``). ``absent`` is
    written only when some metric could not be computed, ``gold_ranks`` only for an item
    with gold, ``measured_only`` only for a negative under negative = "measure"."""

    stages: Mapping[str, tuple[Hit, ...]]
    stage_levels: tuple[tuple[str, ...], ...]
    final_stage: str
    degraded: bool
    degradation_reason: str | None
    gold: GoldView
    absent: tuple[str, ...] = ()
    gold_ranks: tuple[Mapping[str, int | None], ...] | None = None
    measured_only: bool = False
    not_indexed: tuple[str, ...] = ()  # gold chunk ids the system's lookup does not hold
    gold_seen: tuple[str, ...] | None = None  # gold ids (of any item) this case returned; None: not recorded
    stage_ms: Mapping[str, float] = field(default_factory=dict)  # the system's own per-stage times

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stages": {name: [list(h) for h in hits] for name, hits in self.stages.items()},
            "stage_levels": [list(level) for level in self.stage_levels],
            "final_stage": self.final_stage,
            "degraded": self.degraded,
            "degradation_reason": self.degradation_reason,
            "gold": self.gold.to_dict(),
        }
        if self.measured_only:
            out["measured_only"] = True  # not a pass: left out of pass_rate, counted apart
        if self.absent:
            out["absent"] = list(self.absent)
        if self.gold_ranks is not None:
            out["gold_ranks"] = [dict(r) for r in self.gold_ranks]
        if self.not_indexed:
            out["not_indexed"] = list(self.not_indexed)
        if self.gold_seen is not None:
            out["gold_seen"] = list(self.gold_seen)
        if self.stage_ms:  # written only when the system timed its stages: absent, never 0
            out["stage_ms"] = dict(self.stage_ms)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RetrievalDetails:
        ranks = d.get("gold_ranks")
        return cls(
            {name: tuple((str(h[0]), float(h[1])) for h in hits) for name, hits in d["stages"].items()},
            _tuples(d["stage_levels"]) or (),
            str(d["final_stage"]),
            bool(d.get("degraded", False)),
            d.get("degradation_reason"),
            GoldView.from_dict(d["gold"]),
            tuple(d.get("absent", ())),
            tuple(dict(r) for r in ranks) if ranks is not None else None,
            bool(d.get("measured_only", False)),
            tuple(d.get("not_indexed", ())),
            tuple(d["gold_seen"]) if d.get("gold_seen") is not None else None,
            {str(k): float(v) for k, v in (d.get("stage_ms") or {}).items()},
        )


def _lists(groups: tuple[tuple[str, ...], ...] | None) -> list[list[str]] | None:
    return [list(g) for g in groups] if groups is not None else None


def _tuples(groups: Sequence[Sequence[str]] | None) -> tuple[tuple[str, ...], ...] | None:
    return tuple(tuple(g) for g in groups) if groups is not None else None
