"""The retrieval tier for one case: metrics at every stage and where gold was lost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from rag_app.types import STAGES, RetrievalResult, StageResult
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ResolvedGold
from rag_eval.metrics.grouped import grouped_compute
from rag_eval.metrics.retrieval import to_doc_ranking
from rag_eval.results import CaseResult

RETRIEVAL_STAGES: tuple[str, ...] = STAGES  # the pipeline's ranked stages, in order
FINAL_STAGE = "context"
# The stage name a failure is attributed to, for the report's breakdown.
LOSS_STAGE = {"vector": "vector+bm25", "bm25": "vector+bm25", "fused": "fusion", "reranked": "rerank", "context": "truncation"}
NEGATIVE_MODES: tuple[str, ...] = ("measure", "no_vector_hit", "empty_context")
DEFAULT_METRICS: tuple[str, ...] = ("hit@1", "hit@5", "recall@1", "recall@5", "recall@10", "precision@5", "mrr", "mrr@10", "ndcg@5", "ndcg@10")
TOP_IDS_KEPT = 20


@dataclass(frozen=True)
class RetrievalCaseConfig:
    """Per-case pass condition: the stage the gold must reach, plus optional metric floors."""

    require: str = FINAL_STAGE
    metrics: tuple[str, ...] = DEFAULT_METRICS
    case_min: Mapping[str, float] = field(default_factory=dict)
    negative: str = "measure"


def evaluate_retrieval(
    item: GoldenItem,
    gold: ResolvedGold,
    result: RetrievalResult,
    doc_of: Mapping[str, str],
    kind_of: Mapping[str, str],
    config: RetrievalCaseConfig,
    duration: float = 0.0,
) -> CaseResult:
    stages = {s.name: s for s in result.trace.stages if s.name in RETRIEVAL_STAGES}
    details = {
        "stages": {name: _top(s) for name, s in stages.items()},
        "degraded": result.degraded,
        "degradation_reason": result.degradation_reason,
        "gold": _gold_view(gold),
    }
    common: dict[str, Any] = dict(id=item.id, tier="retrieval", tags=dict(item.tags), split=item.split, duration=duration)
    if item.is_negative:
        return _negative(item, stages, config, details, common)

    metrics: dict[str, float] = {}
    for name, stage in stages.items():
        ids = stage.ids
        doc_ids = to_doc_ranking(ids, doc_of)
        groups = _chunk_groups(gold, ids, kind_of)
        for m in config.metrics:
            if groups is not None:
                metrics[f"{name}.{m}"] = grouped_compute(m, ids, groups)
            metrics[f"{name}.doc.{m}"] = grouped_compute(m, doc_ids, gold.doc_groups)
    for key in [k for k in metrics if k.startswith(f"{FINAL_STAGE}.")]:
        metrics[key[len(FINAL_STAGE) + 1 :]] = metrics[key]

    ranks = gold_ranks(gold, stages, doc_of, kind_of)
    details["gold_ranks"] = ranks
    reached = _reached(ranks, config.require)
    failed_stage = None if reached else (loss_stage(ranks, config.require) or "retrieval")
    problems: list[str] = []
    if not reached:
        problems.append(f"gold evidence did not reach {config.require}: " + narrate(ranks, stages, config.require))
    for m, floor in config.case_min.items():
        value = metrics.get(m)
        if value is not None and value < floor:
            problems.append(f"{m} = {value:.3f} < {floor} (per-case threshold)")
            failed_stage = failed_stage or loss_stage(ranks) or "retrieval"
    return CaseResult(
        outcome="fail" if problems else "pass",
        failed_stage=failed_stage,
        message="; ".join(problems),
        metrics=metrics,
        details=details,
        **common,
    )


def _negative(item: GoldenItem, stages: Mapping[str, StageResult], config: RetrievalCaseConfig, details: dict[str, Any], common: dict[str, Any]) -> CaseResult:
    vector_hits = len(stages["vector"].hits) if "vector" in stages else 0
    context = len(stages[FINAL_STAGE].hits) if FINAL_STAGE in stages else 0
    metrics = {
        "negative.any_above_threshold": 1.0 if vector_hits else 0.0,
        "negative.empty_context": 0.0 if context else 1.0,
    }
    problem = ""
    failed_stage: str | None = None
    if config.negative == "no_vector_hit" and vector_hits:
        problem = f"negative item: {vector_hits} chunk(s) passed the similarity threshold (expected none)"
        failed_stage = "vector"
    elif config.negative == "empty_context" and context:
        # BM25 has no threshold, so chunks can reach the context with no vector hit at all.
        problem = f"negative item: {context} chunk(s) reached the context (expected none)"
        failed_stage = FINAL_STAGE
    return CaseResult(
        outcome="fail" if problem else "pass",
        failed_stage=failed_stage,
        message=problem,
        metrics=metrics,
        negative=True,
        details=details,
        **common,
    )


def _chunk_groups(gold: ResolvedGold, ids: Sequence[str], kind_of: Mapping[str, str]) -> tuple[frozenset[str], ...] | None:
    kind = kind_of.get(ids[0], "child") if ids else "child"
    return gold.groups_for(kind)


def gold_ranks(
    gold: ResolvedGold, stages: Mapping[str, StageResult], doc_of: Mapping[str, str], kind_of: Mapping[str, str]
) -> list[dict[str, int | None]]:
    """For each requirement, its best rank in each stage (None: absent)."""
    out: list[dict[str, int | None]] = []
    n = len(gold.doc_groups)
    for gi in range(n):
        row: dict[str, int | None] = {}
        for name, stage in stages.items():
            groups = _chunk_groups(gold, stage.ids, kind_of)
            if groups is not None:
                row[name] = next((h.rank for h in stage.hits if h.chunk_id in groups[gi]), None)
            else:
                row[name] = next((h.rank for h in stage.hits if doc_of.get(h.chunk_id) in gold.doc_groups[gi]), None)
        out.append(row)
    return out


def _reached(ranks: list[dict[str, int | None]], stage: str) -> bool:
    return all(r.get(stage) is not None for r in ranks)


def _requirement_loss(r: Mapping[str, int | None], upto: str) -> str | None:
    """The first stage (up to ``upto``) that lacks this requirement; stages absent from
    the trace (not keys of ``r``) are skipped: a system without a reranker lost nothing there."""
    if upto in ("vector", "bm25"):
        return LOSS_STAGE[upto] if r.get(upto) is None else None
    if not set(r) & {"vector", "bm25", "fused", "reranked"}:
        return None  # a system exposing only its final list: nothing to attribute ("retrieval")
    first = [name for name in ("vector", "bm25") if name in r]
    if first and all(r[name] is None for name in first):
        return LOSS_STAGE["vector"]
    for name in ("fused", "reranked", "context"):
        if name in r and r[name] is None:
            return LOSS_STAGE[name]
        if name == upto:
            break
    return None


def loss_stage(ranks: list[dict[str, int | None]], upto: str = FINAL_STAGE) -> str | None:
    """The earliest pipeline stage at which some requirement was lost (None: none was).

    Earliest over *all* requirements, not the first requirement's loss: when one gold
    piece was never retrieved and another was cut by truncation, retrieval is what
    failed first. Stages after ``upto`` (the stage the case requires) are not blamed.
    """
    order = [LOSS_STAGE["vector"], LOSS_STAGE["fused"], LOSS_STAGE["reranked"], LOSS_STAGE["context"]]
    losses = [loss for r in ranks if (loss := _requirement_loss(r, upto)) is not None]
    return min(losses, key=order.index) if losses else None


def narrate(
    ranks: list[dict[str, int | None]], stages: Mapping[str, StageResult], require: str = FINAL_STAGE
) -> str:
    """'in bm25 rank 2, in fused rank 4, dropped by the reranker (kept 8), ...' for each
    requirement that did not reach ``require``."""

    def kept(name: str) -> int:
        return len(stages[name].hits) if name in stages else 0

    parts: list[str] = []
    for gi, r in enumerate(ranks, 1):
        if r.get(require) is not None:
            continue
        steps: list[str] = []
        if not set(r) & {"vector", "bm25", "fused", "reranked"}:  # only the final list is known
            parts.append(f"requirement {gi}: not in the {kept(require)} items returned")
            continue
        for name in ("vector", "bm25"):
            steps.append(f"in {name} rank {r[name]}" if r.get(name) else f"not in {name} (top {kept(name)})")
        if r.get("vector") is None and r.get("bm25") is None:
            parts.append(f"requirement {gi}: " + ", ".join(steps) + " — never retrieved")
            continue
        if r.get("fused") is None:
            steps.append(f"cut by fusion top-k ({kept('fused')} kept)")
        else:
            steps.append(f"in fused rank {r['fused']}")
            if r.get("reranked") is None:
                steps.append(f"dropped by the reranker (kept {kept('reranked')})")
            else:
                steps.append(f"reranked to rank {r['reranked']}")
                steps.append(f"cut by truncation (context kept {kept(FINAL_STAGE)} chunks)")
        parts.append(f"requirement {gi}: " + ", ".join(steps))
    return "; ".join(parts)


def _top(stage: StageResult) -> list[list[object]]:
    return [[h.chunk_id, round(h.score, 6)] for h in stage.hits[:TOP_IDS_KEPT]]


def _gold_view(gold: ResolvedGold) -> dict[str, object]:
    return {
        "chunks": [sorted(g) for g in gold.child_groups] if gold.child_groups is not None else None,
        "parents": [sorted(g) for g in gold.parent_groups] if gold.parent_groups is not None else None,
        "docs": [sorted(g) for g in gold.doc_groups],
    }
