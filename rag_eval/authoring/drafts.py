"""A draft: a candidate golden item a model wrote, with the passages it came from and its
provenance, waiting for a person's review (``status = "draft"``).

One JSON object per line of a drafts file::

    {"id": "draft-…", "status": "draft", "recipe": "standard", "question": "…",
     "answer_points": ["…"], "evidence": [{"doc_id": "…", "quote": "…"}], "tags": {…},
     "expected_action": "answer", "history": [], "passages": [{"doc_id", "start", "end", "text"}],
     "provenance": {"recipe", "source_docs", "spans", "model", "prompt_sha256", "time", …},
     "review_note": "…"}

Each evidence entry is one requirement (cross-topic drafts have two). ``review_note`` says
what the reviewer must check beyond the usual (a negative: that the corpus really cannot
answer it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval.authoring.passages import Passage
from rag_eval.golden.load import GoldenSetError, parse_tags, read_items
from rag_eval.golden.model import ACTIONS


class DraftsError(GoldenSetError):
    """A drafts or decisions file cannot be used; the message names file:line and the fix."""


@dataclass(frozen=True)
class Draft:
    id: str
    recipe: str
    question: str
    answer_points: tuple[str, ...]
    evidence: tuple[tuple[str, str], ...]  # (doc_id, quote) per requirement
    tags: Mapping[str, str]
    expected_action: str
    passages: tuple[Passage, ...]
    provenance: Mapping[str, Any]
    history: tuple[Mapping[str, str], ...] = ()
    review_note: str = ""
    status: str = "draft"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "recipe": self.recipe,
            "question": self.question,
            "answer_points": list(self.answer_points),
            "evidence": [{"doc_id": d, "quote": q} for d, q in self.evidence],
            "tags": dict(self.tags),
            "expected_action": self.expected_action,
            "history": [dict(h) for h in self.history],
            "passages": [p.to_dict() for p in self.passages],
            "provenance": dict(self.provenance),
            "review_note": self.review_note,
        }


def _strs(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DraftsError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def parse_draft(raw: Any, where: str) -> Draft:
    """One line of a drafts file (``where``: file:line)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
        raise DraftsError(
            f"{where}: each line is a draft object with a non-empty 'id' (python -m rag_eval draft writes them)"
        )
    where = f"{where} (id {raw['id']!r})"
    if not isinstance(raw.get("question"), str) or not raw["question"].strip():
        raise DraftsError(f"{where}: missing or empty 'question'")
    evidence = raw.get("evidence", [])
    if not isinstance(evidence, list) or not all(
        isinstance(e, dict) and isinstance(e.get("doc_id"), str) and isinstance(e.get("quote"), str) for e in evidence
    ):
        raise DraftsError(f'{where}: evidence is a list of {{"doc_id": ..., "quote": ...}}')
    passages = raw.get("passages", [])
    if not isinstance(passages, list) or not all(
        isinstance(p, dict) and isinstance(p.get("text"), str) and isinstance(p.get("start"), int) for p in passages
    ):
        raise DraftsError(f'{where}: passages is a list of {{"doc_id", "start", "end", "text"}}')
    action = raw.get("expected_action", "answer")
    if action not in ACTIONS:
        raise DraftsError(f"{where}: expected_action {action!r} is not one of {', '.join(ACTIONS)}")
    provenance = raw.get("provenance", {})
    if not isinstance(provenance, dict):
        raise DraftsError(f"{where}: provenance must be an object")
    return Draft(
        id=raw["id"],
        recipe=str(raw.get("recipe", "")),
        question=raw["question"],
        answer_points=_strs(raw, "answer_points", where),
        evidence=tuple((e["doc_id"], e["quote"]) for e in evidence),
        tags=parse_tags(raw.get("tags", {}), where),
        expected_action=action,
        passages=tuple(
            Passage(str(p.get("doc_id", "")), p["start"], int(p.get("end", 0)), p["text"]) for p in passages
        ),
        provenance=provenance,
        history=tuple(raw.get("history") or ()),
        review_note=str(raw.get("review_note", "")),
        status=str(raw.get("status", "draft")),
    )


def load_drafts(path: Path) -> list[Draft]:
    if not path.is_file():
        raise DraftsError(f"{path}: drafts file not found (python -m rag_eval draft writes one)")
    return read_items(path, parse_draft, DraftsError, "drafts file")


def drafts_jsonl(drafts: Sequence[Draft]) -> bytes:
    import json

    return "".join(json.dumps(d.to_dict(), ensure_ascii=False) + "\n" for d in drafts).encode("utf-8")
