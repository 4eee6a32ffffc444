"""A system's own retrieval stages, as it declares them.

A declaration names the stages in pipeline order, grouping stages that run side by
side (``[["dense", "sparse"], "hybrid", "final"]``: two retrievers, then fusion, then
the final list), which list is final (what the answer sees) and, optionally, which
stage is score-thresholded (for negative items: "did anything pass the threshold?").
Per-stage metrics, the loss diagnosis, gate keys and the report's columns all use these
names. A system that declares nothing gets the stages it returned as one level of
unknown order before its final list (``infer_stages``): nothing is assumed about which
ran after which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.core.errors import ConfigError

#: Names a stage may not take: they are metric-key words (``doc.recall@5``, ``negative.*``).
RESERVED: frozenset[str] = frozenset({"doc", "negative", "check", "retrieval", "pass_rate", "error_rate", "fail_count"})
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
DEFAULT_FINAL = "final"
SHAPE = (
    'stages = ["dense", "sparse", "hybrid", "final"] or [["dense", "sparse"], "hybrid", "final"], '
    'final_stage = "final", thresholded_stage = "dense"'
)


@dataclass(frozen=True)
class StageSpec:
    """Ordered levels of stage names (a level holds stages that run side by side)."""

    levels: tuple[tuple[str, ...], ...]
    final: str
    thresholded: str | None = None
    declared: bool = True  # False: inferred from what the system returned

    def __post_init__(self) -> None:
        names = self.names
        for name in names:
            check_name(name, "stages")
        if len(set(names)) != len(names):
            raise ConfigError(f"stages: a stage is named twice in {list(names)}")
        if self.final not in names:
            raise ConfigError(f"final_stage = {self.final!r} is not one of the stages {list(names)}")
        if self.thresholded is not None and self.thresholded not in names:
            raise ConfigError(f"thresholded_stage = {self.thresholded!r} is not one of the stages {list(names)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for level in self.levels for n in level)

    def level_of(self, name: str) -> int:
        for i, level in enumerate(self.levels):
            if name in level:
                return i
        raise KeyError(name)

    @staticmethod
    def label(level: Sequence[str]) -> str:
        """How a level is named in diagnoses and the report: ``dense+sparse``."""
        return "+".join(level)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every name a loss can be attributed to, in pipeline order."""
        return (*(self.label(level) for level in self.levels), "retrieval")

    def without(self, name: str) -> StageSpec:
        """The same declaration with one stage left out (e.g. rag_app with no reranker)."""
        levels = tuple(tuple(n for n in level if n != name) for level in self.levels)
        return StageSpec(tuple(lv for lv in levels if lv), self.final, self.thresholded, self.declared)

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": [list(level) for level in self.levels],
            "final": self.final,
            "thresholded": self.thresholded,
            "declared": self.declared,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StageSpec:
        return cls(
            tuple(tuple(str(n) for n in level) for level in d["levels"]),
            str(d["final"]),
            d.get("thresholded"),
            bool(d.get("declared", True)),
        )


def check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: stage name {name!r} must be letters, digits, '_' or '-' (starting with a letter)")
    if name in RESERVED:
        raise ConfigError(
            f"{where}: {name!r} cannot name a stage (it is a metric-key word: {', '.join(sorted(RESERVED))})"
        )
    return name


def parse_stages(stages: Any, final: Any = None, thresholded: Any = None, where: str = "stages") -> StageSpec:
    """A declaration from configuration or a system attribute; the message shows the shape."""
    if isinstance(stages, StageSpec):
        return stages
    if isinstance(stages, Mapping):
        return parse_stages(
            stages.get("stages", stages.get("order")),
            stages.get("final", stages.get("final_stage", final)),
            stages.get("thresholded", stages.get("thresholded_stage", thresholded)),
            where,
        )
    if not isinstance(stages, (list, tuple)) or not stages:
        raise ConfigError(f"{where}: expected a non-empty list of stage names, got {stages!r}; e.g. {SHAPE}")
    levels: list[tuple[str, ...]] = []
    for entry in stages:
        group = entry if isinstance(entry, (list, tuple)) else [entry]
        if not group:
            raise ConfigError(f"{where}: an empty group in {stages!r}")
        levels.append(tuple(check_name(n, where) for n in group))
    names = [n for level in levels for n in level]
    final_name = str(final) if final is not None else names[-1]
    try:
        return StageSpec(tuple(levels), final_name, str(thresholded) if thresholded is not None else None)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def infer_stages(returned: Iterable[str], final: str = DEFAULT_FINAL) -> StageSpec:
    """No declaration: only what the returned data proves. Every stage list comes before
    the final list (the one the answer sees), but their order among themselves is unknown
    (``dense`` and ``sparse`` may run side by side, or ``hybrid`` after both), so they form
    one level: a diagnosis names where a gold piece was and was not, never a "cut at"
    between two of them, and a loss before the final list is blamed on them together."""
    names = tuple(n for n in dict.fromkeys(returned) if n != final)
    levels = (names, (final,)) if names else ((final,),)
    return StageSpec(levels, final, None, declared=False)
