"""Reviewed decisions merged into a golden file, never replacing what a person wrote.

The golden file's existing lines stay byte for byte, except an item an evidence decision
is about: it gains the alternative (when ``equivalent``) and the decision in its
``review`` history, nothing else changes. Accepted drafts are appended with new ids
(``PREFIX-SCENARIO-NNN``), their reviewer and time in ``review``, their split that of the
items from the same document (else derived from the document, as the loader does), and
only when no near-duplicate from the same source is in the set (``rag_eval.authoring.quote``).
A draft already merged (its id in an item's ``provenance.draft``) is skipped, so accepting
the same export twice adds nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.authoring.decisions import Decision
from rag_eval.authoring.quote import Sourced, find_quote, near_duplicate, sources_of
from rag_eval.golden.load import GoldenSetError, derived_split, parse_evidence, parse_item
from rag_eval.golden.resolve import ChunkLookup

_WS = re.compile(r"\s+")


@dataclass
class Merge:
    lines: list[str]  # the golden file's lines (each a JSON object, no newline)
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    rejected: int = 0

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def read_golden_lines(path: Path) -> list[str]:
    """The non-blank lines of an existing golden file (checked by the loader first), or none."""
    if not path.exists():
        return []
    from rag_eval.golden.load import load_golden_set

    load_golden_set(path)  # every problem of the file, with file:line, before anything is merged
    return [ln for ln in path.read_text(encoding="utf-8-sig").splitlines() if ln.strip()]


class Merger:
    def __init__(self, lines: list[str], path: Path, lookup: ChunkLookup | None, threshold: float, prefix: str) -> None:
        self.merge = Merge(list(lines))
        self.path, self.lookup, self.threshold, self.prefix = path, lookup, threshold, prefix
        self.raws: list[dict[str, Any]] = [json.loads(ln) for ln in lines]
        self.index = {str(r["id"]): n for n, r in enumerate(self.raws)}
        self._guard_lookup = lookup or ChunkLookup([], [])

    def _sourced(self, raw: dict[str, Any]) -> Sourced:
        refs = [(r.doc_id, r.quote) for g in parse_evidence(raw, str(self.path)) for r in g.any_of]
        return Sourced(str(raw["id"]), str(raw["question"]), sources_of(refs, self._guard_lookup))

    def apply(self, decisions: Sequence[Decision]) -> Merge:
        for d in decisions:
            if d.kind == "evidence":
                self._evidence(d)
            elif d.decision == "reject":
                self.merge.rejected += 1
            else:
                self._draft(d)
        return self.merge

    # --- drafts -------------------------------------------------------------------------
    def _merged_drafts(self) -> set[str]:
        return {str((r.get("provenance") or {}).get("draft", "")) for r in self.raws}

    def _new_id(self, scenario: str) -> str:
        n = 1
        while f"{self.prefix}-{scenario}-{n:03d}" in self.index:
            n += 1
        return f"{self.prefix}-{scenario}-{n:03d}"

    def _quote_problem(self, d: Decision, evidence: list[dict[str, str]]) -> str | None:
        passages = " ".join(str(p.get("text", "")) for p in d.raw.get("passages") or [] if isinstance(p, dict))
        for e in evidence:
            if self.lookup is not None:
                if find_quote(self.lookup, e["doc_id"], e["quote"]) is None:
                    return f"quote {e['quote'][:60]!r} is not in document {e['doc_id']!r}"
            elif _WS.sub("", e["quote"]) not in _WS.sub("", passages):
                return f"quote {e['quote'][:60]!r} is not in the draft's passage"
        return None

    def _split(self, evidence: list[dict[str, str]], raw: dict[str, Any]) -> str:
        docs = {e["doc_id"] for e in evidence}
        for other in self.raws:
            other_docs = {r.doc_id for g in parse_evidence(other, str(self.path)) for r in g.any_of if r.doc_id}
            if docs & other_docs and other.get("split"):
                return str(other["split"])
        return derived_split(raw, parse_evidence(raw, str(self.path)))

    def _draft(self, d: Decision) -> None:
        if d.subject in self._merged_drafts():
            self.merge.skipped.append(f"{d.subject}: already merged")
            return
        item = d.raw["item"]
        evidence = [{"doc_id": str(e["doc_id"]), "quote": str(e["quote"])} for e in item.get("evidence") or []]
        problem = self._quote_problem(d, evidence)
        if problem:
            self.merge.refused.append(f"{d.where}: draft {d.subject}: {problem}; re-select the span on the review page")
            return
        tags = {str(k): str(v) for k, v in (item.get("tags") or {}).items()}
        scenario = tags.setdefault("scenario", "negative" if not evidence else "standard")
        points = [str(p) for p in item.get("answer_points") or [] if str(p).strip()]
        raw: dict[str, Any] = {
            "id": self._new_id(re.sub(r"[^\w-]+", "-", scenario)),
            "question": str(item.get("question", "")),
            "history": list(item.get("history") or []),
            "tags": tags,
            "evidence": evidence,
            "reference_answer": "\n".join(points),
            "expected_action": item.get("expected_action") or ("answer" if evidence else "refuse"),
        }
        raw["split"] = self._split(evidence, raw)
        raw["provenance"] = {**dict(d.raw.get("provenance") or {}), "draft": d.subject}
        raw["review"] = [d.history_entry()]
        try:
            parse_item(raw, f"{d.where} (draft {d.subject})")
        except GoldenSetError as exc:
            self.merge.refused.append(str(exc))
            return
        me = self._sourced(raw)
        dup = near_duplicate(me, [self._sourced(r) for r in self.raws], self.threshold)
        if dup is not None:
            other, score = dup
            self.merge.refused.append(
                f"{d.where}: draft {d.subject} {me.question!r} is a near-duplicate of {other.id} {other.question!r} "
                f"from the same source (similarity {score:.2f} >= {self.threshold:g}); edit it, or reject it"
            )
            return
        self._append(raw)
        self.merge.added.append(f"{raw['id']} (draft {d.subject})")

    def _append(self, raw: dict[str, Any]) -> None:
        self.index[str(raw["id"])] = len(self.raws)
        self.raws.append(raw)
        self.merge.lines.append(json.dumps(raw, ensure_ascii=False))

    # --- evidence -----------------------------------------------------------------------
    def _evidence(self, d: Decision) -> None:
        case = str(d.raw["case"])
        if case not in self.index:
            self.merge.refused.append(
                f"{d.where}: item {case!r} is not in {self.path}; give the golden set the run used"
            )
            return
        n = self.index[case]
        raw = json.loads(json.dumps(self.raws[n]))
        history = list(raw.get("review") or [])
        if any(h.get("key") == d.subject for h in history):
            self.merge.skipped.append(f"{case}: candidate {d.subject} already decided")
            return
        if d.decision == "equivalent":
            problem = add_alternative(
                raw, int(d.raw.get("requirement", 0) or 0), str(d.raw["doc_id"]), str(d.raw["quote"])
            )
            if problem:
                self.merge.refused.append(f"{d.where}: {case}: {problem}")
                return
            if self.lookup is not None and find_quote(self.lookup, str(d.raw["doc_id"]), str(d.raw["quote"])) is None:
                self.merge.refused.append(f"{d.where}: {case}: the quote is not in document {d.raw['doc_id']!r}")
                return
        raw["review"] = [*history, d.history_entry()]
        self.raws[n] = raw
        self.merge.lines[n] = json.dumps(raw, ensure_ascii=False)
        self.merge.updated.append(f"{case}: {d.decision} ({d.subject})")


def add_alternative(raw: dict[str, Any], requirement: int, doc_id: str, quote: str) -> str | None:
    """Add ``{doc_id, quote}`` as an alternative of requirement ``requirement`` (0-based,
    in the loader's order: ``evidence`` entries, then ``gold_chunk_ids``, then ``gold_doc_ids``)."""
    new = {"doc_id": doc_id, "quote": quote}
    evidence = list(raw.get("evidence") or [])
    chunk_ids = list(raw.get("gold_chunk_ids") or [])
    if requirement < len(evidence):
        entry = evidence[requirement]
        alts = list(entry["any_of"]) if isinstance(entry, dict) and "any_of" in entry else [entry]
        if new not in alts:
            alts.append(new)
        evidence[requirement] = {"any_of": alts}
    elif requirement < len(evidence) + len(chunk_ids):
        cid = chunk_ids.pop(requirement - len(evidence))
        evidence.append({"any_of": [{"chunk_id": cid}, new]})
        raw["gold_chunk_ids"] = chunk_ids
    elif requirement == len(evidence) + len(chunk_ids) and raw.get("gold_doc_ids"):
        evidence.append({"any_of": [{"doc_id": str(doc)} for doc in raw.pop("gold_doc_ids")] + [new]})
    else:
        total = len(evidence) + len(chunk_ids) + bool(raw.get("gold_doc_ids"))
        return f"requirement {requirement + 1} does not exist (the item has {total})"
    raw["evidence"] = evidence
    if not raw.get("gold_chunk_ids"):
        raw.pop("gold_chunk_ids", None)
    return None
