"""Forbidden content in a reply: the single-question ``must_not_contain`` check, applied per turn.

One matching rule for both tiers (case, width, whitespace, punctuation and ``$`` are
ignored, so a re-punctuated or re-typeset worked answer is still caught); see
``rag_eval.metrics.deterministic.must_not_contain``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_eval.metrics.deterministic import must_not_contain


def leaks(text: str, forbidden: Sequence[str]) -> bool:
    """True when ``text`` contains any forbidden phrase; False when there are none."""
    return bool(forbidden) and not must_not_contain(text, forbidden).passed


def check_forbidden_phrases(forbidden: Sequence[str]) -> None:
    """Raise ValueError for a phrase that is empty after normalisation (it would match anything)."""
    if forbidden:
        must_not_contain("", forbidden)
