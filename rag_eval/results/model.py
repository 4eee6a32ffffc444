"""The results of a run, typed: ``RunResults`` holds what the results file holds.

Built once, at the end of a run or a shard merge (``finalize.conclude``), with the
baseline comparison and the verdict as inputs, and never changed afterwards: every
reader gets the same object or, from a stored file, ``RunResults.from_dict`` of the
validated dict (``results.file.load_results``). ``to_dict`` is the file's JSON, in the
file's key order; ``from_dict(to_dict(r)) == r``.

The run metadata, the per-item golden data, the tiers' blocks (the dialogue rates) and the
baseline diff stay read-only mappings of JSON values: their shapes are the schema's
(rag_eval/results.schema.json, with each tier's fragment), which checked them on the way in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from rag_eval.core.case import CaseResult
from rag_eval.gates.aggregate import MetricValue
from rag_eval.gates.result import GateResult
from rag_eval.gates.uncertainty import interval_of_row
from rag_eval.results.file import RESULTS_VERSION

Verdict = Literal["pass", "fail", "incomplete", "shard"]
VERDICTS: tuple[str, ...] = ("pass", "fail", "incomplete", "shard")
# The results file's own top-level keys; any other is a tier's block (``RunResults.blocks``).
CORE_KEYS = frozenset(
    {"version", "run", "verdict", "metrics", "metrics_n", "gates", "cases", "items", "baseline", "labels"}
)


@dataclass(frozen=True)
class RunResults:
    """One run's results file, typed.

    ``verdict``: pass / fail by every gate (regression gates included); incomplete: the
    run stopped early; shard: one shard of a sharded run, gated at the merge.
    ``metrics`` are the aggregates by ``<tier>.<metric>`` key, each with its n and errors
    (the file's ``metrics`` and ``metrics_n``). ``blocks`` are the top-level entries the
    tiers add (``Tier.results_block``: the dialogue tier's ``dialogue_rates``), empty when
    none; ``baseline`` is the comparison's diff, None when none was made.
    """

    run: Mapping[str, Any]
    verdict: Verdict
    metrics: Mapping[str, MetricValue]
    gates: tuple[GateResult, ...]
    cases: tuple[CaseResult, ...]
    items: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    blocks: Mapping[str, Any] = field(default_factory=dict)
    baseline: Mapping[str, Any] | None = None
    version: int = RESULTS_VERSION
    # the human-labels report (rag_eval.labels.compare.LabelReport.to_dict), None without labels
    labels: Mapping[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_dict(self) -> dict[str, Any]:
        """The results file's JSON object (rag_eval/results.schema.json)."""
        out: dict[str, Any] = {
            "version": self.version,
            "run": dict(self.run),
            "verdict": self.verdict,
            "metrics": {k: v.value for k, v in self.metrics.items()},
            "metrics_n": {k: v.to_dict() for k, v in self.metrics.items()},
            "gates": [g.to_dict() for g in self.gates],
        }
        out.update((k, v) for k, v in self.blocks.items() if k not in CORE_KEYS)
        out["cases"] = [c.to_dict() for c in self.cases]
        out["items"] = {k: dict(v) for k, v in self.items.items()}
        if self.baseline is not None:
            out["baseline"] = dict(self.baseline)
        if self.labels is not None:
            out["labels"] = dict(self.labels)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunResults:
        """A results dict that ``results.file.check_results`` accepted (a stored file goes
        through ``load_results`` first: this trusts the shapes the schema checked)."""
        verdict = str(d["verdict"])
        if verdict not in VERDICTS:
            raise ValueError(f"verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
        baseline = d.get("baseline")
        return cls(
            run=dict(d["run"]),
            verdict=cast(Verdict, verdict),  # checked against VERDICTS above
            metrics={str(k): metric_value_of(v) for k, v in d["metrics_n"].items()},
            gates=tuple(GateResult.from_dict(g) for g in d["gates"]),
            cases=tuple(CaseResult.from_dict(c) for c in d["cases"]),
            items={str(k): dict(v) for k, v in d["items"].items()},
            blocks={str(k): v for k, v in d.items() if k not in CORE_KEYS},
            baseline=None if baseline is None else dict(baseline),
            version=int(d["version"]),
            labels=None if d.get("labels") is None else dict(d["labels"]),
        )


def metric_value_of(row: Mapping[str, Any]) -> MetricValue:
    """A ``metrics_n`` row (``MetricValue.to_dict``) read back."""
    # Numbers as they were written (an int stays an int), so to_dict writes them back the same.
    n = int(row["n"])
    return MetricValue(
        row["value"],
        n,
        int(row["errors"]),
        row.get("numerator"),
        row.get("denominator"),
        interval_of_row(row, row["value"], n),
    )
