"""What the judge said in one run, per metric and case, read from a results dict.

Each tier says what its judge decided on one case (``Tier.judged_values``): the judge tier
``judge.<key>`` for every key of its verdict's metrics with the per-unit values of
``judge.faithfulness`` (claim *i*: yes 1, no 0, unknown kept as its own category) and
``judge.coverage`` (fact *j*: 1 / 0.5 / 0); the dialogue tier ``dialogue.hint_success``
(true 1, false 0). A case the judge failed on (an error, or a hint verdict without success)
has no value: it is counted in ``errors``, never given one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_eval import tiers
from rag_eval.results.file import case_results


@dataclass
class JudgedMetric:
    """One metric's judge values: ``values[case]``, the cases it erred on, and per-unit verdicts."""

    values: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    units: dict[tuple[str, str, int], float | str] = field(default_factory=dict)  # (case, unit, index) → value


def judged_metrics(results: Mapping[str, Any]) -> dict[str, JudgedMetric]:
    """Every judged metric of the run by key (``judge.faithfulness`` …), in sorted order."""
    out: dict[str, JudgedMetric] = {}
    failed: dict[str, list[str]] = {}  # tier -> cases its judge failed on as a whole
    for case in case_results(results):
        judged = tiers.of(case.tier).judged_values(case)
        if judged is None:
            continue
        prefix = f"{case.tier}."
        if judged.failed:
            failed.setdefault(prefix, []).append(case.id)
        for metric, value in judged.values.items():
            out.setdefault(prefix + metric, JudgedMetric()).values[case.id] = value
        for (metric, unit, index), verdict in judged.units.items():
            out.setdefault(prefix + metric, JudgedMetric()).units[(case.id, unit, index)] = verdict
        for metric in judged.errors:
            out.setdefault(prefix + metric, JudgedMetric()).errors.append(case.id)
    for key, judged_metric in out.items():
        for prefix, ids in failed.items():
            if key.startswith(prefix):
                judged_metric.errors.extend(ids)
    return dict(sorted(out.items()))
