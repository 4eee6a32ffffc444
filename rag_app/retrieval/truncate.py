"""Cut the ranked context to a character budget before it goes to the generator.

Characters, not tokens: the budget must mean the same thing for every generator
(the extractive baseline has no tokenizer) and for Chinese, where one character is
roughly one token for most LLM tokenizers anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_app.types import Chunk


def truncate_context(chunks: Sequence[Chunk], budget_chars: int) -> list[Chunk]:
    """Keep chunks in rank order while the total ``len(chunk.text)`` stays within budget.

    - Stops at the first chunk that does not fit instead of skipping ahead to a
      shorter, lower-ranked one: the context stays a prefix of the ranking, so "what
      the generator saw" is always "the top n".
    - The first chunk is always kept, whole, even if it alone exceeds the budget:
      an answer from one over-long chunk beats a refusal from an empty context, and
      cutting a chunk mid-text would break the citation's page range.
    - Repeated chunk ids (e.g. several children mapped to one parent) are kept once
      and cost nothing the second time.
    """
    kept: list[Chunk] = []
    seen: set[str] = set()
    used = 0
    for chunk in chunks:
        if chunk.chunk_id in seen:
            continue
        size = len(chunk.text)
        if kept and used + size > budget_chars:
            break
        seen.add(chunk.chunk_id)
        kept.append(chunk)
        used += size
    return kept
