"""Replay one dialogue item against a system: the student simulator and the system take turns
until the script ends, the system asks past the clarification limit, or the student has nothing
more to say. Whatever the system raises or returns out of shape ends the replay as an error
outcome on the transcript; it is never raised and never a pass.

Alignment of system turns with the item's labels: turn by turn, except that a labelled
clarifying turn whose conditions the student has already given (the system asked for
several at once) is skipped, so asking everything in one round is not a missed clarification.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rag_eval.core.contract import ContractError
from rag_eval.core.dialogue import DIALOGUE_SIGNATURE, DialogueTurn, as_dialogue_turn
from rag_eval.dialogue.asking import asked_names
from rag_eval.dialogue.leak import leaks
from rag_eval.dialogue.model import DialogueItem
from rag_eval.dialogue.simulator import ScriptedStudent, Simulator, SimulatorError
from rag_eval.dialogue.transcript import StopReason, Transcript, TurnRecord


def replay(
    system: Any, item: DialogueItem, simulator: Simulator | None = None, *, limit: int | None = None
) -> Transcript:
    """Drive ``system.dialogue`` through ``item`` with a fresh simulator session.

    ``limit``: clarification rounds allowed (default: the item's ``clarification_limit``);
    the replay stops after the system's first clarifying question beyond it.
    Raises ContractError only when ``system`` has no dialogue call at all (a configuration error).
    """
    call = getattr(system, "dialogue", None)
    if not callable(call):
        raise ContractError(f"{type(system).__name__} has no dialogue call; implement `{DIALOGUE_SIGNATURE}`")
    limit = item.clarification_limit if limit is None else limit
    session = (simulator or ScriptedStudent()).start(item)
    known = {k.name for k in item.known}
    script = item.expected_turns
    messages: list[dict[str, str]] = [{"role": "user", "content": item.opening}]
    given: list[str] = []
    unanswered: list[str] = []
    records: list[TurnRecord] = []
    position = 0
    clarified = 0
    stop: StopReason = "script_end"
    error: str | None = None

    while True:
        while position < len(script) and _satisfied(script[position].asks, given):
            position += 1
        if position >= len(script):
            break
        expected = script[position]
        position += 1
        base = TurnRecord(len(records) + 1, expected, item.intent_label(expected), messages[-1]["content"])
        try:
            raw = call(tuple(dict(m) for m in messages), dict(item.context))
            turn = as_dialogue_turn(raw, f"dialogue() turn {base.number}")
        except Exception as exc:  # the system's failure is an outcome of the replay, not of the gate
            error = f"turn {base.number}: the system raised {type(exc).__name__}: {exc}"
            records.append(replace(base, error=error))
            stop = "system_error"
            break
        record = _record(base, turn, item, known, given)
        messages.append({"role": "assistant", "content": turn.message})
        clarified += turn.action == "clarify"
        if turn.action == "clarify" and clarified > limit:
            records.append(record)
            stop = "past_limit"
            break
        if position >= len(script):
            records.append(record)
            break
        try:
            reply = session.reply(turn)
        except SimulatorError as exc:
            error = f"turn {base.number}: {exc}"
            records.append(record)
            stop = "simulator_error"
            break
        records.append(replace(record, reply=reply))
        given.extend(n for n in reply.answered if n not in given)
        unanswered.extend(n for n in reply.unanswerable if n not in unanswered)
        if reply.text is None:
            stop = "student_done"
            break
        messages.append({"role": "user", "content": reply.text})

    return _transcript(item, records, stop, limit, given, unanswered, error)


def _record(base: TurnRecord, turn: DialogueTurn, item: DialogueItem, known: set[str], given: list[str]) -> TurnRecord:
    """The system's turn on its record: what it asked, what it asked again, what it leaked."""
    asked = asked_names(turn, item)
    return replace(
        base,
        turn=turn,
        asked=asked,
        reasked=tuple(n for n in asked if n in known or n in given),
        candidate_leaks=leaks(turn.candidate_text, item.forbidden),
        final_leaks=leaks(turn.message, item.forbidden),
    )


def _transcript(
    item: DialogueItem,
    records: list[TurnRecord],
    stop: StopReason,
    limit: int,
    given: list[str],
    unanswered: list[str],
    error: str | None,
) -> Transcript:
    return Transcript(
        dialogue_id=item.id,
        turns=tuple(records),
        stop=stop,
        limit=limit,
        required=tuple(c.name for c in item.conditions),
        obtained=tuple(given),
        unanswered=tuple(unanswered),
        target_intent=item.target_intent,
        material_sufficient=item.material_sufficient,
        has_forbidden=bool(item.forbidden),
        needs_clarification=item.needs_clarification,
        should_be_guided=item.should_be_guided,
        error=error,
    )


def _satisfied(asks: tuple[str, ...], given: list[str]) -> bool:
    return bool(asks) and all(a in given for a in asks)
