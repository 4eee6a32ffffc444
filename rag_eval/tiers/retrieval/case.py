"""The retrieval tier for one case: metrics at every stage the system declared, and
where gold was lost, named by the system's own stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag_eval.adapters.gold_check import NOT_INDEXED, not_indexed_message
from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord, RetrievalRecord, StageResult
from rag_eval.core.stages import StageSpec
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ResolvedGold
from rag_eval.metrics import grouped as retrieval_metrics
from rag_eval.metrics.grouped import grouped_compute_all
from rag_eval.metrics.retrieval import to_doc_ranking
from rag_eval.tiers.base import LOWER_RATE_KEYS, limit_problem
from rag_eval.tiers.retrieval.details import GoldView, Hit, RetrievalDetails

NEGATIVE_KEYS: tuple[str, ...] = ("negative.any_above_threshold", "negative.empty_context")


def retrieval_lower_is_better(key: str) -> bool:
    """A negative's any_above_threshold (a hit it should not have), and a metric registered
    as lower-is-better (``[<stage>.][doc.]<metric>@k``, ``rag_eval.metrics.grouped``)."""
    return (
        key in LOWER_RATE_KEYS
        or key == "negative.any_above_threshold"
        or retrieval_metrics.lower_is_better(key.rpartition(".")[2])
    )


# "no_vector_hit" is the name this mode had when rag_app's vector stage was the only one.
NEGATIVE_MODES: tuple[str, ...] = ("measure", "no_threshold_hit", "no_vector_hit", "empty_context")
DEFAULT_METRICS: tuple[str, ...] = (
    "hit@1",
    "hit@5",
    "recall@1",
    "recall@5",
    "recall@10",
    "precision@5",
    "mrr",
    "mrr@10",
    "ndcg@5",
    "ndcg@10",
)
TOP_IDS_KEPT = 20
UNATTRIBUTED_LOSS = "retrieval"  # only the final list is known: the loss cannot be placed


@dataclass(frozen=True)
class RetrievalCaseConfig:
    """Per-case pass condition: the stage the gold must reach (None: the final list),
    plus optional metric floors."""

    require: str | None = None
    metrics: tuple[str, ...] = DEFAULT_METRICS
    case_min: Mapping[str, float] = field(default_factory=dict)
    negative: str = "measure"


def scored_stages(result: RetrievalRecord | AnswerRecord, spec: StageSpec) -> dict[str, StageResult]:
    """The declared stages this result has, in declared order."""
    by_name = {s.name: s for s in result.trace.stages}
    return {name: by_name[name] for name in spec.names if name in by_name}


def evaluate_retrieval(
    item: GoldenItem,
    gold: ResolvedGold,
    result: RetrievalRecord,
    doc_of: Mapping[str, str],
    kind_of: Mapping[str, str],
    config: RetrievalCaseConfig,
    spec: StageSpec,
    duration: float = 0.0,
) -> CaseResult:
    stages = scored_stages(result, spec)
    details = RetrievalDetails(
        {name: _top(s) for name, s in stages.items()},
        tuple(tuple(level) for level in spec.levels),
        spec.final,
        result.degraded,
        result.degradation_reason,
        _gold_view(gold),
        stage_ms=dict(result.stage_ms),
    )
    common: dict[str, Any] = dict(
        id=item.id, tier="retrieval", tags=dict(item.tags), split=item.split, duration=duration
    )
    if item.is_negative:
        return _negative(stages, config, spec, details, common)

    metrics: dict[str, float] = {}
    absent: list[str] = []
    for name, stage in stages.items():
        ids = stage.ids
        groups = _chunk_groups(gold, ids, kind_of)
        if groups is not None:
            for m, value in zip(config.metrics, grouped_compute_all(config.metrics, ids, groups)):
                metrics[f"{name}.{m}"] = value
        if gold.docs_known:
            doc_ids = to_doc_ranking(ids, doc_of)
            for m, value in zip(config.metrics, grouped_compute_all(config.metrics, doc_ids, gold.doc_groups)):
                metrics[f"{name}.doc.{m}"] = value
    if not gold.docs_known:
        absent.append("doc-level metrics: the document of gold " + ", ".join(gold.unknown_docs) + " is unknown")
    for key in [k for k in metrics if k.startswith(f"{spec.final}.")]:
        metrics[key[len(spec.final) + 1 :]] = metrics[key]
    require = config.require or spec.final
    ranks = gold_ranks(gold, stages, doc_of, kind_of)
    details = replace(details, absent=tuple(absent), gold_ranks=tuple(ranks))
    reached = _reached(ranks, require)
    failed_stage = None if reached else (loss_stage(ranks, spec, require) or UNATTRIBUTED_LOSS)
    problems: list[str] = []
    if not reached:
        problems.append(f"gold evidence did not reach {require}: " + narrate(ranks, stages, spec, require))
    for m, limit in config.case_min.items():
        problem = limit_problem(m, metrics.get(m), limit, retrieval_lower_is_better(m))
        if problem:
            problems.append(problem)
            failed_stage = failed_stage or loss_stage(ranks, spec) or UNATTRIBUTED_LOSS
    return CaseResult(
        outcome="fail" if problems else "pass",
        failed_stage=failed_stage,
        message="; ".join(problems),
        metrics=metrics,
        details=details.to_dict(),
        **common,
    )


def gold_checked(
    case: CaseResult, missing: Sequence[tuple[int, tuple[str, ...]]], seen: Sequence[str] | None, returned: set[str]
) -> CaseResult:
    """The case with the gold check's findings: requirements whose gold the system does
    not hold (and this case did not return) fail it at ``not indexed``, before any stage;
    ``seen``: the gold ids this case returned (recorded where the system cannot look ids up)."""
    missing = [(n, ids) for n, ids in missing if not returned.intersection(ids)]
    if not missing and seen is None:
        return case
    details = RetrievalDetails.from_dict(case.details)
    details = replace(
        details,
        not_indexed=tuple(sorted({i for _, ids in missing for i in ids})),
        gold_seen=tuple(seen) if seen is not None else None,
    )
    if not missing:
        return replace(case, details=details.to_dict())
    message = not_indexed_message(missing) + (f"; {case.message}" if case.message else "")
    return replace(case, outcome="fail", failed_stage=NOT_INDEXED, message=message, details=details.to_dict())


def _negative(
    stages: Mapping[str, StageResult],
    config: RetrievalCaseConfig,
    spec: StageSpec,
    details: RetrievalDetails,
    common: dict[str, Any],
) -> CaseResult:
    """Negatives have no gold: measured by what passed the threshold and what reached the final list."""
    metrics: dict[str, float] = {}
    thresholded = spec.thresholded
    above = len(stages[thresholded].hits) if thresholded and thresholded in stages else None
    if above is not None:
        metrics["negative.any_above_threshold"] = 1.0 if above else 0.0
    final = len(stages[spec.final].hits) if spec.final in stages else 0
    metrics["negative.empty_context"] = 0.0 if final else 1.0
    problem = ""
    failed_stage: str | None = None
    if config.negative == "measure":
        details = replace(details, measured_only=True)
    if config.negative in ("no_threshold_hit", "no_vector_hit"):
        if above is None:
            problem = (
                f"negative = {config.negative!r} needs a score-thresholded stage, and the system declares none "
                f"(its stages: {', '.join(spec.names)}); declare thresholded_stage or use negative = 'empty_context'"
            )
            failed_stage = UNATTRIBUTED_LOSS
        elif above:
            problem = f"negative item: {above} item(s) passed the similarity threshold of {thresholded} (expected none)"
            failed_stage = thresholded
    elif config.negative == "empty_context" and final:
        # A stage without a threshold (BM25) can bring items to the final list with no vector hit at all.
        problem = f"negative item: {final} item(s) reached {spec.final} (expected none)"
        failed_stage = spec.final
    return CaseResult(
        outcome="fail" if problem else "pass",
        failed_stage=failed_stage,
        message=problem,
        metrics=metrics,
        negative=True,
        details=details.to_dict(),
        **common,
    )


def _chunk_groups(
    gold: ResolvedGold, ids: Sequence[str], kind_of: Mapping[str, str]
) -> tuple[frozenset[str], ...] | None:
    kind = kind_of.get(ids[0], "child") if ids else "child"
    return gold.groups_for(kind)


def gold_ranks(
    gold: ResolvedGold, stages: Mapping[str, StageResult], doc_of: Mapping[str, str], kind_of: Mapping[str, str]
) -> list[dict[str, int | None]]:
    """For each requirement, its best rank in each stage (None: absent)."""
    out: list[dict[str, int | None]] = []
    for gi in range(len(gold.doc_groups)):
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


def _levels_upto(spec: StageSpec, r: Mapping[str, int | None], upto: str) -> list[tuple[str, ...]]:
    """The declared levels up to ``upto``'s, each reduced to the stages this case has."""
    last = spec.level_of(upto) if upto in spec.names else len(spec.levels) - 1
    levels = [tuple(n for n in level if n in r) for level in spec.levels[: last + 1]]
    return [level for level in levels if level]


def _requirement_loss(r: Mapping[str, int | None], spec: StageSpec, upto: str) -> int | None:
    """Index (into the case's levels) of the level where this requirement was lost for
    good: the level after the last one that held it, or the first when none did. None
    when it reached ``upto``; -1 when only the final list is known (nothing to place)."""
    if r.get(upto) is not None:
        return None
    levels = _levels_upto(spec, r, upto)
    if len(levels) <= 1:
        return -1
    held = [i for i, level in enumerate(levels) if any(r.get(n) is not None for n in level)]
    return min(held[-1] + 1, len(levels) - 1) if held else 0


def loss_stage(ranks: list[dict[str, int | None]], spec: StageSpec, upto: str | None = None) -> str | None:
    """The earliest stage at which some requirement was lost (None: none was).

    Earliest over *all* requirements, not the first requirement's loss: when one gold
    piece was never retrieved and another was cut at the final list, retrieval is what
    failed first. Stages after ``upto`` (the stage the case requires) are not blamed.
    Side-by-side stages are named together (``vector+bm25``): the loss is where *both*
    lost it. A system that exposes only its final list gets ``retrieval``.
    """
    target = upto or spec.final
    best: tuple[int, str] | None = None
    for r in ranks:
        index = _requirement_loss(r, spec, target)
        if index is None:
            continue
        if index == -1:
            candidate = (len(spec.levels), UNATTRIBUTED_LOSS)
        else:
            level = _levels_upto(spec, r, target)[index]
            candidate = (spec.level_of(level[0]), StageSpec.label(level))
        if best is None or candidate[0] < best[0]:
            best = candidate
    return best[1] if best else None


def narrate(
    ranks: list[dict[str, int | None]], stages: Mapping[str, StageResult], spec: StageSpec, require: str | None = None
) -> str:
    """'in dense rank 2, not in sparse (top 20), in hybrid rank 7, cut at final (3 kept)'
    for each requirement that did not reach ``require``."""
    target = require or spec.final

    def kept(name: str) -> int:
        return len(stages[name].hits) if name in stages else 0

    parts: list[str] = []
    for gi, r in enumerate(ranks, 1):
        if r.get(target) is not None:
            continue
        levels = _levels_upto(spec, r, target)
        if len(levels) <= 1:  # only the final list is known
            parts.append(f"requirement {gi}: not in the {kept(target)} items returned")
            continue
        steps: list[str] = []
        lost = False
        for i, level in enumerate(levels):
            present = [n for n in level if r.get(n) is not None]
            if not present:
                if i == 0:
                    steps.extend(f"not in {n} (top {kept(n)})" for n in level)
                    steps[-1] += " — never retrieved"
                else:
                    steps.append(f"cut at {StageSpec.label(level)} ({', '.join(str(kept(n)) for n in level)} kept)")
                lost = True
                if all(not any(r.get(n) is not None for n in later) for later in levels[i + 1 :]):
                    break
                continue
            for n in level:
                steps.append(f"in {n} rank {r[n]}" if r.get(n) is not None else f"not in {n} (top {kept(n)})")
        if not lost:
            steps.append(f"not in {target}")
        parts.append(f"requirement {gi}: " + ", ".join(steps))
    return "; ".join(parts)


def _top(stage: StageResult) -> tuple[Hit, ...]:
    return tuple((h.chunk_id, round(h.score, 6)) for h in stage.hits[:TOP_IDS_KEPT])


def _sorted(groups: Sequence[frozenset[str]] | None) -> tuple[tuple[str, ...], ...] | None:
    return tuple(tuple(sorted(g)) for g in groups) if groups is not None else None


def _gold_view(gold: ResolvedGold) -> GoldView:
    return GoldView(_sorted(gold.child_groups), _sorted(gold.parent_groups), _sorted(gold.doc_groups) or ())
