"""Review decisions, as the review pages export them (one JSON object per line).

A draft decision::

    {"kind": "draft", "draft": "draft-…", "decision": "accept" | "edit" | "reject",
     "reason": "…", "reviewer": "…", "time": "…", "item": {question, answer_points, tags,
     expected_action, evidence: [{doc_id, quote}], history}, "passages": [...], "provenance": {...}}

An evidence decision::

    {"kind": "evidence", "key": "…", "case": "item id", "decision": "equivalent" | "partial"
     | "irrelevant", "reason": "…", "reviewer": "…", "time": "…", "doc_id": "…",
     "quote": "…", "chunk_id": "…", "requirement": 0}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.authoring.drafts import DraftsError
from rag_eval.golden.load import read_items

DRAFT_DECISIONS: tuple[str, ...] = ("accept", "edit", "reject")
EVIDENCE_DECISIONS: tuple[str, ...] = ("equivalent", "partial", "irrelevant")


@dataclass(frozen=True)
class Decision:
    kind: str  # "draft" or "evidence"
    subject: str  # the draft id, or the evidence candidate's key
    decision: str
    reviewer: str
    time: str
    reason: str
    raw: Mapping[str, Any]
    where: str

    @property
    def id(self) -> str:  # the one JSONL reader keys on it: one decision per subject
        return f"{self.kind}:{self.subject}"

    def history_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"decision": self.decision, "reviewer": self.reviewer, "time": self.time}
        if self.reason:
            entry["reason"] = self.reason
        if self.kind == "evidence":
            entry.update({k: self.raw[k] for k in ("key", "doc_id", "quote", "chunk_id") if self.raw.get(k)})
        else:
            entry["draft"] = self.subject
        return entry


def _text(raw: Mapping[str, Any], key: str, where: str, required: bool = True) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise DraftsError(f"{where}: {key!r} must be a non-empty string")
    return value


def parse_decision(raw: Any, where: str) -> Decision:
    if not isinstance(raw, dict) or raw.get("kind") not in ("draft", "evidence"):
        raise DraftsError(
            f'{where}: each line is a decision with "kind": "draft" or "evidence" (a review page exports them)'
        )
    kind = raw["kind"]
    subject = _text(raw, "draft" if kind == "draft" else "key", where)
    valid = DRAFT_DECISIONS if kind == "draft" else EVIDENCE_DECISIONS
    if raw.get("decision") not in valid:
        raise DraftsError(f"{where}: decision {raw.get('decision')!r} is not one of {', '.join(valid)}")
    reviewer = _text(raw, "reviewer", where)
    if kind == "draft" and raw["decision"] != "reject" and not isinstance(raw.get("item"), dict):
        raise DraftsError(f"{where}: an accepted or edited draft carries its 'item' (the page exports it)")
    if kind == "evidence":
        _text(raw, "case", where)
        if raw["decision"] == "equivalent":
            _text(raw, "doc_id", where)
            _text(raw, "quote", where)
    return Decision(
        kind,
        subject,
        raw["decision"],
        reviewer,
        _text(raw, "time", where, False),
        _text(raw, "reason", where, False),
        raw,
        where,
    )


def load_decisions(path: Path) -> list[Decision]:
    if not path.is_file():
        raise DraftsError(f"{path}: decisions file not found (export it from the review page)")
    return read_items(path, parse_decision, DraftsError, "decisions file")
