"""Which of the item's conditions (or known facts) a system turn asks for.

A turn that names conditions structurally (``asked_conditions``) is taken at its word;
otherwise its message is matched against each condition's and each known fact's
keywords, ignoring case, full/half width and whitespace (Chinese and English alike).
"""

from __future__ import annotations

from rag_eval.core.dialogue import DialogueTurn
from rag_eval.dialogue.model import DialogueItem
from rag_eval.metrics.deterministic import must_contain


def asked_names(turn: DialogueTurn, item: DialogueItem) -> tuple[str, ...]:
    """Names asked for by a clarifying turn, in the item's order (structural names the item
    does not know are kept, after the known ones); () for any other action."""
    if turn.action != "clarify":
        return ()
    order = [k.name for k in item.known] + [c.name for c in item.conditions]
    if turn.asked_conditions:
        named = set(turn.asked_conditions)
        return tuple(n for n in order if n in named) + tuple(sorted(named - set(order)))
    keywords = {k.name: k.keywords for k in item.known} | {c.name: c.keywords for c in item.conditions}
    return tuple(n for n in order if any(must_contain(turn.message, [kw]).passed for kw in keywords[n]))
