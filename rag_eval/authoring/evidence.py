"""A run's non-gold evidence as candidates for a person's review.

From each results file: per item, the chunks its retrieval case ranked above the first
gold chunk of the final stage (at most ``ABOVE_GOLD_KEPT``), and the chunks its answer
cases put in the generator's context, that are not gold. One candidate per (item,
document, quoted text), whatever the number of cases and runs that showed it.

A candidate's text is the chunk's: its document's span when the chunks are known with
offsets (``gold = "corpus"``: the corpus chunked as the run chunked it), else the text the
run recorded in a context; its document is the one the run named (a source), else the
corpus document that holds the text. A candidate whose text no file holds (a chunk only
ranked, in a run without an answer tier and without corpus gold) is counted, not listed.
A candidate already decided -- its key in the item's ``review`` history -- is not listed
again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_eval import tiers
from rag_eval.core.records import Chunk
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup

ABOVE_GOLD_KEPT = 5
_WS = re.compile(r"\s+")


def candidate_key(case: str, doc_id: str, quote: str) -> str:
    """Stable across runs and re-chunking: the item, the document and the text (whitespace dropped)."""
    digest = hashlib.sha256(f"{case}\x00{doc_id}\x00{_WS.sub('', quote)}".encode()).hexdigest()
    return digest[:16]


@dataclass
class Candidate:
    key: str
    case: str
    doc_id: str
    quote: str
    chunk_id: str
    why: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)

    def to_dict(self, item: GoldenItem | None) -> dict[str, Any]:
        return {
            "kind": "evidence",
            "key": self.key,
            "case": self.case,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "quote": self.quote,
            "why": sorted(self.why),
            "runs": self.runs,
            "question": item.question if item else "",
            "gold": [[r.label for r in g.any_of] for g in item.evidence] if item else [],
            "gold_quotes": [[r.quote or "" for r in g.any_of] for g in item.evidence] if item else [],
        }


@dataclass
class Found:
    candidates: list[Candidate] = field(default_factory=list)
    decided: int = 0
    without_text: int = 0


class _Texts:
    """What is known of a chunk: its document and text (module doc)."""

    def __init__(self, results: Sequence[Mapping[str, Any]], lookup: ChunkLookup, chunks: Sequence[Chunk]) -> None:
        self.lookup = lookup
        self.spans = {c.chunk_id: c for c in chunks}
        self.texts: dict[str, str] = {}
        self.docs: dict[str, str] = {}
        for res in results:
            for case in res.get("cases", []):
                for chunk_id, text, doc_id in tiers.of(str(case.get("tier"))).chunk_texts(case):
                    if text is not None:
                        self.texts.setdefault(chunk_id, text)
                    if doc_id is not None:
                        self.docs.setdefault(chunk_id, doc_id)

    def of(self, chunk_id: str) -> tuple[str, str] | None:
        """(doc id, quote) of a chunk, or None when no file holds its text."""
        chunk = self.spans.get(chunk_id)
        if chunk is not None and chunk.doc_id in self.lookup.docs and chunk.char_end > chunk.char_start:
            return chunk.doc_id, self.lookup.docs[chunk.doc_id].text[chunk.char_start : chunk.char_end].strip()
        text = self.texts.get(chunk_id)
        if text is None:
            return None
        doc = self.docs.get(chunk_id) or next((d for d in self.lookup.docs if self.lookup.locate(d, text)), None)
        return (doc, text) if doc else None


def _shown(case: Mapping[str, Any], gold: set[str]) -> list[tuple[str, str]]:
    """(chunk id, why) of the non-gold chunks a case showed, as its tier says: ranked above
    gold (the retrieval tier), or in the generator's context (the deterministic tier)."""
    return tiers.of(str(case.get("tier"))).shown_chunks(case, gold, ABOVE_GOLD_KEPT)


def awaiting_review(cases: Sequence[Mapping[str, Any]], items: Mapping[str, GoldenItem], lookup: ChunkLookup) -> Found:
    """The candidates of one run's cases (results-file dicts) not yet decided, with the
    run's own chunks: what ``python -m rag_eval evidence`` would list for its results file."""
    return find_candidates([("this run", {"cases": list(cases)})], items, lookup, list(lookup.chunks.values()))


def find_candidates(
    results: Sequence[tuple[str, Mapping[str, Any]]],
    items: Mapping[str, GoldenItem],
    lookup: ChunkLookup,
    chunks: Sequence[Chunk] = (),
) -> Found:
    """Every candidate of ``results`` ((name, results dict) per run) not yet decided (module doc)."""
    texts = _Texts([r for _, r in results], lookup, chunks)
    decided = {
        str(h.get("key")) for item in items.values() for h in item.extra.get("review") or () if isinstance(h, dict)
    }
    found = Found()
    by_key: dict[str, Candidate] = {}
    skipped: set[tuple[str, str]] = set()
    for name, res in results:
        gold_of: dict[str, set[str]] = {}
        for case in res.get("cases", []):
            resolved = tiers.of(str(case.get("tier"))).gold_ids(case)  # the retrieval tier's, of an answerable item
            if resolved is not None:
                gold_of.setdefault(str(case["id"]), set()).update(resolved)
        for case in res.get("cases", []):
            item_id = str(case.get("id"))
            gold = gold_of.get(item_id)  # empty: the run retrieved no gold chunk of the item
            if gold is None or item_id not in items:
                continue
            for cid, why in _shown(case, gold):
                known = texts.of(cid)
                if known is None:
                    if (item_id, cid) not in skipped:
                        skipped.add((item_id, cid))
                        found.without_text += 1
                    continue
                key = candidate_key(item_id, *known)
                if key in decided:
                    if key not in by_key:
                        by_key[key] = Candidate(key, item_id, known[0], known[1], cid)  # counted once below
                    continue
                cand = by_key.setdefault(key, Candidate(key, item_id, known[0], known[1], cid))
                if why not in cand.why:
                    cand.why.append(why)
                if name not in cand.runs:
                    cand.runs.append(name)
    found.candidates = [c for k, c in by_key.items() if k not in decided]
    found.decided = sum(1 for k in by_key if k in decided)
    return found
