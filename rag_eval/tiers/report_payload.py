"""What a case's details add to the HTML report's expanded view: the tier's part of the
per-item payload (``Tier.report_payload``; ``rag_eval.outputs.case_data`` builds the rest).

Strings that recur (chunk ids, context texts, answers) go through a :class:`StringTable`
and are stored once in the payload, referenced by index. The default payload (every
built-in tier's, for now) renders each part of the details it knows by its key: the
ranked lists and gold of a retrieval case, the answer, sources, context and checks of a
generated one, the judge's verdict, the trials of passk, a dialogue's transcript.
Everything else in the details is shown raw (``extra``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rag_eval.core.case import CaseResult

# details keys rendered by a dedicated part of the expanded view (here or, for the ones every
# case has, by rag_eval.outputs.case_data); the rest is shown raw.
REPORT_KEYS = frozenset(
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
        "judge",
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
        # the dialogue tier (rag_eval.tiers.dialogue.case): shown as the transcript view
        "transcript",
        "verdict",
        "evidence",
        "clarification_limit",
        "simulator",
        "calls",
        "dialogue_rates",
        "hint_verdict",
        "dialogue",
        "not_finished",
    }
)


def stage_levels(cases: Iterable[CaseResult]) -> list[list[str]]:
    """The system's stage levels, as the first retrieval case that records them says."""
    for c in cases:
        levels = c.details.get("stage_levels")
        if isinstance(levels, list) and levels:
            return [[str(n) for n in level] for level in levels if isinstance(level, list)]
    return []


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


def details_payload(case: CaseResult, table: StringTable, judges_answers: bool) -> dict[str, Any]:
    """The parts of ``case.details`` the expanded view renders (``judges_answers``: the
    tier's cases carry a judge's verdict of one answer, shown even when it is missing)."""
    details = case.details
    out: dict[str, Any] = {}
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
    if judges_answers or "judge" in details or "judge_model" in details:
        out["judge"] = _judge(details, failing=case.outcome == "fail")
    if isinstance(details.get("trials"), list):
        out["passk"] = _passk(case, details, table)
    if isinstance(details.get("transcript"), Mapping):
        out["dialogue"] = dialogue_payload(details, table)
    return out


def _ranked(details: Mapping[str, Any], table: StringTable) -> dict[str, Any]:
    stages = details["stages"]
    lists = {}
    ref = table.ref
    for name in stages:  # in the system's order, as the retrieval tier recorded them
        # [chunk id, score] pairs as the retrieval tier writes them (scores already rounded)
        lists[name] = [[ref(hit[0]), hit[1]] for hit in stages[name] or () if len(hit) >= 2]
    gold = _mapping(details.get("gold"))
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
    verdict = _mapping(details.get("judge"))
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


def _passk(case: CaseResult, details: Mapping[str, Any], table: StringTable) -> dict[str, Any]:
    metrics = case.metrics
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
                "stage": t.get("failed_stage") or None,
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
    transcript = _mapping(details.get("transcript"))
    verdict = _mapping(details.get("verdict"))
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
        _dialogue_turn(_mapping(t), evidence, failed, table)
        for t in transcript.get("turns") or ()
        if isinstance(t, Mapping)
    ]
    rates = _mapping(details.get("dialogue_rates"))
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
        "calls": {str(k): v for k, v in _mapping(details.get("calls")).items() if isinstance(v, int)},
        "rates": {str(k): [_mapping(v).get("numerator"), _mapping(v).get("denominator")] for k, v in rates.items()},
        "hint_verdict": dict(details["hint_verdict"]) if isinstance(details.get("hint_verdict"), Mapping) else None,
        "turns": turns,
    }


def _dialogue_turn(
    t: Mapping[str, Any], evidence: Mapping[int, Mapping[str, Any]], failed: Mapping[int, list[str]], table: StringTable
) -> dict[str, Any]:
    number = int(t.get("number") or 0)
    expected = _mapping(t.get("expected"))
    turn = _mapping(t.get("turn"))
    reply = _mapping(t.get("reply"))
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


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (an optional part of the details)."""
    return value if isinstance(value, Mapping) else {}
