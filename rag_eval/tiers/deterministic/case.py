"""The deterministic tier for one case: generate, then run every model-free check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rag_eval.citations import DEFAULT_FORMAT, CitationFormat
from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord
from rag_eval.core.stages import StageSpec, infer_stages
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ResolvedGold
from rag_eval.metrics.deterministic import AnswerView, run_all
from rag_eval.tiers.deterministic.details import ContextShown, DeterministicDetails
from rag_eval.tiers.retrieval.case import gold_ranks, loss_stage, scored_stages

CITATION_CHECKS = frozenset({"citations_resolve", "source_pages_within_context", "no_duplicate_sources"})
CONTEXT_TEXT_KEPT = 1200


@dataclass(frozen=True)
class DeterministicCaseConfig:
    skip_checks: tuple[str, ...] = ()


def evaluate_deterministic(
    item: GoldenItem,
    gold: ResolvedGold,
    chat: AnswerRecord,
    doc_of: Mapping[str, str],
    kind_of: Mapping[str, str],
    config: DeterministicCaseConfig,
    spec: StageSpec | None = None,
    citations: CitationFormat = DEFAULT_FORMAT,
    duration: float = 0.0,
) -> CaseResult:
    view = AnswerView.from_chat_result(
        chat,
        must_contain=item.must_contain,
        must_not_contain=item.must_not_contain,
        expected_action=item.expected_action,
        citations=citations,
    )
    checks = [c for c in run_all(view) if c.name not in config.skip_checks]
    failed = [c for c in checks if not c.passed]
    metrics = {f"check.{c.name}": 1.0 if c.passed else 0.0 for c in checks}
    spec = spec or infer_stages(
        (s.name for s in chat.trace.stages), chat.trace.stages[-1].name if chat.trace.stages else "final"
    )
    stages = scored_stages(chat, spec)
    failed_stage: str | None = None
    if failed:
        failed_stage = "citation" if all(c.name in CITATION_CHECKS for c in failed) else "generation"
        if not item.is_negative:
            # The earliest failing stage: an answer cannot use evidence that never reached it.
            failed_stage = loss_stage(gold_ranks(gold, stages, doc_of, kind_of), spec) or failed_stage
    details = DeterministicDetails(
        chat.answer,
        chat.refused,
        chat.generator,
        tuple(s.to_dict() for s in chat.sources),
        tuple(
            ContextShown(c.chunk_id, f"{c.book} - {c.section} {c.pages_label}".strip(), c.text[:CONTEXT_TEXT_KEPT])
            for c in chat.context_used
        ),
        tuple(checks),
        chat.degraded,
        chat.degradation_reason,
        {"prompt_tokens": chat.usage.prompt_tokens, "completion_tokens": chat.usage.completion_tokens},
    )
    return CaseResult(
        id=item.id,
        tier="deterministic",
        outcome="fail" if failed else "pass",
        failed_stage=failed_stage,
        message="; ".join(f"{c.name}: {c.message}" for c in failed),
        metrics=metrics,
        tags=dict(item.tags),
        split=item.split,
        negative=item.is_negative,
        duration=duration,
        details=details.to_dict(),
    )
