"""The renderers take typed results: a test's results dict read back as a stored file is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval.gates.result import GateResult
from rag_eval.results.model import RunResults


def typed(results: Mapping[str, Any] | RunResults) -> RunResults:
    """``RunResults.from_dict`` of a results dict (a ``RunResults`` as it is)."""
    return results if isinstance(results, RunResults) else RunResults.from_dict(results)


# the run block's required keys (rag_eval/results.schema.json: $defs/run) with neutral values;
# build_results adds system, outcomes, usage and warnings
MIN_RUN: dict[str, Any] = {
    "time": "2026-01-02T03:04:05+00:00",
    "commit": None,
    "dirty": False,
    "dataset": "/data/test",
    "dataset_fingerprint": "fp-test",
    "split": "all",
    "tags": [],
    "shard": None,
    "overrides": {},
    "thresholds": None,
    "thresholds_sha256": None,
    "complete": True,
}


def gate_result(metric: str, value: float | None, threshold: float | None = None, **kw: Any) -> GateResult:
    """A gate result with the fields a chart or a reason reads; ``kind``, ``passed`` and
    ``reason`` as given, every other keyword (``ci``, ``ci_note``, ``diff``, ...) its evidence."""
    kind = kw.pop("kind", "tier")
    passed, reason = bool(kw.pop("passed", False)), str(kw.pop("reason", ""))
    tier = "regression" if kind == "regression" else metric.split(".", 1)[0]
    return GateResult(kind, metric, tier, metric, "min", threshold, value, 10, 0, passed, reason, (), evidence=kw)
