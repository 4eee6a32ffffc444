"""The per-item details the report's expanded view shows, as one compact JSON payload.

Why a separate payload and not HTML: a 5,000-item report must open fast, so the page
server-renders only the compact case-list rows and builds an item's details in the
browser when it is expanded, from this payload (embedded as JSON, parsed on the first
expansion).

Why interning: the same chunk ids, context texts, labels and answers recur across the
tiers of one item and across items (every case of a corpus draws from its chunks), so
they are stored once in ``strings`` and referenced by index. On the demo run this
takes the payload to about a third of the raw case details.

What a case's details add is its tier's (``Tier.report_payload``): this module builds the
golden item's part and what every case has (outcome, stage, metrics, usage, traceback).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.outputs.stages import lost_at, normalize_stage, stage_levels, stage_order, stage_rank, tier_rank
from rag_eval.outputs.view import ItemFields
from rag_eval.results.model import RunResults
from rag_eval.tiers import Tier
from rag_eval.tiers.report_payload import StringTable


def build_case_data(results: RunResults, ids: Sequence[str]) -> dict[str, Any]:
    """``{"strings": [...], "items": [one payload per id, in the order of ids]}``."""
    table = StringTable()
    by_id: defaultdict[str, list[CaseResult]] = defaultdict(list)
    for c in results.cases:
        by_id[c.id].append(c)
    levels = stage_levels(results.cases)
    order = stage_order(levels)
    prefixes = tuple(f"{n}." for level in levels for n in level)
    out = []
    for item_id in ids:
        cases = sorted(by_id[item_id], key=lambda c: tier_rank(c.tier))
        out.append(_item_payload(item_id, results.items.get(item_id), cases, table, levels, order, prefixes))
    return {"strings": table.strings, "stage_order": list(order), "items": out}


def _item_payload(
    item_id: str,
    item: Mapping[str, Any] | None,
    cases: Sequence[CaseResult],
    table: StringTable,
    levels: Sequence[Sequence[str]],
    order: Sequence[str],
    prefixes: tuple[str, ...],
) -> dict[str, Any]:
    known = [s for s in (c.failed_stage for c in cases if c.outcome in ("fail", "error")) if s and lost_at(s, levels)]
    earliest = min(known, key=lambda s: stage_rank(s, order)) if known else None
    fields = ItemFields.of(item, cases[0] if cases else None)
    return {
        "id": item_id,
        "tags": dict(fields.tags),
        "split": fields.split,
        "golden": {"known": False} if item is None else _golden(item, fields.question),
        "lost_at": lost_at(earliest, levels),
        "tiers": [_tier_payload(c, table, prefixes) for c in cases],
    }


# the golden item's keys the expanded view shows (rag_eval/results.schema.json: $defs/item)
_GOLDEN_KEYS: tuple[str, ...] = (
    "history",
    "evidence",
    "key_facts",
    "reference_answer",
    "answers",
    "must_contain",
    "must_not_contain",
    "forbidden",
    "expected_action",
)


def _golden(item: Mapping[str, Any], question: str) -> dict[str, Any]:
    """The golden item as the expanded view shows it (a results file's ``items`` entry)."""
    shown = {k: item.get(k) for k in _GOLDEN_KEYS}  # each optional: an item has the keys of its kind
    return {
        "known": True,
        "question": question,
        "history": [{"role": str(h["role"]), "content": str(h["content"])} for h in shown["history"] or ()],
        "evidence": [_requirement(g) for g in shown["evidence"] or ()],
        "key_facts": [_key_fact(f) for f in shown["key_facts"] or ()],
        "reference": str(shown["reference_answer"] or ""),
        "answers": [str(a) for a in shown["answers"] or ()],
        "must_contain": [str(a) for a in shown["must_contain"] or ()],
        "must_not_contain": [str(a) for a in shown["must_not_contain"] or shown["forbidden"] or ()],
        "expected_action": str(shown["expected_action"] or ""),
    }


def _requirement(group: Any) -> list[dict[str, str]]:
    """A requirement as its list of alternatives (any one suffices)."""
    if isinstance(group, Mapping) and isinstance(group.get("any_of"), list):
        return [_ref(r) for r in group["any_of"]]
    return [_ref(group)]


def _ref(ref: Any) -> dict[str, str]:
    if not isinstance(ref, Mapping):
        return {"chunk_id": str(ref)}
    return {k: str(ref[k]) for k in ("chunk_id", "doc_id", "quote") if ref.get(k)}


def _key_fact(fact: Any) -> dict[str, Any]:
    if not isinstance(fact, Mapping):
        return {"fact": str(fact)}
    out: dict[str, Any] = {"fact": str(fact.get("fact", ""))}
    if isinstance(fact.get("source"), Mapping):
        out["source"] = _ref(fact["source"])
    return out


_UNREGISTERED = Tier()  # a tier no longer registered (an old results file): its details shown raw
_COMMON_KEYS: tuple[str, ...] = ("system", "usage", "degraded", "degradation_reason", "traceback")  # every case's


def _tier_payload(case: CaseResult, table: StringTable, prefixes: tuple[str, ...]) -> dict[str, Any]:
    details = case.details
    common = {k: details.get(k) for k in _COMMON_KEYS}  # every case's details, each optional
    tier = tiers.get(case.tier) if case.tier in tiers.names() else _UNREGISTERED
    failing = case.outcome in ("fail", "error")
    out: dict[str, Any] = {
        "tier": case.tier,
        "outcome": case.outcome,
        "failed_stage": case.failed_stage,
        "stage": normalize_stage(case.failed_stage) if failing else None,
        "message": case.message,
        "duration": round(float(case.duration), 4),
        "negative": case.negative,
        "degraded": bool(common["degraded"]),
        "degradation_reason": str(common["degradation_reason"] or ""),
        "metrics": _shown_metrics(case.metrics, prefixes),
    }
    if common["traceback"]:
        out["traceback"] = str(common["traceback"])
    out.update(tier.report_payload(case, table))
    usage = common["usage"]
    if isinstance(usage, Mapping) and usage:
        out["usage"] = {str(k): v for k, v in usage.items() if isinstance(v, (int, float, str))}
    extra = {k: v for k, v in details.items() if k not in _COMMON_KEYS and k not in tier.report_keys}
    if extra:
        out["extra"] = extra
    return out


def _shown_metrics(metrics: Any, prefixes: tuple[str, ...]) -> dict[str, float]:
    """The final-stage metrics and every non-retrieval metric; per-stage copies are many
    (stages × 10 metrics × 2 levels) and shown as the ranked lists instead."""
    if not isinstance(metrics, Mapping):
        return {}
    return {
        str(k): round(float(v), 4)
        for k, v in metrics.items()
        if isinstance(v, (int, float))
        and not (prefixes and str(k).startswith(prefixes))
        and not str(k).startswith("check.")
    }
