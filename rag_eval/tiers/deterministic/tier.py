"""The deterministic tier: model-free checks of each generated answer (the case itself:
``rag_eval.tiers.deterministic.case``; the checks: ``rag_eval.metrics.deterministic``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord
from rag_eval.golden.model import GoldenItem
from rag_eval.metrics.deterministic import CHECK_NAMES
from rag_eval.tiers.base import RATE_KEYS, CaseOption, Item, Tier, as_golden, case_options, package_fragment, skipped
from rag_eval.tiers.deterministic.case import DeterministicCaseConfig, evaluate_deterministic
from rag_eval.tiers.deterministic.details import DeterministicDetails
from rag_eval.tiers.retrieval.tier import returned_ids

if TYPE_CHECKING:
    from rag_eval.session import EvalConfig, EvalSession


def check_answer(
    session: EvalSession, item: GoldenItem, chat: AnswerRecord, config: DeterministicCaseConfig, duration: float = 0.0
) -> CaseResult:
    """The deterministic checks of one answer (also one passk trial's condition)."""
    return evaluate_deterministic(
        item,
        session.gold(item, returned_ids(chat.trace)),
        chat,
        doc_of=session.doc_of,
        kind_of=session.kind_of,
        config=config,
        spec=session.stage_spec(chat.trace),
        citations=session.config.pipeline.citations,
        duration=duration,
    )


class DeterministicTier(Tier):
    name = "deterministic"
    details_type = DeterministicDetails
    marker = "deterministic tier: model-free checks of each generated answer"
    case_options = (CaseOption("skip_checks", "names", CHECK_NAMES, ()),)
    valid_names = f"{', '.join(RATE_KEYS)}, or check.<name> with name in {', '.join(CHECK_NAMES)}"
    # Every check already decides the case; a floor on a 0/1 check would gate nothing new.
    floor_refusal = (
        "a deterministic case fails whenever one of its checks fails; "
        "per-case floors do not apply here (use skip_checks to leave a check out)"
    )

    def schema_fragment(self) -> Mapping[str, Any]:
        return package_fragment(str(Path(__file__).parent))

    def metric_ok(self, key: str) -> bool:
        return key in RATE_KEYS or (key.startswith("check.") and key[6:] in CHECK_NAMES)

    def label_context(self, case: CaseResult) -> tuple[tuple[str, str], ...] | None:
        """The chunks the generator saw, as this tier recorded them (``ContextShown``)."""
        return tuple(
            (str(c.get("label") or c.get("chunk_id", "")), str(c.get("text", "")))
            for c in case.details.get("context") or ()
            if isinstance(c, Mapping)
        )

    def shown_chunks(self, case: Mapping[str, Any], gold: set[str], kept: int) -> list[tuple[str, str]]:
        """The non-gold chunks of the generator's context, as ``[n]`` of this tier's context."""
        ids = [str(c.get("chunk_id", "")) if isinstance(c, Mapping) else "" for c in _recorded(case, "context")]
        return [
            (cid, f"in the {self.name} context as [{n}]") for n, cid in enumerate(ids, 1) if cid and cid not in gold
        ]

    def chunk_texts(self, case: Mapping[str, Any]) -> list[tuple[str, str | None, str | None]]:
        """The context's texts and the sources' documents, as the case recorded them."""
        texts: list[tuple[str, str | None, str | None]] = [
            (str(c["chunk_id"]), str(c["text"]), None)
            for c in _recorded(case, "context")
            if isinstance(c, Mapping) and c.get("chunk_id") and c.get("text")
        ]
        docs: list[tuple[str, str | None, str | None]] = [
            (str(s["chunk_id"]), None, str(s["doc_id"]))
            for s in _recorded(case, "sources")
            if isinstance(s, Mapping) and s.get("chunk_id") and s.get("doc_id")
        ]
        return texts + docs

    def options(self, config: EvalConfig) -> DeterministicCaseConfig:
        return DeterministicCaseConfig(skip_checks=tuple(case_options(config, self.name).get("skip_checks", ())))

    def skip_reason(self, session: EvalSession, item: Item) -> str | None:
        # a retrieval-only system: the tier does not apply (no case, no gate), like an unset judge
        reason = session.answer_skip_reason()
        return None if reason is None else f"{item.id}: {reason}"

    def run(self, session: EvalSession, item: Item) -> CaseResult:
        t0 = time.perf_counter()
        golden = as_golden(item)
        reason = session.answer_skip_reason()
        if reason is not None:
            return skipped(golden, self.name, reason, t0)
        chat = session.chat(golden)
        case = check_answer(session, golden, chat, session.tier_options(self), duration=time.perf_counter() - t0)
        return session.with_system(case)


DETERMINISTIC = DeterministicTier()


def _recorded(case: Mapping[str, Any], key: str) -> list[Any]:
    """A list the case's details hold under ``key`` (a results-file case; [] when absent)."""
    value = (case.get("details") or {}).get(key)
    return value if isinstance(value, list) else []
