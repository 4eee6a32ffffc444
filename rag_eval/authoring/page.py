"""The review pages: one self-contained HTML file per drafts file or evidence candidates.

Built like the labelling page (``rag_eval.labels.page``): Jinja2 with autoescape, CSS and
JS inlined from ``report_templates`` (review.*; no CDN, works from ``file://``), the data in
a ``<script type="application/json">`` block written by ``json_for_script``, and the page
builds every item with ``createElement``/``textContent`` only. Its export is a decisions
file (``rag_eval.authoring.decisions``) that ``python -m rag_eval accept`` reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_eval.authoring.drafts import Draft
from rag_eval.core.records import Document
from rag_eval.golden.resolve import ChunkLookup
from rag_eval.labels.page import environment
from rag_eval.util.person_files import write_atomic

TEMPLATE = "review.html.j2"


def _marks(passage_text: str, quotes: Sequence[str]) -> list[list[int]]:
    """Where each quote is in the passage's text (offsets of the passage), whitespace-insensitive."""
    lookup = ChunkLookup([Document("p", "", passage_text)], [])
    out: list[list[int]] = []
    for quote in quotes:
        spans = lookup.locate("p", quote) if quote.strip() else []
        if spans:
            out.append([spans[0][0], spans[0][1]])
    return out


def draft_view(d: Draft) -> dict[str, Any]:
    data = d.to_dict()
    data["marks"] = [_marks(p.text, [q for doc, q in d.evidence if doc == p.doc_id]) for p in d.passages]
    return data


def _render(mode: str, items: Sequence[Mapping[str, Any]], source: str, title: str, export: str) -> str:
    storage = hashlib.sha256(
        f"{mode}|{source}|{'|'.join(str(i.get('id') or i.get('key')) for i in items)}".encode()
    ).hexdigest()[:16]
    data = {"mode": mode, "source": source, "items": list(items), "storage": storage, "export": export}
    return environment().get_template(TEMPLATE).render(data=data, title=title, n=len(items), source=source, mode=mode)


def render_drafts_page(drafts: Sequence[Draft], source: str) -> str:
    return _render(
        "drafts", [draft_view(d) for d in drafts], source, f"Review {len(drafts)} drafts", "review-decisions.jsonl"
    )


def render_evidence_page(candidates: Sequence[Mapping[str, Any]], source: str) -> str:
    return _render(
        "evidence", candidates, source, f"Review {len(candidates)} evidence candidates", "evidence-decisions.jsonl"
    )


def write_page(path: Path, html: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, html.encode("utf-8"))
    return path
