"""The dialogue tier for one case: a replay's transcript → verdict, rate contributions, details.

A dialogue case passes when the verdict (``rag_eval.dialogue.verdict``) finds no failing
step; a failure names the earliest failing step (clarification → retrieval → hint →
interception) as ``failed_stage`` and the turn in the message; a replay that did not
finish (the system or the simulator failed) is an ``error``. The case carries its
contribution to every dialogue rate as numerator/denominator (``details.dialogue_rates``)
so the controller sums them exactly (``rag_eval.dialogue.pooled``).

Retrieval per turn: an answer turn's retrieval is checked against the item's gold in the
run's gold space (``rag_eval.adapters.gold``): every evidence requirement must be met by
a retrieved item, at chunk level when the item's gold resolves to chunks (``retrieval =
"chunk"``, the default) or at document level (``"doc"``, or when the gold is only known
per document). A turn that reports no retrieval, or whose gold documents cannot be
placed, is not judged (shown as such), never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag_eval.adapters.gold import GoldSpace
from rag_eval.core.case import CaseResult
from rag_eval.dialogue.metrics import HintVerdict, compute_all
from rag_eval.dialogue.model import DialogueItem
from rag_eval.dialogue.pooled import contributions
from rag_eval.dialogue.transcript import Transcript, TurnRecord
from rag_eval.dialogue.trials import dialogue_pass_k
from rag_eval.dialogue.verdict import CaseVerdict, verdict
from rag_eval.golden.resolve import ResolvedGold
from rag_eval.tiers.dialogue.details import DialogueDetails, DialoguePasskDetails
from rag_eval.tiers.passk.details import TrialOutcome

TEXT_SHOWN = 400  # characters of a retrieved item's text kept in the results (the report shows them)


@dataclass(frozen=True)
class DialogueCaseConfig:
    """``[dialogue.case]``: the run's clarification limit (None: each item's own), how a
    turn's retrieval is checked, and which student plays."""

    clarification_limit: int | None = None
    retrieval: str = "chunk"
    simulator: str = "scripted"

    def limit_for(self, item: DialogueItem) -> int:
        return self.clarification_limit if self.clarification_limit is not None else item.clarification_limit


@dataclass
class GoldCheck:
    """The retrieval check of one replay (``RetrievalCheck``), keeping each turn's marked evidence."""

    space: GoldSpace
    item: DialogueItem
    level: str = "chunk"
    evidence: dict[int, dict[str, Any]] = field(default_factory=dict)

    def mark(self, transcript: Transcript) -> None:
        """Resolve and mark the retrieval of every turn that reported one (for the report)."""
        for record in transcript.answered_turns:
            if record.turn is not None and record.turn.retrieval is not None:
                self.evidence[record.number] = self._turn(record)

    def __call__(self, transcript: Transcript, record: TurnRecord) -> str | None:
        entry = self.evidence.get(record.number)
        return entry.get("problem") if entry is not None and entry.get("judged") else None

    def _turn(self, record: TurnRecord) -> dict[str, Any]:
        assert record.turn is not None and record.turn.retrieval is not None
        result = self.space.retrieval_result(record.student_message, record.turn.retrieval)
        final = [c.chunk_id for c in result.context]
        returned = [h.chunk_id for s in result.trace.stages for h in s.hits]
        gold = self.space.resolve(self.item.to_golden_item(), returned or final)
        level = "chunk" if self.level == "chunk" and gold.has_chunk_gold else "doc"
        items = [
            {
                "id": cid,
                "doc_id": self.space.doc_of.get(cid, ""),
                "score": raw.score,
                "text": raw.text[:TEXT_SHOWN],
                "gold": self._is_gold(cid, gold, level),
            }
            for cid, raw in zip(final, record.turn.retrieval.items)
        ]
        entry: dict[str, Any] = {
            "turn": record.number,
            "level": level,
            "items": items,
            "judged": False,
            "problem": None,
        }
        if self.level == "off" or not self.item.evidence:
            return entry
        if level == "doc" and not gold.docs_known:
            entry["note"] = f"the document of gold chunk(s) {', '.join(gold.unknown_docs)} is unknown: not judged"
            return entry
        missing = [
            i for i, group in enumerate(self._groups(gold, level)) if not self._met(final, group, gold, i, level)
        ]
        entry["judged"] = True
        if missing:
            shown = ", ".join(f"{i + 1} ({self._describe(i)})" for i in missing)
            entry["problem"] = (
                f"gold evidence not retrieved at {level} level: requirement{'s' if len(missing) > 1 else ''} {shown} "
                f"of {len(self.item.evidence)} in none of the {len(final)} "
                f"retrieved item{'s' if len(final) != 1 else ''}"
            )
        return entry

    def _groups(self, gold: ResolvedGold, level: str) -> Sequence[frozenset[str]]:
        return (gold.child_groups or ()) if level == "chunk" else gold.doc_groups

    def _met(self, final: Sequence[str], group: frozenset[str], gold: ResolvedGold, i: int, level: str) -> bool:
        if level == "doc":
            return any(self.space.doc_of.get(cid) in group for cid in final)
        parents = gold.parent_groups[i] if gold.parent_groups is not None else frozenset()
        return any(cid in group or cid in parents for cid in final)

    def _is_gold(self, cid: str, gold: ResolvedGold, level: str) -> bool:
        if level == "chunk":
            groups = [*(gold.child_groups or ()), *(gold.parent_groups or ())]
            return any(cid in g for g in groups)
        return any(self.space.doc_of.get(cid) in g for g in gold.doc_groups)

    def _describe(self, i: int) -> str:
        refs = self.item.evidence[i].any_of
        return " or ".join(r.chunk_id or f"{r.doc_id}" + (f": {r.quote[:30]}" if r.quote else "") for r in refs)


def rates_of(transcript: Transcript, limit: int, hint: HintVerdict | None, judged: bool) -> dict[str, dict[str, Any]]:
    """This dialogue's contribution to every rate; ``hint_success`` only when a judge is configured."""
    verdicts = ({transcript.dialogue_id: hint} if hint is not None else {}) if judged else None
    return contributions(compute_all([transcript], limit=limit, hint_verdicts=verdicts))


def transcript_details(transcript: Transcript) -> dict[str, Any]:
    """The transcript as JSON primitives, with retrieved texts shortened (the evidence view keeps a snippet)."""
    data = transcript.to_dict()
    for turn in data["turns"]:
        retrieval = (turn.get("turn") or {}).get("retrieval")
        if retrieval:
            for item in retrieval.get("items", ()):
                item["text"] = str(item.get("text") or "")[:TEXT_SHOWN]
            retrieval[
                "stages"
            ] = {}  # a turn's per-stage lists are the system's business here; the final list is judged
    return data


def dialogue_case(
    item: DialogueItem,
    transcript: Transcript,
    *,
    limit: int,
    check: GoldCheck | None,
    hint: HintVerdict | None = None,
    judged: bool = False,
    simulator: str = "scripted",
    duration: float = 0.0,
    usage: Mapping[str, Any] | None = None,
) -> CaseResult:
    """One dialogue case from its replay (``check`` already marked; ``hint``: the judge's
    verdict; ``usage``: the case's model calls, when it made any)."""
    if check is not None and transcript.finished:
        check.mark(transcript)
    v = verdict(transcript, retrieval_check=check, hint=hint if judged else None)
    details = DialogueDetails(
        transcript_details(transcript),
        v.to_dict(),
        tuple(check.evidence[n] for n in sorted(check.evidence)) if check is not None else (),
        limit,
        simulator,
        calls_of(transcript),
        rates_of(transcript, limit, hint, judged),
        usage,
        {"success": hint.success, "reason": hint.reason} if hint is not None else None,
        judged,
    )
    return CaseResult(
        id=item.id,
        tier="dialogue",
        outcome=v.outcome,
        failed_stage=v.step,
        message=v.message,
        tags=dict(item.tags),
        split=item.split,
        duration=duration,
        details=details.to_dict(),
    )


def calls_of(transcript: Transcript) -> dict[str, int]:
    """Turns, system calls and student replies of one replay (the bench's cost units)."""
    return {
        "turns": len(transcript.turns),
        "system_calls": len(transcript.turns),  # one dialogue() call per turn, the failing one included
        "student_replies": sum(1 for t in transcript.turns if t.reply is not None),
    }


def dialogue_passk_case(
    item: DialogueItem,
    transcripts: Sequence[Transcript],
    verdicts: Sequence[CaseVerdict],
    *,
    k: int,
    duration: float = 0.0,
    simulator: str | None = None,
    clarification_limit: int | None = None,
    usage: Mapping[str, Any] | None = None,
) -> CaseResult:
    """The passk tier for a dialogue: k independent replays → PASS@k / PASS^k (METRICS.md).

    A replay that did not finish makes the case an ``error`` (listed with its message), so
    the dialogue has fewer than k finished replays and no PASS@k of its own."""
    result = dialogue_pass_k({item.id: verdicts}, k)
    trials = tuple(
        TrialOutcome(i, v.outcome, v.step, v.message, " → ".join(str(r.action or "error") for r in t.turns))
        for i, (t, v) in enumerate(zip(transcripts, verdicts))
    )
    details = DialoguePasskDetails(
        trials,
        len(verdicts),
        k,
        len(verdicts),
        result.not_finished.get(item.id, 0),
        {key: sum(calls_of(t)[key] for t in transcripts) for key in ("turns", "system_calls", "student_replies")},
        simulator,
        clarification_limit,
        usage,
    )
    common: dict[str, Any] = dict(id=item.id, tier="passk", tags=dict(item.tags), split=item.split, duration=duration)
    summary = result.per_dialogue.get(item.id)
    if summary is None:
        first = next(v for v in verdicts if v.outcome == "error")
        return CaseResult(
            outcome="error",
            failed_stage=first.step,
            message=f"{details.not_finished} of {len(verdicts)} replays did not finish: {first.message}",
            details=details.to_dict(),
            **common,
        )
    failing = [v for v in verdicts if not v.passed]
    message = ""
    if failing:
        message = (
            f"{summary.c}/{summary.n} replays passed ({summary.cls.replace('_', ' ')}); "
            f"pass^{k} = {summary.pass_hat_k:.3f}; first failing replay: {failing[0].message}"
        )
    return CaseResult(
        outcome="pass" if not failing else "fail",
        failed_stage=failing[0].step if failing else None,
        message=message,
        metrics=summary.to_metrics(),
        details=replace(details, c=summary.c, cls=summary.cls).to_dict(),
        **common,
    )
