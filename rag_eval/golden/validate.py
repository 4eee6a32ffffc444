"""Golden set validation, the same checks as tests (marker ``golden``) and as a CLI.

Each check returns a list of problem messages (empty: fine), each naming the item
and its file:line, so a golden set is reviewed like code.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence

from rag_eval.golden.model import SCENARIOS, EvidenceRef, GoldenItem
from rag_eval.golden.resolve import ChunkLookup, SpanNotFound, resolve

Tokenize = Callable[[str], list[str]]
KEY_FACT_MIN_SHARED = 0.5


def _where(item: GoldenItem) -> str:
    return f"{item.source} (id {item.id!r})"


def check_unique_ids(items: Sequence[GoldenItem]) -> list[str]:
    counts = Counter(i.id for i in items)
    return [f"duplicate id {k!r} ({n} items); ids must be unique" for k, n in counts.items() if n > 1]


def check_gold_exists(items: Sequence[GoldenItem], lookup: ChunkLookup, mode: str = "corpus") -> list[str]:
    """Every gold chunk id, doc id and quoted span resolves in the index built for the corpus.

    ``mode`` ``"ids"`` or ``"text"`` (the pipeline configuration's ``gold``): chunk ids are
    the system's own, which no local index holds, so only doc ids and quoted spans are
    checked against the corpus documents."""
    if mode != "corpus":
        return _check_docs_and_quotes(items, lookup)
    problems: list[str] = []
    for item in items:
        try:
            gold = resolve(item, lookup)
        except SpanNotFound as exc:
            problems.append(str(exc))
            continue
        for groups in (gold.child_groups or ()), gold.doc_groups:
            if any(not g for g in groups):
                problems.append(f"{_where(item)}: a gold requirement resolved to no chunk")
                break
    return problems


def _check_docs_and_quotes(items: Sequence[GoldenItem], lookup: ChunkLookup) -> list[str]:
    problems: list[str] = []
    for item in items:
        for ref in (r for g in item.evidence for r in g.any_of if r.doc_id):
            doc = str(ref.doc_id)
            if doc not in lookup.docs:
                problems.append(f"{_where(item)}: gold doc id {doc!r} is not in the corpus")
            elif ref.quote and not lookup.locate(doc, ref.quote):
                problems.append(
                    f"{_where(item)}: quoted span {ref.quote[:60]!r} not found in document {doc!r}; "
                    "quote the document text exactly (whitespace may differ)"
                )
    return problems


def _source_text(ref: EvidenceRef, lookup: ChunkLookup) -> str | None:
    """The text a key fact points at; None when it is not in the corpus."""
    if ref.quote:
        # The quote must be in its document: otherwise a fact would be "traced" to text
        # the golden item made up (key fact sources are not part of the gold evidence,
        # so check_gold_exists never looks at them).
        return ref.quote if lookup.locate(ref.doc_id or "", ref.quote) else None
    if ref.chunk_id:
        chunk = lookup.chunks.get(ref.chunk_id)
        return chunk.text if chunk else None
    doc = lookup.docs.get(ref.doc_id or "")
    return doc.text if doc else None


def check_key_facts(
    items: Sequence[GoldenItem], lookup: ChunkLookup, tokenize: Tokenize, gold: str = "corpus"
) -> list[str]:
    """Each key fact shares at least half of its key terms with the source it points at
    (outside ``gold = "corpus"``, a source given as a chunk id alone is the system's id:
    not checked)."""
    problems: list[str] = []
    for item in items:
        for fact in item.key_facts:
            if fact.source is None:
                problems.append(
                    f"{_where(item)}: key fact {fact.fact!r} has no source (give doc_id + quote or chunk_id)"
                )
                continue
            if gold != "corpus" and fact.source.chunk_id and not fact.source.doc_id:
                continue
            text = _source_text(fact.source, lookup)
            if text is None:
                problems.append(
                    f"{_where(item)}: key fact {fact.fact!r} points at {fact.source.label}, which is not in the corpus "
                    "(check the id; quote the document text exactly, whitespace may differ)"
                )
                continue
            terms = {t for t in tokenize(fact.fact) if len(t) > 1 or t.isalnum()}
            if not terms:
                continue
            source_terms = set(tokenize(text))
            shared = terms & source_terms
            if len(shared) / len(terms) < KEY_FACT_MIN_SHARED:
                problems.append(
                    f"{_where(item)}: key fact {fact.fact!r} shares {len(shared)}/{len(terms)} key terms with its "
                    f"source {fact.source.label} (need {KEY_FACT_MIN_SHARED:.0%}); "
                    "point it at the passage that states it"
                )
    return problems


def check_negatives(items: Sequence[GoldenItem]) -> list[str]:
    problems: list[str] = []
    for item in items:
        if item.scenario == "negative" and item.evidence:
            problems.append(f"{_where(item)}: tagged scenario=negative but carries gold evidence; negatives have none")
        if not item.evidence and item.expected_action == "answer":
            problems.append(
                f"{_where(item)}: no gold evidence but expected_action is 'answer'; "
                "add evidence, or expect 'refuse' (no answer in the corpus) or 'clarify'"
            )
    return problems


def check_split_leak(items: Sequence[GoldenItem], lookup: ChunkLookup | None = None) -> list[str]:
    """No source document feeds both the tune and the holdout split."""
    docs_by_split: dict[str, dict[str, list[str]]] = {"tune": defaultdict(list), "holdout": defaultdict(list)}
    for item in items:
        docs = set(item.gold_doc_ids)
        if lookup is not None:
            docs |= {d for g in item.evidence for r in g.any_of if r.chunk_id for d in [lookup.doc_of(r.chunk_id)] if d}
        for d in docs:
            docs_by_split[item.split][d].append(item.id)
    shared = sorted(set(docs_by_split["tune"]) & set(docs_by_split["holdout"]))
    return [
        f"document {d!r} is gold in both splits: tune {docs_by_split['tune'][d][:3]} and holdout "
        f"{docs_by_split['holdout'][d][:3]}; move those items into one split"
        for d in shared
    ]


def coverage_table(items: Sequence[GoldenItem], tiers: Mapping[str, Callable[[GoldenItem], bool]]) -> str:
    """Cases per scenario × tier (and per split), as an aligned text table; ``tiers``: each
    tier's name and which items it takes (``rag_eval.tiers.golden_applies()``)."""
    scenarios = [s for s in SCENARIOS if any(i.scenario == s for i in items)]
    scenarios += sorted({i.scenario for i in items} - set(scenarios))
    header = ["scenario", *tiers, "tune", "holdout"]
    rows = [header]
    for s in scenarios + ["total"]:
        scoped = [i for i in items if s == "total" or i.scenario == s]
        row = [s] + [str(sum(1 for i in scoped if fn(i))) for fn in tiers.values()]
        row += [str(sum(1 for i in scoped if i.split == sp)) for sp in ("tune", "holdout")]
        rows.append(row)
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in rows)


def validate_all(
    items: Sequence[GoldenItem], lookup: ChunkLookup, tokenize: Tokenize, corpus: bool = True, gold: str = "corpus"
) -> dict[str, list[str]]:
    """Every check; without a corpus only those that need none (the caller says the rest
    were skipped). ``gold``: the gold mode, as in the pipeline configuration."""
    out = {"unique ids": check_unique_ids(items), "negatives carry no gold": check_negatives(items)}
    if corpus:
        out["gold exists"] = check_gold_exists(items, lookup, gold)
        out["key facts traceable"] = check_key_facts(items, lookup, tokenize, gold)
        out["no document in both splits"] = check_split_leak(items, lookup)
    return out
