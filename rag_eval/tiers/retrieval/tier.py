"""The retrieval tier: per-stage hit/recall/precision/MRR/nDCG of each golden item
(the case itself: ``rag_eval.tiers.retrieval.case``)."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.core.case import CaseResult
from rag_eval.core.records import Trace
from rag_eval.metrics.grouped import parse_metric_name, valid_metric_names
from rag_eval.tiers.base import RATE_KEYS, CaseOption, Item, Tier, as_golden, case_options, floors, package_fragment
from rag_eval.tiers.retrieval.case import (
    NEGATIVE_KEYS,
    NEGATIVE_MODES,
    RetrievalCaseConfig,
    evaluate_retrieval,
    gold_checked,
    retrieval_lower_is_better,
)
from rag_eval.tiers.retrieval.details import RetrievalDetails
from rag_eval.tiers.retrieval.gold_warnings import gold_warnings

if TYPE_CHECKING:
    from rag_eval.session import EvalConfig, EvalSession

STAGE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def retrieval_stage_of(key: str) -> str | None:
    """The stage a retrieval metric key names (``dense.recall@10`` -> ``dense``), or None."""
    parts = key.split(".")
    if len(parts) > 1 and parts[0] not in ("doc", "negative") and STAGE_NAME.match(parts[0]):
        return parts[0]
    return None


def retrieval_metric_ok(key: str) -> bool:
    if key in RATE_KEYS or key in NEGATIVE_KEYS:
        return True
    parts = key.split(".")
    if len(parts) > 1 and parts[0] != "doc" and STAGE_NAME.match(parts[0]):
        parts = parts[1:]  # a stage of the system's own: checked against its stages at start-up
    if parts and parts[0] == "doc":
        parts = parts[1:]
    if len(parts) != 1:
        return False
    try:
        spec = parse_metric_name(parts[0])
    except ValueError:
        return False
    # Cases record metrics under the canonical spelling ('recall@5'); a gate on 'Recall@5'
    # would find no values and fail with "0 cases" instead of naming the typo.
    return spec.name == parts[0]


class RetrievalTier(Tier):
    name = "retrieval"
    details_type = RetrievalDetails
    marker = "retrieval tier: per-stage hit/recall/precision/MRR/nDCG of each golden item"
    case_options = (
        CaseOption("require", "stage", (), None),  # checked against the system's stages at start-up
        CaseOption("negative", "name", NEGATIVE_MODES, "measure"),
    )

    @property
    def valid_names(self) -> str:  # the registry's metrics now, with any registered after import
        return (
            f"[<stage>.][doc.]<metric> with stage one of the system's stages and metric in "
            f"{', '.join(valid_metric_names())} (e.g. 'recall@5', 'bm25.doc.mrr@10', 'dense.recall@10'); or "
            f"{', '.join(RATE_KEYS + NEGATIVE_KEYS)}"
        )

    def schema_fragment(self) -> Mapping[str, Any]:
        return package_fragment(str(Path(__file__).parent))

    def metric_ok(self, key: str) -> bool:
        return retrieval_metric_ok(key)

    def refuse_floor(self, key: str) -> str | None:
        if key in NEGATIVE_KEYS:  # only negatives have these metrics, and negatives carry no floors
            return (
                f"negatives are checked per case with negative = one of {', '.join(NEGATIVE_MODES)}, not with a floor"
            )
        return None

    def lower_is_better(self, key: str) -> bool:
        return retrieval_lower_is_better(key)

    def gold_ids(self, case: Mapping[str, Any]) -> set[str] | None:
        """The chunk and parent ids of an answerable item's resolved gold (``details.gold``)."""
        if case.get("negative"):
            return None
        gold = (case.get("details") or {}).get("gold") or {}
        return {str(c) for level in ("chunks", "parents") for group in gold.get(level) or [] for c in group}

    def shown_chunks(self, case: Mapping[str, Any], gold: set[str], kept: int) -> list[tuple[str, str]]:
        """The final stage's chunks ranked above the first gold one (at most ``kept``)."""
        details = case.get("details") or {}
        final = details.get("final_stage")
        hits = (details.get("stages") or {}).get(final) or [] if final else []
        ids = [str(h[0]) for h in hits]
        first = next((n for n, cid in enumerate(ids) if cid in gold), None)
        above = ids[: first if first is not None else kept][:kept]
        at = f"gold first at rank {first + 1}" if first is not None else f"no gold in the top {len(ids)}"
        return [(cid, f"rank {n} in {final} ({at})") for n, cid in enumerate(above, 1)]

    def stage_of(self, key: str) -> str | None:
        return retrieval_stage_of(key)

    def warnings(self, cases: Sequence[CaseResult]) -> list[str]:
        """Gold the run could not have found (not indexed, or returned by no case)."""
        return gold_warnings([c for c in cases if c.tier == self.name])

    def counts_error(self, case: CaseResult, key: str) -> bool:
        """A negative would have measured only negative.*, an answerable item everything else."""
        return case.negative == key.startswith("negative.")

    def unmeasured_reason(self, metric: str, scoped: Sequence[CaseResult]) -> str | None:
        stage = retrieval_stage_of(metric)
        if stage is None:
            return None
        returned = sorted({str(s) for c in scoped for s in (c.details.get("stages") or {})})
        if stage in returned:
            return None
        has = ", ".join(returned) if returned else "none"
        return (
            f"no case returned stage {stage!r}: the system's stages are {has} "
            f"(name one of them in the gate, or declare the system's stages)"
        )

    def options(self, config: EvalConfig) -> RetrievalCaseConfig:
        given = case_options(config, self.name)
        base = RetrievalCaseConfig()
        # a gate on e.g. recall@7 needs recall@7 computed
        extra = config.thresholds.metric_names(self.name) if config.thresholds is not None else set()
        return RetrievalCaseConfig(
            require=given.get("require", base.require),
            metrics=tuple(dict.fromkeys(base.metrics + tuple(sorted(extra)))),
            case_min=floors(config, self.name),
            negative=given.get("negative", base.negative),
        )

    def run(self, session: EvalSession, item: Item) -> CaseResult:
        t0 = time.perf_counter()
        golden = as_golden(item)
        result = session.retrieve(golden.question)
        returned = returned_ids(result.trace)
        gold = session.gold(golden, returned)
        case = evaluate_retrieval(
            golden,
            gold,
            result,
            doc_of=session.doc_of,
            kind_of=session.kind_of,
            config=session.tier_options(self),
            spec=session.stage_spec(result.trace),
            duration=time.perf_counter() - t0,
        )
        check = session.gold_check
        case = gold_checked(case, check.not_indexed(golden), check.seen(returned), set(returned))
        return session.with_system(case)


def returned_ids(trace: Trace) -> list[str]:
    """Every id the system gave for a case (the ids and text gold modes resolve against them)."""
    return [h.chunk_id for s in trace.stages for h in s.hits]


RETRIEVAL = RetrievalTier()
