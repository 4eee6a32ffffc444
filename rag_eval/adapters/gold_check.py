"""Gold ids checked through the system: is every gold chunk id one the system holds?

A system that can look ids up (``lookup(ids)`` of the Python contract; the framework
adapters: Haystack's ``filter_documents``, LangChain's ``get_by_ids``, LlamaIndex's
docstore) is asked once, at start-up, for every gold chunk id of the golden set
(through the id map: the system's own ids). A requirement none of whose alternatives
the system holds can never be met: its case fails at ``not indexed``, distinct from a
ranking miss, and the ids are named in ``run.warnings``.

A system that cannot look ids up gets the weaker check: each case records which gold
ids of the whole golden set it returned (``gold_seen``), and the run lists the gold ids
that no stage of any case returned ("check for typos"). Corpus mode checks neither:
gold is resolved against the local corpus, and ``validate`` checks it there.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag_eval.adapters.gold import IdMapEntry
from rag_eval.golden.model import GoldenItem

NOT_INDEXED = "not indexed"  # the failed_stage of a case whose gold the system does not hold


@dataclass(frozen=True)
class GoldCheck:
    """What the run knows about gold ids before any case: ``unheld`` the gold chunk ids
    the system does not hold (None: the system cannot look ids up, or corpus mode);
    ``gold`` every gold chunk and document id of the golden set (for ``gold_seen``)."""

    unheld: frozenset[str] | None
    gold: frozenset[str]
    active: bool = True  # False in corpus mode: neither check applies

    def not_indexed(self, item: GoldenItem) -> list[tuple[int, tuple[str, ...]]]:
        """(requirement number, its ids) of each requirement whose every alternative is a
        chunk id the system does not hold."""
        if not self.unheld:
            return []
        out: list[tuple[int, tuple[str, ...]]] = []
        for n, group in enumerate(item.evidence, 1):
            ids = [r.chunk_id for r in group.any_of]
            if ids and all(i is not None and i in self.unheld for i in ids):
                out.append((n, tuple(str(i) for i in ids)))
        return out

    def seen(self, returned: Iterable[str]) -> list[str] | None:
        """The gold ids (of any item) among what a case returned; None when not recorded
        (the system can look ids up, or corpus mode)."""
        if not self.active or self.unheld is not None:
            return None
        return sorted(self.gold.intersection(returned))


def gold_ids(items: Iterable[GoldenItem]) -> tuple[frozenset[str], frozenset[str]]:
    """(gold chunk ids, gold document ids) of the items."""
    chunks: set[str] = set()
    docs: set[str] = set()
    for item in items:
        for group in item.evidence:
            for ref in group.any_of:
                if ref.chunk_id:
                    chunks.add(ref.chunk_id)
                if ref.doc_id:
                    docs.add(ref.doc_id)
    return frozenset(chunks), frozenset(docs)


def system_ids(chunk_ids: Collection[str], id_map: Mapping[str, IdMapEntry]) -> dict[str, list[str]]:
    """Each gold chunk id's ids in the system (through the id map; unmapped: itself)."""
    out: dict[str, list[str]] = {g: [] for g in chunk_ids}
    for service_id, entry in id_map.items():
        if entry.chunk_id in out:
            out[entry.chunk_id].append(service_id)
    return {g: ids or [g] for g, ids in out.items()}


def unheld(chunk_ids: Collection[str], id_map: Mapping[str, IdMapEntry], held: Collection[str]) -> frozenset[str]:
    """The gold chunk ids none of whose system ids the system holds."""
    found = set(held)
    return frozenset(g for g, ids in system_ids(chunk_ids, id_map).items() if not found.intersection(ids))


def not_indexed_message(missing: Sequence[tuple[int, tuple[str, ...]]]) -> str:
    parts = [f"requirement {n}: {', '.join(ids)}" for n, ids in missing]
    return (
        "gold not indexed: the system does not hold "
        + "; ".join(parts)
        + " (its lookup found no such id: fix the id in the golden set, or index that document)"
    )
