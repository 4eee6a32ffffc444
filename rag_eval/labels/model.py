"""One human label and the scales labels are given on (docs/human-labels.md).

A label is a number in [0, 1] on the metric's own scale. Verdict words map onto it the
way the judge's own verdicts do (``rag_eval.judge.schema``): yes / covered / relevant /
supported → 1, partially_covered / partially_relevant → 0.5, no / not_covered /
not_relevant / not_supported → 0; JSON ``true`` / ``false`` are 1 / 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Unit = Literal["claim", "fact"]
UNITS: tuple[Unit, ...] = ("claim", "fact")

VERDICT_VALUE: Mapping[str, float] = {
    "yes": 1.0,
    "no": 0.0,
    "covered": 1.0,
    "partially_covered": 0.5,
    "not_covered": 0.0,
    "relevant": 1.0,
    "partially_relevant": 0.5,
    "not_relevant": 0.0,
    "supported": 1.0,
    "not_supported": 0.0,
}
# The verdicts a per-unit label may use: a claim is supported or not, a key fact covered, partly or not.
UNIT_VERDICTS: Mapping[Unit, tuple[str, ...]] = {
    "claim": ("yes", "no"),
    "fact": ("covered", "partially_covered", "not_covered"),
}
# The case metric each unit belongs to.
UNIT_METRIC: Mapping[Unit, str] = {"claim": "judge.faithfulness", "fact": "judge.coverage"}


@dataclass(frozen=True)
class Label:
    """A person's ``value`` for ``metric`` of ``case`` (or of its ``unit`` number ``index``).

    ``verdict``: the word the label was given as (None for a number); ``source``: file:line.
    """

    case: str
    metric: str
    value: float
    annotator: str
    unit: Unit | None = None
    index: int | None = None
    verdict: str | None = None
    note: str = ""
    source: str = ""

    @property
    def id(self) -> str:
        """What makes a label unique in a file: one value per person, case, metric and unit."""
        unit = f" {self.unit} {self.index}" if self.unit is not None else ""
        return f"{self.case} · {self.metric}{unit} · {self.annotator}"
