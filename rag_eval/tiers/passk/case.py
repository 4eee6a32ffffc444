"""The passk tier for one case: n trial outcomes → c/n, pass@k, pass^k, Wilson, class.

A trial whose judge errored is an error: the case is an ``error`` (never a pass), and
its trials stay in the details so the report can show the trial matrix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.golden.model import GoldenItem
from rag_eval.metrics.passk import summarize
from rag_eval.tiers.passk.details import PasskDetails, TrialOutcome


def passk_case(
    item: GoldenItem,
    trials: Sequence[TrialOutcome],
    *,
    n: int,
    k: int,
    deterministic: bool,
    duration: float = 0.0,
    usage: Mapping[str, Any] | None = None,
) -> CaseResult:
    """``deterministic``: the generator repeats itself, so one trial stands for all n
    (said in the details and the message); pass@k and pass^k then equal that outcome."""
    common: dict[str, Any] = dict(
        id=item.id, tier="passk", tags=dict(item.tags), split=item.split, negative=item.is_negative, duration=duration
    )
    base = PasskDetails(tuple(trials), n, k, len(trials), deterministic, dict(usage) if usage else None)
    details = base.to_dict()
    errors = [t for t in trials if t.outcome in ("error", "skip")]
    if errors:
        return CaseResult(
            outcome="error",
            failed_stage="judge",
            message=f"{len(errors)} of {len(trials)} trials could not be judged: {errors[0].message}",
            details=details,
            **common,
        )
    outcomes = [t.outcome == "pass" for t in trials]
    if deterministic:
        outcomes = outcomes * n  # identical by construction: the same answer every time
    summary = summarize(outcomes, k)
    failing = Counter(t.failed_stage for t in trials if t.outcome != "pass" and t.failed_stage)
    message = ""
    if summary.c < summary.n:
        runs = f" (deterministic generator: 1 trial stands for {n})" if deterministic else ""
        cls = summary.cls.replace("_", " ")
        message = f"{summary.c}/{summary.n} trials passed{runs} ({cls}); pass^{k} = {summary.pass_hat_k:.3f}"
        if failing:
            message += f"; failing stage: {failing.most_common(1)[0][0]}"
    return CaseResult(
        outcome="pass" if summary.c == summary.n else "fail",
        failed_stage=failing.most_common(1)[0][0] if failing and summary.c < summary.n else None,
        message=message,
        metrics=summary.to_metrics(),
        details=replace(base, c=summary.c, cls=summary.cls).to_dict(),
        **common,
    )
