"""One calibration: the configured judge over a seeded sample of the meta-evaluation set.

:func:`calibrate` judges both responses of each sampled instance, computes Table 2's rule for
the judge's three scores, and puts beside them, *on the same instances*, RAGChecker's shipped
scores and people's own agreement, plus the full-set figures (reproduced and published) and
the run's cost. The result is the calibration record (a plain dict, :mod:`rag_eval.calibrate.record`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.calibrate import judging
from rag_eval.calibrate.meta_eval import (
    DATA,
    METRICS,
    SIDES,
    Instance,
    MetaEvalError,
    agreement,
    framework_units,
    human_units,
    load_meta_eval,
    point,
    ragchecker_scores,
    sample,
)
from rag_eval.calibrate.published import CITATION, NOT_RETRIEVED, NOT_RETRIEVED_NOTE, PUBLISHED
from rag_eval.judge.native import NativeJudge
from rag_eval.llm.cached import CachedChatClient
from rag_eval.llm.usage import summarize

if TYPE_CHECKING:
    from rag_eval.judge.config import JudgeConfig

FORMAT = "rag-eval-calibration"
VERSION = 1


def calibrate(
    cfg: JudgeConfig,
    *,
    n: int | None = None,
    seed: int = 0,
    concurrency: int = 4,
    data: Path = DATA,
    progress: judging.Progress | None = None,
) -> dict[str, Any]:
    """Run the judge of ``cfg`` over ``n`` seeded instances (all 280 when None); the record."""
    meta = load_meta_eval(data)
    chosen = sample(meta.instances, n, seed)
    with CachedChatClient.from_config(cfg) as client:
        judge = NativeJudge(client, cfg.model, max_tokens=cfg.max_tokens)
        judged = judging.judge_instances(judge, chosen, concurrency, progress)
        usage = summarize(client.records)
        mode = judge.mode
    ran = [i for i in chosen if not any(judged[(i.id, s)].not_run for s in SIDES)]
    return {
        "format": FORMAT,
        "version": VERSION,
        "set": {
            "name": "RAGChecker meta-evaluation",
            "source": meta.manifest.get("source"),
            "commit": meta.commit,
            "instances": len(meta.instances),
        },
        "sample": {
            "requested": n,
            "seed": seed,
            "chosen": len(chosen),
            "judged": len(ran),
            "not_run": len(chosen) - len(ran),
        },  # fmt: skip
        "judge": {
            "engine": "native",
            "model": cfg.model,
            "prompt_version": judging.prompt_version(),
            "max_tokens": cfg.max_tokens,
            "mode": mode,
            "scores": dict(judging.SCORE_NAMES),
        },
        "errors": sum(1 for i in ran for s in SIDES if judged[(i.id, s)].error is not None),
        "agreement": {m: _rows(ran, judged, m) for m in METRICS},
        "full_set": {m: _full_rows(meta.instances, m) for m in METRICS},
        "published": {
            "citation": CITATION,
            "rows": {k: dict(v) for k, v in PUBLISHED.items()},
            "not_given": list(NOT_RETRIEVED),
            "note": NOT_RETRIEVED_NOTE,
        },  # fmt: skip
        "cost": _cost(usage, len(ran)),
        "instances": [{"id": i.id, **{s: judged[(i.id, s)].to_dict() for s in SIDES}} for i in chosen],
    }


def _rows(ran: Sequence[Instance], judged: Mapping[tuple[str, str], judging.Judged], metric: str) -> dict[str, Any]:
    """The judge, RAGChecker and people on the instances this run judged."""
    rows: dict[str, Any] = {}
    if len(ran) < 2:
        reason = f"{len(ran)} instance(s) judged: a correlation needs at least 2"
        return {"judge": {"absent": reason}, "RAGChecker": {"absent": reason}, "people": {"absent": reason}}
    try:
        rows["judge"] = agreement(*framework_units(ran, judging.score_pairs(ran, judged, metric), metric)).to_dict()
    except MetaEvalError as exc:
        rows["judge"] = {"absent": str(exc)}
    rows["RAGChecker"] = agreement(*framework_units(ran, ragchecker_scores(ran, metric), metric)).to_dict()
    rows["people"] = agreement(human_units(ran, metric)).to_dict()
    return rows


def _full_rows(instances: Sequence[Instance], metric: str) -> dict[str, Any]:
    """RAGChecker and people over the whole set (Table 2's figures, reproduced), without intervals."""
    rows = {"RAGChecker": framework_units(instances, ragchecker_scores(instances, metric), metric)[0],
            "people": human_units(instances, metric)}  # fmt: skip
    return {name: dict(zip(("pearson", "spearman"), point(units)), n=len(units)) for name, units in rows.items()}


def _cost(usage: Mapping[str, Any], judged: int) -> dict[str, Any]:
    keys = ("calls", "cached_calls", "retries", "errors", "prompt_tokens", "completion_tokens", "cost_usd",
            "unpriced_calls", "calls_without_usage")  # fmt: skip
    out: dict[str, Any] = {k: usage.get(k, 0) for k in keys}
    sent = out["calls"] - out["cached_calls"]
    if judged:
        out["per_instance"] = {
            "calls": sent / judged,
            "prompt_tokens": out["prompt_tokens"] / judged,
            "completion_tokens": out["completion_tokens"] / judged,
        }
    return out
