"""A scripted model for the dialogue tier: the LLM student and the hint judge on one server,
with a share of replies that need a second call (the concurrency tests and
bench/dialogue_concurrency.py).

Each request is placed by the dialogue it belongs to (its opening: the student's prompt
says "Your opening message was: ...", the hint judge's conversation starts with
"STUDENT: ..."), and the dialogue's position ``i`` in the set picks its bucket
(:func:`bucket`, the same buckets as the judge's repairs scenario):

* **valid**: the student words exactly the CONTENT line it was told to convey; the hint
  judge answers ``{"success": true, ...}`` at once;
* **repaired** (``i % 3 == 0``): the student's first reply of the dialogue is blank (a
  reply that is no chat completion with text: asked again, identically, by the client), the
  hint judge's first reply holds no verdict (prose: the judge sends its repair, a
  different request, which gets the verdict);
* **unrepairable** (``i % 10 == 0``): the hint judge never gives a verdict, its repair
  neither (the case fails at the hint step with a judge error; errors are never cached).

Calls per dialogue, exactly (:func:`expected_calls`), from the scripted replay's student
replies ``S`` (those with text: one LLM call each) and whether the dialogue is judged
(``G``: finished and should be guided): valid ``S + G``; repaired ``S + [S > 0] + 2G``;
unrepairable ``S + 2G``; an unchanged rerun on the warm cache: ``2G`` for unrepairable
dialogues, 0 for every other.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.dialogue.model import DialogueItem
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.simulator import ScriptedStudent
from tests.support.openai_server import Reply, reply

STUDENT_OPENING = re.compile(r"Your opening message was: (.*)\n")
JUDGE_OPENING = re.compile(r"<conversation>\nSTUDENT: (.*)\n")
CONTENT = re.compile(r"CONTENT to convey in your next message: (.*)\Z", re.S)
VERDICT = json.dumps({"success": True, "reason": "the hints move the student forward, layer by layer"})
NO_VERDICT = "The tutor guided the student well and never gave the answer away."


def bucket(index: int) -> str:
    """The bucket of the case at ``index`` (module doc): unrepairable, repaired or valid."""
    if index % 10 == 0:
        return "unrepairable"
    return "repaired" if index % 3 == 0 else "valid"


@dataclass(frozen=True)
class Expected:
    """One dialogue's scripted cost: LLM student replies (``student``) and whether it is judged."""

    student: int
    judged: bool

    def calls(self, kind: str) -> int:
        """Calls of a cold run on an empty cache (module doc)."""
        judged = int(self.judged)
        if kind == "repaired":  # the blank student reply asked again, the hint judge's repair
            return self.student + int(self.student > 0) + 2 * judged
        return self.student + (2 if kind == "unrepairable" else 1) * judged

    def rerun(self, kind: str) -> int:
        """Calls of an unchanged rerun on the warm cache: only an unrepairable judged dialogue asks again."""
        return 2 * int(self.judged) if kind == "unrepairable" else 0


def scripted_costs(items: Sequence[DialogueItem], system: Any) -> list[Expected]:
    """Each dialogue's student replies (those with text: one LLM call each) and whether it is
    judged (finished and should be guided), from a scripted replay against ``system``."""
    costs = []
    for item in items:
        t = replay(system, item, ScriptedStudent(), limit=item.clarification_limit)
        costs.append(Expected(sum(1 for r in t.turns if r.reply is not None and r.reply.text), t.should_be_guided))
    return costs


def expected_calls(costs: Sequence[Expected]) -> list[int]:
    """Cold-run calls of each dialogue, by position."""
    return [c.calls(bucket(i)) for i, c in enumerate(costs)]


def opening_of(request: Any) -> str:
    """The opening of the dialogue a student or hint-judge request belongs to."""
    text = "\n".join(str(m.get("content") or "") for m in request["messages"])
    found = STUDENT_OPENING.search(text) or JUDGE_OPENING.search(text)
    if found is None:
        raise ValueError(f"not a student or hint-judge request: {text[:200]!r}")
    return found.group(1)


def responder(openings: Sequence[str], holds: Mapping[str, Callable[[], None]] | None = None) -> Callable[[Any], Reply]:
    """The scripted model (module doc); ``holds["student"]`` / ``holds["judge"]`` run first
    for the student's / the hint judge's requests (e.g. ``InFlight.hold``: one per endpoint)."""
    position = {o: i for i, o in enumerate(openings)}
    lock, blanked = threading.Lock(), set()
    hold = dict(holds or {})

    def answer(request: Any) -> Reply:
        opening = opening_of(request)
        kind = bucket(position[opening])
        system = request["messages"][0]["content"]
        content = CONTENT.search(system)
        hold.get("student" if content is not None else "judge", lambda: None)()
        if content is not None:  # the student
            with lock:
                blank = kind == "repaired" and opening not in blanked
                blanked.add(opening)
            return reply("" if blank else content.group(1).strip(), prompt_tokens=300, completion_tokens=20)
        repairing = any(m["role"] == "assistant" for m in request["messages"])
        valid = kind == "valid" or (kind == "repaired" and repairing)
        return reply(VERDICT if valid else NO_VERDICT, prompt_tokens=600, completion_tokens=30)

    return answer


def calls_by_dialogue(requests: Sequence[Any], openings: Sequence[str]) -> list[int]:
    """How many of ``requests`` (recorded requests with ``.json``) each dialogue made, by position."""
    position = {o: i for i, o in enumerate(openings)}
    out = [0] * len(openings)
    for r in requests:
        out[position[opening_of(r.json)]] += 1
    return out
