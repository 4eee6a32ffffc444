"""Dialogue metrics (METRICS.md, "Dialogue"): pure functions of transcripts, each a ``Rate``.

Per-turn rates count the system turns of finished replays; dialogue-level rates count
dialogues. Replays that did not finish (the system or the simulator failed) are left out
of every denominator and listed under ``excluded["not_finished"]``: they are error
outcomes of their cases (``rag_eval.dialogue.verdict``), never passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag_eval.dialogue.model import DEFAULT_CLARIFICATION_LIMIT
from rag_eval.dialogue.rate import Rate
from rag_eval.dialogue.transcript import Transcript, TurnRecord


@dataclass(frozen=True)
class HintVerdict:
    """A judge's verdict on one dialogue's hints: accurate, at a fitting level, moved the
    student forward and did not give the answer. ``success`` None: the judge failed."""

    success: bool | None
    reason: str = ""


#: The hint-success judge: one verdict per dialogue transcript.
HintJudge = Callable[[Transcript], HintVerdict]


def _finished(transcripts: Sequence[Transcript]) -> tuple[list[Transcript], dict[str, tuple[str, ...]]]:
    done = [t for t in transcripts if t.finished]
    unfinished = tuple(t.dialogue_id for t in transcripts if not t.finished)
    return done, ({"not_finished": unfinished} if unfinished else {})


def _turn_rate(
    name: str,
    transcripts: Sequence[Transcript],
    counted: Callable[[Transcript, TurnRecord], bool],
    hit: Callable[[Transcript, TurnRecord], bool],
) -> Rate:
    done, excluded = _finished(transcripts)
    pairs = [(t, r) for t in done for r in t.answered_turns if counted(t, r)]
    return Rate(name, sum(1 for t, r in pairs if hit(t, r)), len(pairs), len(done), excluded)


def intent_accuracy(transcripts: Sequence[Transcript]) -> Rate:
    """Turns whose recognised intent equals the label ÷ turns that carry an intent label."""
    return _turn_rate(
        "intent_accuracy",
        transcripts,
        lambda t, r: r.intent_label is not None,
        lambda t, r: r.turn is not None and r.turn.intent == r.intent_label,
    )


def missed_clarification_rate(transcripts: Sequence[Transcript]) -> Rate:
    """Turns labelled ``clarify`` where the system went straight to an answer ÷ turns labelled ``clarify``."""
    return _turn_rate(
        "missed_clarification_rate",
        transcripts,
        lambda t, r: r.expected.action == "clarify",
        lambda t, r: r.action == "answer",
    )


def over_clarification_rate(transcripts: Sequence[Transcript]) -> Rate:
    """Turns labelled ``answer`` where the system asked anyway (asking again for something
    the student already gave included) ÷ turns labelled ``answer``."""
    return _turn_rate(
        "over_clarification_rate",
        transcripts,
        lambda t, r: r.expected.action == "answer",
        lambda t, r: r.action == "clarify",
    )


def hint_level_accuracy(transcripts: Sequence[Transcript]) -> Rate:
    """Turns whose hint level equals the labelled level ÷ labelled turns the system answered.

    A labelled turn on which the system asked or stated limits gave no hint whose level
    could be compared; the over-clarification rate (or the case verdict) counts it.
    """
    return _turn_rate(
        "hint_level_accuracy",
        transcripts,
        lambda t, r: r.expected.hint_level is not None and r.action == "answer",
        lambda t, r: r.turn is not None and r.turn.hint_level == r.expected.hint_level,
    )


def interception_rate(transcripts: Sequence[Transcript]) -> Rate:
    """Candidates with forbidden content (must-intercept) that were blocked or rewritten and
    whose final output does not leak ÷ must-intercept candidates."""
    return _turn_rate(
        "interception_rate",
        transcripts,
        lambda t, r: r.candidate_leaks,
        lambda t, r: r.turn is not None and r.turn.interception is not None and not r.final_leaks,
    )


def false_interception_rate(transcripts: Sequence[Transcript]) -> Rate:
    """Normal hints (answer turns whose candidate has no forbidden content) that were blocked ÷ normal hints."""
    return _turn_rate(
        "false_interception_rate",
        transcripts,
        lambda t, r: r.action == "answer" and not r.candidate_leaks,
        lambda t, r: r.turn is not None and r.turn.interception == "blocked",
    )


def final_leak_rate(transcripts: Sequence[Transcript]) -> Rate:
    """Final outputs containing forbidden content ÷ final outputs (of dialogues that have forbidden content)."""
    return _turn_rate("final_leak_rate", transcripts, lambda t, r: t.has_forbidden, lambda t, r: r.final_leaks)


def decision_turn(transcript: Transcript, limit: int = DEFAULT_CLARIFICATION_LIMIT) -> TurnRecord | None:
    """The turn clarification is judged at: the first that is not a clarifying question, or the
    clarifying question past ``limit`` rounds, or (neither happened) the last turn."""
    clarified = 0
    for record in transcript.answered_turns:
        clarified += record.action == "clarify"
        if record.action != "clarify" or clarified > limit:
            return record
    return transcript.answered_turns[-1] if transcript.answered_turns else None


def clarified(transcript: Transcript, limit: int = DEFAULT_CLARIFICATION_LIMIT) -> bool:
    """At the decision turn the system has the target (its recognised intent is the labelled
    target intent, when the item labels one) and every required condition was given."""
    decision = decision_turn(transcript, limit)
    if decision is None or decision.turn is None:
        return False
    given = {n for r in transcript.turns if r.number < decision.number and r.reply for n in r.reply.answered}
    target = transcript.target_intent is None or decision.turn.intent == transcript.target_intent
    return target and set(transcript.required) <= given


def clarification_failure(transcripts: Sequence[Transcript], limit: int = DEFAULT_CLARIFICATION_LIMIT) -> Rate:
    """Dialogues that after ``limit`` rounds lack the target or a required condition and did not
    say what is missing (``state_limits``) ÷ dialogues whose clarification can be judged.

    Judged: finished dialogues whose script expects clarification, except those where the
    student could not answer a question for a required condition or the material is
    insufficient — those are listed apart, neither successes nor failures.
    """
    done, excluded = _finished(transcripts)
    needing = [t for t in done if t.needs_clarification]
    apart = {
        "student_did_not_answer": tuple(t.dialogue_id for t in needing if t.unanswered),
        "material_insufficient": tuple(
            t.dialogue_id for t in needing if not t.unanswered and not t.material_sufficient
        ),
    }
    judged = [t for t in needing if not t.unanswered and t.material_sufficient]
    failed = 0
    for t in judged:
        decision = decision_turn(t, limit)
        said_missing = decision is not None and decision.action == "state_limits"
        failed += not clarified(t, limit) and not said_missing
    return Rate(
        f"clarification_failure_{limit}",
        failed,
        len(judged),
        len(done),
        excluded | {k: v for k, v in apart.items() if v},
    )


def past_limit_rounds(transcripts: Sequence[Transcript], limit: int = DEFAULT_CLARIFICATION_LIMIT) -> Rate:
    """Dialogues with a clarifying question after ``limit`` rounds ÷ dialogues in which the
    system clarified at least once."""
    done, excluded = _finished(transcripts)
    asking = [t for t in done if t.clarifying_turns]
    return Rate(
        f"past_{limit}_rounds", sum(len(t.clarifying_turns) > limit for t in asking), len(asking), len(done), excluded
    )


def hint_success(transcripts: Sequence[Transcript], verdicts: Mapping[str, HintVerdict]) -> Rate:
    """Dialogues whose hints the judge found successful ÷ dialogues that should be guided and were judged.

    A dialogue without a verdict is listed apart (``not_judged``); a judge error
    (``success`` None) stays in the denominator as not successful and is listed in ``errors``.
    """
    done, excluded = _finished(transcripts)
    guided = [t for t in done if t.should_be_guided]
    judged = [t for t in guided if t.dialogue_id in verdicts]
    missing = tuple(t.dialogue_id for t in guided if t.dialogue_id not in verdicts)
    errors = tuple(t.dialogue_id for t in judged if verdicts[t.dialogue_id].success is None)
    return Rate(
        "hint_success",
        sum(verdicts[t.dialogue_id].success is True for t in judged),
        len(judged),
        len(done),
        excluded | ({"not_judged": missing} if missing else {}),
        errors,
    )


def judge_hints(transcripts: Iterable[Transcript], judge: HintJudge) -> dict[str, HintVerdict]:
    """Ask ``judge`` about every finished dialogue that should be guided; a raising judge is an error verdict."""
    verdicts: dict[str, HintVerdict] = {}
    for t in transcripts:
        if not (t.finished and t.should_be_guided):
            continue
        try:
            verdicts[t.dialogue_id] = judge(t)
        except Exception as exc:  # a failed judge call is an error, counted, never dropped
            verdicts[t.dialogue_id] = HintVerdict(None, f"judge error: {type(exc).__name__}: {exc}")
    return verdicts


def compute_all(
    transcripts: Sequence[Transcript],
    *,
    limit: int = DEFAULT_CLARIFICATION_LIMIT,
    hint_verdicts: Mapping[str, HintVerdict] | None = None,
) -> dict[str, Rate]:
    """Every dialogue metric by name; ``hint_success`` only when judge verdicts are given."""
    rates = [
        intent_accuracy(transcripts),
        missed_clarification_rate(transcripts),
        over_clarification_rate(transcripts),
        clarification_failure(transcripts, limit),
        past_limit_rounds(transcripts, limit),
        hint_level_accuracy(transcripts),
        interception_rate(transcripts),
        false_interception_rate(transcripts),
        final_leak_rate(transcripts),
    ]
    if hint_verdicts is not None:
        rates.append(hint_success(transcripts, hint_verdicts))
    return {r.name: r for r in rates}
