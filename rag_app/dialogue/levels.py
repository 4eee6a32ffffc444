"""Which hint layer a turn gives: knowledge reminder -> approach -> wrong direction.

* The first hint of a conversation starts where the student's words put it: a reported
  attempt or result ("我算出 A=60°，对吗？") -> ``wrong_direction``; a question about how to
  start or which way to go ("从哪下手", "思路", "能直接用…吗") -> ``approach``; anything
  else -> ``reminder``.
* Every later hint goes one layer deeper than the previous one (a demand for the full
  answer too: the student gets the next hint, not the answer), and straight to
  ``wrong_direction`` when the student reports an attempt; ``wrong_direction`` is the
  deepest layer and stays.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_app.dialogue.cues import ATTEMPT, METHOD, has_any
from rag_app.types import HINT_LEVELS


def next_level(previous: Sequence[str], request: Sequence[str]) -> str:
    """``previous``: levels of the earlier hints; ``request``: the student's messages since then."""
    text = "\n".join(request)
    latest = request[-1] if request else ""
    if previous:
        deeper = min(HINT_LEVELS.index(previous[-1]) + 1, len(HINT_LEVELS) - 1)
        return "wrong_direction" if has_any(latest, ATTEMPT) else HINT_LEVELS[deeper]
    if has_any(text, ATTEMPT):
        return "wrong_direction"
    if has_any(text, METHOD):
        return "approach"
    return "reminder"
