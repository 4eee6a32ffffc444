"""The per-item details the report's expanded view shows, as one compact JSON payload.

Why a separate payload and not HTML: a 5,000-item report must open fast, so the page
server-renders only the compact case-list rows and builds an item's details in the
browser when it is expanded, from this payload (embedded as JSON, parsed on the first
expansion).

Why interning: the same chunk ids, context texts, labels and answers recur across the
tiers of one item and across items (every case of a corpus draws from its chunks), so
they are stored once in ``strings`` and referenced by index. On the demo run this
takes the payload to about a third of the raw case details.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval import tiers
from rag_eval.outputs.fmt import as_mapping
from rag_eval.outputs.stages import lost_at, normalize_stage, stage_levels, stage_order, stage_rank, tier_rank
from rag_eval.tier_names import DIALOGUE, JUDGE, PASSK

# details keys rendered by a dedicated part of the expanded view; the rest is shown raw.
_KNOWN_DETAILS = frozenset(
    {
        "stages",
        "gold",
        "gold_ranks",
        "degraded",
        "degradation_reason",
        "system",
        "answer",
        "refused",
        "generator",
        "sources",
        "context",
        "checks",
        "usage",
        JUDGE,
        "judge_model",
        "engine",
        "judge_calls",
        "judge_mode",
        "blame",
        "blame_side",
        "trials",
        "n",
        "k",
        "c",
        "class",
        "trials_run",
        "deterministic_generator",
        "traceback",
        # the dialogue tier (rag_eval.tiers.dialogue_case): shown as the transcript view
        "transcript",
        "verdict",
        "evidence",
        "clarification_limit",
        "simulator",
        "calls",
        "dialogue_rates",
        "hint_verdict",
        DIALOGUE,
        "not_finished",
    }
)


class StringTable:
    """Each distinct string once; a reference is its index (insertion order)."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}

    def ref(self, value: Any) -> int | None:
        if value is None:
            return None
        index = self._index
        return index.setdefault(value if type(value) is str else str(value), len(index))

    @property
    def strings(self) -> list[str]:
        return list(self._index)


def build_case_data(results: Mapping[str, Any], ids: Sequence[str]) -> dict[str, Any]:
    """``{"strings": [...], "items": [one payload per id, in the order of ids]}``."""
    table = StringTable()
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    for c in results.get("cases") or ():
        if isinstance(c, Mapping) and {"id", "tier", "outcome"} <= c.keys():
            by_id.setdefault(str(c.get("id", "")), []).append(c)
    items = as_mapping(results.get("items"))
    levels = stage_levels(c for c in results.get("cases") or () if isinstance(c, Mapping))
    order = stage_order(levels)
    prefixes = tuple(f"{n}." for level in levels for n in level)
    out = []
    for item_id in ids:
        cases = sorted(by_id.get(item_id, []), key=lambda c: tier_rank(str(c.get("tier", ""))))
        raw_item = items.get(item_id)
        item = raw_item if isinstance(raw_item, Mapping) else None
        out.append(_item_payload(item_id, item, cases, table, levels, order, prefixes))
    return {"strings": table.strings, "stage_order": list(order), "items": out}


def _item_payload(
    item_id: str,
    item: Mapping[str, Any] | None,
    cases: Sequence[Mapping[str, Any]],
    table: StringTable,
    levels: Sequence[Sequence[str]],
    order: Sequence[str],
    prefixes: tuple[str, ...],
) -> dict[str, Any]:
    first = cases[0] if cases else {}
    golden: dict[str, Any] = {"known": item is not None}
    if item is not None:
        golden.update(
            question=str(item.get("question") or item.get("opening") or ""),  # a dialogue item opens instead
            history=[
                {"role": str(h.get("role", "")), "content": str(h.get("content", ""))}
                for h in item.get("history") or ()
                if isinstance(h, Mapping)
            ],
            evidence=[_requirement(g) for g in item.get("evidence") or ()],
            key_facts=[_key_fact(f) for f in item.get("key_facts") or ()],
            reference=str(item.get("reference_answer") or ""),
            answers=[str(a) for a in item.get("answers") or ()],
            must_contain=[str(s) for s in item.get("must_contain") or ()],
            must_not_contain=[str(s) for s in item.get("must_not_contain") or item.get("forbidden") or ()],
            expected_action=str(item.get("expected_action") or ""),
        )
    stages = [normalize_stage(c.get("failed_stage")) for c in cases if c.get("outcome") in ("fail", "error")]
    known = [s for s in stages if s and lost_at(s, levels)]
    earliest = min(known, key=lambda s: stage_rank(s, order)) if known else None
    return {
        "id": item_id,
        "tags": {str(k): str(v) for k, v in ((item or {}).get("tags") or first.get("tags") or {}).items()},
        "split": str((item or {}).get("split") or first.get("split") or ""),
        "golden": golden,
        "lost_at": lost_at(earliest, levels),
        "tiers": [_tier_payload(c, table, prefixes) for c in cases],
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


def _tier_payload(case: Mapping[str, Any], table: StringTable, prefixes: tuple[str, ...]) -> dict[str, Any]:
    details = as_mapping(case.get("details"))
    tier = str(case.get("tier", ""))
    out: dict[str, Any] = {
        "tier": tier,
        "outcome": str(case.get("outcome", "")),
        "failed_stage": case.get("failed_stage"),
        "stage": normalize_stage(case.get("failed_stage")) if case.get("outcome") in ("fail", "error") else None,
        "message": str(case.get("message") or ""),
        "duration": round(float(case.get("duration") or 0.0), 4),
        "negative": bool(case.get("negative")),
        "degraded": bool(details.get("degraded")),
        "degradation_reason": str(details.get("degradation_reason") or ""),
        "metrics": _shown_metrics(case.get("metrics"), prefixes),
    }
    if details.get("traceback"):
        out["traceback"] = str(details["traceback"])
    if isinstance(details.get("stages"), Mapping):
        out["ranked"] = _ranked(details, table)
    if "answer" in details:
        out["answer"] = table.ref(details.get("answer") or "")
        out["refused"] = bool(details.get("refused"))
        out["generator"] = str(details.get("generator") or "")
    if isinstance(details.get("sources"), list):
        out["sources"] = [_source(s, table) for s in details["sources"] if isinstance(s, Mapping)]
    if isinstance(details.get("context"), list):
        out["context"] = [
            {
                "chunk": table.ref(c.get("chunk_id")),
                "label": table.ref(c.get("label") or ""),
                "text": table.ref(c.get("text") or ""),
            }
            for c in details["context"]
            if isinstance(c, Mapping)
        ]
    if isinstance(details.get("checks"), list):
        out["checks"] = [
            {"name": str(c.get("name", "")), "passed": bool(c.get("passed")), "message": str(c.get("message") or "")}
            for c in details["checks"]
            if isinstance(c, Mapping)
        ]
    if tiers.judges_answers(tier) or JUDGE in details or "judge_model" in details:
        out[JUDGE] = _judge(details, failing=case.get("outcome") == "fail")
    if isinstance(details.get("trials"), list):
        out[PASSK] = _passk(case, details, table)
    if isinstance(details.get("transcript"), Mapping):
        out[DIALOGUE] = dialogue_payload(details, table)
    if isinstance(details.get("usage"), Mapping) and details["usage"]:
        out["usage"] = {str(k): v for k, v in details["usage"].items() if isinstance(v, (int, float, str))}
    extra = {k: v for k, v in details.items() if k not in _KNOWN_DETAILS}
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


def _ranked(details: Mapping[str, Any], table: StringTable) -> dict[str, Any]:
    stages = details["stages"]
    lists = {}
    ref = table.ref
    for name in stages:  # in the system's order, as the retrieval tier recorded them
        # [chunk id, score] pairs as the retrieval tier writes them (scores already rounded)
        lists[name] = [[ref(hit[0]), hit[1]] for hit in stages[name] or () if len(hit) >= 2]
    gold = as_mapping(details.get("gold"))
    # A ranked id is gold when it belongs to a requirement's chunk or parent group;
    # doc-level gold cannot be matched to chunk ids here (the results file holds no
    # chunk → doc map), so it shows in the gold ranks only.
    gold_of: dict[int | None, list[int]] = {}  # None: a null chunk id in the results file
    for key in ("chunks", "parents"):
        for gi, group in enumerate(gold.get(key) or ()):
            for cid in group or ():
                gold_of.setdefault(table.ref(cid), []).append(gi + 1)
    return {
        "lists": lists,
        "gold": {str(i): sorted(set(v)) for i, v in gold_of.items()},
        "gold_docs": [list(g) for g in gold.get("docs") or ()],
        "gold_ranks": [dict(r) for r in details.get("gold_ranks") or () if isinstance(r, Mapping)],
    }


def _source(s: Mapping[str, Any], table: StringTable) -> dict[str, Any]:
    start, end = s.get("page_start"), s.get("page_end")
    if s.get("pages"):
        pages = str(s["pages"])
    elif start is None:
        pages = ""
    elif end is None or end == start:
        pages = f"p. {start}"
    else:
        pages = f"p. {start}–{end}"
    return {
        "n": s.get("n"),
        "chunk": table.ref(s.get("chunk_id")),
        "doc": str(s.get("doc_id") or ""),
        "book": table.ref(s.get("book") or ""),
        "section": table.ref(s.get("section") or ""),
        "pages": pages,
    }


def _judge(details: Mapping[str, Any], failing: bool = False) -> dict[str, Any]:
    """The judge's verdict; for a failing case also its blame lines, in chain order
    (model text: the report sets them as text, never as markup)."""
    verdict = as_mapping(details.get(JUDGE))
    out: dict[str, Any] = {
        "model": str(details.get("judge_model") or ""),
        "engine": str(details.get("engine") or verdict.get("engine") or ""),
        "calls": details.get("judge_calls"),
        "mode": details.get("judge_mode") or verdict.get("mode"),
    }
    for key in ("claims", "key_facts", "citations"):
        if isinstance(verdict.get(key), list):
            out[key] = [dict(x) for x in verdict[key] if isinstance(x, Mapping)]
    if isinstance(verdict.get("relevance"), Mapping):
        out["relevance"] = dict(verdict["relevance"])
    if isinstance(verdict.get("correctness"), Mapping):
        out["correctness"] = {k: [str(x) for x in v] for k, v in verdict["correctness"].items() if isinstance(v, list)}
    if isinstance(verdict.get("metrics"), Mapping):  # the deepeval engine: score and reason per metric
        out["deepeval"] = {str(k): dict(v) for k, v in verdict["metrics"].items() if isinstance(v, Mapping)}
    if isinstance(verdict.get("skipped"), Mapping) and verdict["skipped"]:
        out["skipped"] = dict(verdict["skipped"])
    for key in ("repair_errors", "rejected_modes"):
        if verdict.get(key):
            out[key] = [str(x) for x in verdict[key]]
    if failing and isinstance(details.get("blame"), list):
        out["blame"] = [str(x) for x in details["blame"]]
        out["blame_side"] = details.get("blame_side")
    if isinstance(verdict.get("diagnosis"), Mapping):
        out["diagnosis"] = {str(k): v for k, v in verdict["diagnosis"].items()}
    if "claims_second_call" in verdict:
        out["claims_second_call"] = verdict["claims_second_call"]
    return out


def _passk(case: Mapping[str, Any], details: Mapping[str, Any], table: StringTable) -> dict[str, Any]:
    metrics = as_mapping(case.get("metrics"))
    k = details.get("k")
    return {
        "n": details.get("n"),
        "k": k,
        "c": details.get("c"),
        "class": details.get("class"),
        "trials_run": details.get("trials_run"),
        "deterministic_generator": bool(details.get("deterministic_generator")),
        "pass_at_k": metrics.get(f"pass@{k}"),
        "pass_hat_k": metrics.get(f"pass^{k}"),
        "wilson": [metrics.get("wilson_low"), metrics.get("wilson_high")],
        "trials": [
            {
                "trial": t.get("trial"),
                "outcome": str(t.get("outcome", "")),
                "stage": normalize_stage(t.get("failed_stage")),
                "message": str(t.get("message") or ""),
                "answer": table.ref(t.get("answer") or ""),
            }
            for t in details["trials"]
            if isinstance(t, Mapping)
        ],
    }


def dialogue_payload(details: Mapping[str, Any], table: StringTable) -> dict[str, Any]:
    """A dialogue case's transcript view: per turn the expected vs actual action, the student's
    message and the simulator's reply, the retrieved evidence with gold marked, the hint level,
    the candidate before interception beside the final reply, and the failing steps."""
    transcript = as_mapping(details.get("transcript"))
    verdict = as_mapping(details.get("verdict"))
    evidence = {
        int(e["turn"]): e
        for e in details.get("evidence") or ()
        if isinstance(e, Mapping) and isinstance(e.get("turn"), int)
    }
    failed: dict[int, list[str]] = {}
    for f in verdict.get("findings") or ():
        if isinstance(f, Mapping) and isinstance(f.get("turn"), int):
            failed.setdefault(int(f["turn"]), []).append(f"{f.get('step')}: {f.get('message')}")
    turns = [
        _dialogue_turn(as_mapping(t), evidence, failed, table)
        for t in transcript.get("turns") or ()
        if isinstance(t, Mapping)
    ]
    rates = as_mapping(details.get("dialogue_rates"))
    return {
        "limit": details.get("clarification_limit"),
        "simulator": str(details.get("simulator") or ""),
        "stop": str(transcript.get("stop") or ""),
        "error": str(transcript.get("error") or ""),
        "step": verdict.get("step"),
        "turn": verdict.get("turn"),
        "findings": [
            f"{f.get('step')}{' at turn ' + str(f['turn']) if f.get('turn') is not None else ''}: {f.get('message')}"
            for f in verdict.get("findings") or ()
            if isinstance(f, Mapping)
        ],
        "calls": {str(k): v for k, v in as_mapping(details.get("calls")).items() if isinstance(v, int)},
        "rates": {str(k): [as_mapping(v).get("numerator"), as_mapping(v).get("denominator")] for k, v in rates.items()},
        "hint_verdict": dict(details["hint_verdict"]) if isinstance(details.get("hint_verdict"), Mapping) else None,
        "turns": turns,
    }


def _dialogue_turn(
    t: Mapping[str, Any], evidence: Mapping[int, Mapping[str, Any]], failed: Mapping[int, list[str]], table: StringTable
) -> dict[str, Any]:
    number = int(t.get("number") or 0)
    expected = as_mapping(t.get("expected"))
    turn = as_mapping(t.get("turn"))
    reply = as_mapping(t.get("reply"))
    out: dict[str, Any] = {
        "n": number,
        "student": table.ref(str(t.get("student_message") or "")),
        "expected": {
            "action": str(expected.get("action") or ""),
            "asks": [str(a) for a in expected.get("asks") or ()],
            "hint_level": expected.get("hint_level"),
            "intent": t.get("intent_label"),
        },
        "error": str(t.get("error") or ""),
        "failed": list(failed.get(number, ())),
    }
    if turn:
        message, candidate = str(turn.get("message") or ""), turn.get("candidate")
        out["actual"] = {
            "action": str(turn.get("action") or ""),
            "intent": turn.get("intent"),
            "hint_level": turn.get("hint_level"),
            "asked": [str(a) for a in t.get("asked") or ()],
            "reasked": [str(a) for a in t.get("reasked") or ()],
            "interception": turn.get("interception"),
        }
        out["message"] = table.ref(message)
        out["final_leaks"] = bool(t.get("final_leaks"))
        if isinstance(candidate, str) and (candidate != message or turn.get("interception")):
            out["candidate"] = table.ref(candidate)
            out["candidate_leaks"] = bool(t.get("candidate_leaks"))
    if reply:
        out["reply"] = {
            "text": table.ref(reply["text"]) if isinstance(reply.get("text"), str) else None,
            "answered": [str(a) for a in reply.get("answered") or ()],
            "unanswerable": [str(a) for a in reply.get("unanswerable") or ()],
            "repeated": [str(a) for a in reply.get("repeated") or ()],
        }
    e = evidence.get(number)
    if e is not None:
        out["evidence"] = {
            "level": str(e.get("level") or ""),
            "judged": bool(e.get("judged")),
            "problem": str(e.get("problem") or ""),
            "note": str(e.get("note") or ""),
            "items": [
                {
                    "id": table.ref(i.get("id")),
                    "doc": str(i.get("doc_id") or ""),
                    "text": table.ref(str(i.get("text") or "")),
                    "gold": bool(i.get("gold")),
                }
                for i in e.get("items") or ()
                if isinstance(i, Mapping)
            ],
        }
    return out
