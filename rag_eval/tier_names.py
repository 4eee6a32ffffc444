"""The built-in tiers' names, for code outside ``rag_eval.tiers`` that must name one (a
details key, a cache directory, a default argument). A leaf module: any layer imports it
without importing the tiers (``rag_eval.tiers`` imports most of rag_eval). The tiers
register under these names (``rag_eval/tiers/``); behaviour that differs by tier belongs
on the :class:`rag_eval.tiers.Tier` objects, not on a comparison with these names."""

from __future__ import annotations

from typing import Final

RETRIEVAL: Final = "retrieval"
DETERMINISTIC: Final = "deterministic"
JUDGE: Final = "judge"
PASSK: Final = "passk"
DIALOGUE: Final = "dialogue"
