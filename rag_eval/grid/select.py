"""Choose on ``tune``, confirm on ``holdout``.

The choice reads the ``tune`` runs only: the best configuration by one metric (its
direction from the gate's own registry of lower-is-better metrics), ties broken by the
grid's order. Only then are the chosen configuration and the reference run on
``holdout``, and both numbers reported, each with the cases it rests on and its interval
(the gate's own, else a bootstrap over the cases), with the warning that the best of N on
the data it was chosen on is optimistic. No other configuration is ever run on holdout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval.gates.aggregate import lower_is_better
from rag_eval.gates.paired_gates import per_case
from rag_eval.grid.comparison import Run, estimate
from rag_eval.grid.measures import stored
from rag_eval.grid.spec import GridError

OPTIMISM = (
    "the best of {n} configurations on the split it was chosen on is optimistic: read the holdout number, "
    "which played no part in the choice"
)


def value(results: Mapping[str, Any], metric: str) -> float | None:
    """The run-level value of ``metric`` (``retrieval.recall@5``): the gate's own where stored."""
    row = stored(results, metric)
    if row is not None:
        return float(row["value"])
    cases = per_case(results, metric)
    return sum(cases.values()) / len(cases) if cases else None


def estimate_of(results: Mapping[str, Any], metric: str) -> dict[str, Any]:
    """``metric``'s value, n and interval (or ``ci_note``) in one run."""
    return estimate(results, metric, per_case(results, metric))


def choose(tune_runs: Sequence[Run], metric: str) -> Run:
    """The best tune run by ``metric``; a run without the metric cannot be chosen."""
    if not metric.startswith("retrieval."):
        raise GridError(f"--select {metric}: the grid compares retrieval metrics, e.g. retrieval.recall@5")
    lower = lower_is_better(metric.split(".", 1)[1])
    scored = [(value(r.results, metric), i, r) for i, r in enumerate(tune_runs)]
    usable = [(v, i, r) for v, i, r in scored if v is not None]
    if not usable:
        raise GridError(f"--select {metric}: no configuration's tune run has this metric")
    best = min(usable, key=lambda t: (t[0] if lower else -t[0], t[1]))
    return best[2]


def report(metric: str, chosen_tune: Run, n: int, holdout: Mapping[str, Run], reference: str) -> dict[str, Any]:
    """The selection record: the chosen configuration's tune and holdout numbers, the reference's holdout."""
    chosen = chosen_tune.config.name
    return {
        "metric": metric,
        "chosen": chosen,
        "reference": reference,
        "tune": {**estimate_of(chosen_tune.results, metric), "configurations": n},
        "holdout": {name: estimate_of(run.results, metric) for name, run in holdout.items()},
        "warning": OPTIMISM.format(n=n),
    }
