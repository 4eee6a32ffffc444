"""Small results files built in-test, through the same code that writes real ones
(``run.build_results`` over ``CaseResult``s and gates from a thresholds dict)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.gates.gate import evaluate_gates, verdict
from rag_eval.gates.thresholds import parse_thresholds
from rag_eval.results.build import build_results

FINGERPRINT = "0c1cfd1a3552653f"
THRESHOLDS: dict[str, Any] = {"retrieval": {"recall@5": {"min": 0.5}, "pass_rate": {"min": 0.5}}}


def details(tier: str, outcome: str, negative: bool = False, **extra: Any) -> dict[str, Any]:
    """The smallest details a tier writes for ``outcome`` (rag_eval/results.schema.json), plus ``extra``."""
    if outcome == "error" and tier in ("retrieval", "deterministic"):
        base: dict[str, Any] = {"traceback": "Traceback (most recent call last):\n  ...\nRuntimeError: boom"}
    elif tier == "retrieval" and outcome in ("pass", "fail"):
        base = {
            "stages": {"final": []},
            "stage_levels": [["final"]],
            "final_stage": "final",
            "gold": {"chunks": None, "parents": None, "docs": [] if negative else [["d1"]]},
            "degraded": False,
        }
        if not negative:
            base["gold_ranks"] = [{"final": 1 if outcome == "pass" else None}]
    elif tier == "deterministic" and outcome in ("pass", "fail"):
        base = {
            "answer": "an answer [1]",
            "refused": False,
            "generator": "extractive-baseline",
            "sources": [],
            "context": [],
            "checks": [{"name": "sources_present", "passed": outcome == "pass", "message": ""}],
        }
    elif tier == "judge":
        base = {"judge_model": "judge-model", "engine": "native", "usage": {"calls": 1}}
        if outcome in ("pass", "fail"):
            base.update(
                judge={"claims": []}, judge_calls=1, judge_mode="json_schema", answer="an answer", generator="g"
            )
    elif tier == "passk":
        base = {"trials": [], "n": 5, "k": 3, "trials_run": 0, "deterministic_generator": False}
        if outcome in ("pass", "fail"):
            base.update(
                c=5 if outcome == "pass" else 0, **{"class": "stable_pass" if outcome == "pass" else "stable_fail"}
            )
    else:
        base = {}
    return {**base, **extra}


def case(cid: str, outcome: str = "pass", tier: str = "retrieval", **kw: Any) -> CaseResult:
    """A case; a retrieval pass measures recall@5 = 1, a fail 0, an error nothing."""
    if tier == "retrieval" and "metrics" not in kw and outcome in ("pass", "fail"):
        kw["metrics"] = {"recall@5": 1.0 if outcome == "pass" else 0.0}
    if outcome in ("fail", "error") and "failed_stage" not in kw:
        kw["failed_stage"] = "error" if outcome == "error" else "rerank"
    kw["details"] = details(tier, outcome, bool(kw.get("negative")), **kw.get("details", {}))
    return CaseResult(id=cid, tier=tier, outcome=outcome, **kw)  # type: ignore[arg-type]


def passk(cid: str, klass: str) -> CaseResult:
    """A passk case of a stability class: stable_pass passes, flaky and stable_fail fail."""
    outcome = "pass" if klass == "stable_pass" else "fail"
    return CaseResult(
        id=cid,
        tier="passk",
        outcome=outcome,  # type: ignore[arg-type]
        failed_stage=None if outcome == "pass" else "generation",
        metrics={"flaky": float(klass == "flaky"), "stable_pass": float(klass == "stable_pass")},
        details=details("passk", outcome, **{"class": klass, "c": {"stable_pass": 5, "flaky": 2}.get(klass, 0)}),
    )


def results(
    cases: Sequence[CaseResult],
    thresholds: Mapping[str, Any] | None = None,
    items: Mapping[str, Mapping[str, Any]] | None = None,
    **run: Any,
) -> dict[str, Any]:
    """A complete results dict as the plugin writes it; ``run`` overrides run fields."""
    t = parse_thresholds(dict(THRESHOLDS if thresholds is None else thresholds), "thresholds.toml")
    active = {c.tier for c in cases if c.outcome != "skip"}
    gates = evaluate_gates(t, cases, active)
    info = {
        "time": "2026-11-30T02:43:01+00:00",
        "commit": "dcb17b93b38147ec8659de9cd074be168eaaee77",
        "dirty": False,
        "dataset": "/work/golden_sets/demo_maths",
        "dataset_fingerprint": FINGERPRINT,
        "golden_sha256": "dd4ff7cc" * 8,
        "split": "all",
        "tags": [],
        "shard": None,
        "overrides": {},
        "thresholds": "thresholds.toml",
        "thresholds_sha256": "5e" * 32,
        "workers": 0,
        "complete": True,
        **run,
    }
    default_items = {c.id: {"id": c.id, "question": f"question of {c.id}?"} for c in cases}
    return build_results(info, cases, gates, verdict(gates), items=default_items if items is None else items)
