"""``python -m rag_eval power RESULTS --metric recall@5 --drop 0.03``: how many golden items a
gate needs to see a drop, from the per-case values of a results file.

The spread comes from the run itself (no baseline): the standard deviation of the
per-case values (errors at the metric's worst value, as the gate counts them), or
√(p(1 − p)) when every value is 0 or 1. For a paired comparison against a baseline the
spread of the per-case *differences* is smaller when the runs agree on most cases, so
this is the conservative figure (docs/thresholds.md, "What a gate can see").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_eval.gates.paired_gates import per_case
from rag_eval.stats.power import mde_no_baseline, n_paired_continuous


class PowerError(ValueError):
    """The metric is not in the results file, or the numbers asked for are not usable."""


@dataclass(frozen=True)
class PowerAnswer:
    metric: str
    n: int
    sd: float
    basis: str
    needed: int
    mde_now: float
    drop: float
    alpha: float
    power: float

    def lines(self) -> list[str]:
        have = "enough" if self.needed <= self.n else f"{self.needed - self.n} more than this run's {self.n}"
        return [
            f"{self.metric}: n={self.n}, per-case spread {self.sd:.4f} ({self.basis})",
            f"to see a drop of {self.drop:g} with {self.power:.0%} power at one-sided alpha={self.alpha:g}: "
            f"{self.needed} items ({have})",
            f"with {self.n} items the smallest detectable drop is {self.mde_now:.3g}",
        ]


def resolve_metric(results: Mapping[str, Any], name: str) -> str:
    """``recall@5`` → ``retrieval.recall@5``: the one ``metrics`` key that is or ends with it."""
    keys = sorted(results.get("metrics_n") or {})
    if name in keys:
        return name
    matches = [k for k in keys if k.split(".", 1)[-1] == name]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise PowerError(f"--metric {name!r} is ambiguous: {', '.join(matches)}; give the tier too")
    shown = ", ".join(keys[:20]) + (" …" if len(keys) > 20 else "")
    raise PowerError(f"--metric {name!r} is not in this results file; its metrics are: {shown or 'none'}")


def power_answer(
    results: Mapping[str, Any], name: str, drop: float, alpha: float = 0.05, power: float = 0.8
) -> PowerAnswer:
    """Items needed for ``drop`` and the detectable drop at the run's n, from the run's spread."""
    if not 0 < drop < 1:
        raise PowerError(f"--drop {drop:g} must be a drop between 0 and 1, e.g. 0.03 for 3 points")
    metric = resolve_metric(results, name)
    values = np.array(list(per_case(results, metric).values()), dtype=float)
    if values.size < 2:
        raise PowerError(f"{metric}: {values.size} case(s) with a value; the spread needs at least 2")
    binary = bool(np.all((values == 0.0) | (values == 1.0)))
    sd = math.sqrt(values.mean() * (1 - values.mean())) if binary else float(values.std(ddof=1))
    if sd == 0:
        raise PowerError(
            f"{metric}: every one of the {values.size} values is {values[0]:g}: "
            "no spread seen, so no figure; run more varied items first"
        )
    try:
        needed = math.ceil(n_paired_continuous(drop, sd, alpha, power))
        seen = mde_no_baseline(int(values.size), sd=sd, alpha=alpha, power=power)
    except ValueError as exc:
        raise PowerError(str(exc)) from None
    basis = "√(p(1−p)) of a proportion" if binary else "standard deviation of the per-case values"
    return PowerAnswer(metric, int(values.size), sd, basis, needed, seen.drop, drop, alpha, power)
