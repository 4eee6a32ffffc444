"""Where gold meets a system's output: the one place that turns contract records into
the structures the tiers score (``RetrievalResult``, ``ChatResult``) and resolves each
item's gold into the id space of what came back.

Three modes (``gold = ...`` in the pipeline configuration):

``corpus``  gold is resolved against the local dataset corpus chunked by rag_app's
            chunker with the current settings (``rag_eval.golden.resolve``); returned
            ids must be those chunk ids (rag_app in process or behind its HTTP API).
            Measures chunk and document level at every exposed stage.
``ids``     returned ids, after the optional id map (service id -> gold chunk_id /
            doc_id), are compared with evidence given as ``chunk_id`` / ``doc_id``. A
            quoted span counts as its whole document. Chunk-level metrics exist only for
            items whose every requirement names a chunk id.
``text``    like ``ids``, and a returned item also satisfies a quoted-span requirement
            when its text contains the quote (whitespace-insensitive). A quote split
            across two returned chunks matches neither.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, cast

from rag_app.corpus import ChunkConfig, chunk_documents
from rag_app.settings import Settings
from rag_app.types import ChatResult, Chunk, ChunkKind, Document, Hit, RetrievalResult, Source, StageResult, Trace, Usage
from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.contract import Answer, Retrieval, RetrievedItem
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup, ResolvedGold, resolve

GOLD_MODES: tuple[str, ...] = ("corpus", "ids", "text")
FINAL_STAGE = "context"
ID_MAP_COLUMNS: tuple[str, ...] = ("service_id", "chunk_id", "doc_id")


class GoldMismatch(ValueError):
    """Returned ids are not in the gold's id space (the case becomes an ``error``)."""


@dataclass(frozen=True)
class IdMapEntry:
    """What one service id stands for in the golden set."""

    chunk_id: str | None = None
    doc_id: str | None = None


def load_id_map(path: Path) -> dict[str, IdMapEntry]:
    """``service_id,chunk_id,doc_id`` rows (CSV with that header, or JSONL objects);
    chunk_id or doc_id may be empty, not both."""
    if not path.is_file():
        raise AdapterConfigError(f"id_map {path}: no such file")
    rows: list[tuple[str, Mapping[str, Any]]] = []
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".jsonl", ".json"):
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise AdapterConfigError(f"id_map {path}:{n}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise AdapterConfigError(f"id_map {path}:{n}: expected an object with {', '.join(ID_MAP_COLUMNS)}")
            rows.append((f"{path}:{n}", row))
    else:
        reader = csv.DictReader(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        if not reader.fieldnames or "service_id" not in reader.fieldnames:
            raise AdapterConfigError(
                f"id_map {path}: the first line must be the header {','.join(ID_MAP_COLUMNS)} (got {reader.fieldnames})"
            )
        rows = [(f"{path} row {n}", row) for n, row in enumerate(reader, 1)]
    out: dict[str, IdMapEntry] = {}
    for where, row in rows:
        sid = str(row.get("service_id") or "").strip()
        chunk = str(row.get("chunk_id") or "").strip() or None
        doc = str(row.get("doc_id") or "").strip() or None
        if not sid or not (chunk or doc):
            raise AdapterConfigError(f"id_map {where}: needs a service_id and a chunk_id or doc_id, got {dict(row)}")
        if sid in out:
            raise AdapterConfigError(f"id_map {where}: service_id {sid!r} is mapped twice")
        out[sid] = IdMapEntry(chunk, doc)
    return out


def corpus_chunks(documents: Sequence[Document], settings: Settings) -> list[Chunk]:
    """The chunks rag_app makes of the corpus with these settings (no embedding)."""
    return chunk_documents(documents, ChunkConfig.from_settings(settings))


def _squash(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace())


class GoldSpace:
    """Gold resolution and record conversion for one run; grows as results come in."""

    def __init__(
        self,
        mode: str,
        documents: Iterable[Document],
        chunks: Iterable[Chunk],
        id_map: Mapping[str, IdMapEntry] | None = None,
    ) -> None:
        if mode not in GOLD_MODES:
            raise AdapterConfigError(f"gold = {mode!r}; valid: {', '.join(GOLD_MODES)}")
        self.mode = mode
        self.lookup = ChunkLookup(documents, chunks)
        self.id_map = dict(id_map or {})
        self.doc_of: dict[str, str] = {cid: c.doc_id for cid, c in self.lookup.chunks.items()}
        self.kind_of: dict[str, str] = {cid: c.kind for cid, c in self.lookup.chunks.items()}
        self._texts: dict[str, str] = {}
        self._chunk_doc = {e.chunk_id: e.doc_id for e in self.id_map.values() if e.chunk_id and e.doc_id}
        self._cache: dict[str, ResolvedGold] = {}

    # --- gold ---------------------------------------------------------------------------
    def resolve(self, item: GoldenItem, returned: Iterable[str] = ()) -> ResolvedGold:
        """The item's gold in the id space of returned items (``returned``: every id the
        system gave for this case, all stages; used by the ids and text modes)."""
        if self.mode == "corpus":
            if item.id not in self._cache:
                self._cache[item.id] = resolve(item, self.lookup)
            return self._cache[item.id]
        seen = list(dict.fromkeys(returned))
        child: list[frozenset[str]] | None = []
        docs: list[frozenset[str]] = []
        for gi, group in enumerate(item.evidence):
            alts: set[str] = set()
            gdocs: set[str] = set()
            whole: set[str] = set()
            chunk_level = False
            for ref in group.any_of:
                if ref.chunk_id:
                    chunk_level = True
                    alts.add(ref.chunk_id)
                    gdocs.add(self._gold_doc(ref.chunk_id))
                elif ref.quote and self.mode == "text":
                    chunk_level = True
                    gdocs.add(str(ref.doc_id))
                    needle = _squash(ref.quote)
                    alts |= {g for g in seen if needle and needle in self._texts.get(g, "")}
                else:  # a whole document, or (ids mode) a quote: document level only
                    gdocs.add(str(ref.doc_id))
                    whole.add(str(ref.doc_id))
            if chunk_level:
                alts |= {g for g in seen if self.doc_of.get(g) in whole}
                # grouped metrics refuse an empty requirement: a placeholder nothing returns
                child = None if child is None else [*child, frozenset(alts or {f"?unmatched:{item.id}:{gi + 1}"})]
            else:
                child = None
            docs.append(frozenset(gdocs))
        groups = tuple(child) if child is not None else None
        return ResolvedGold(groups, groups, tuple(docs))

    def _gold_doc(self, chunk_id: str) -> str:
        if chunk_id in self.lookup.chunks:
            return self.lookup.chunks[chunk_id].doc_id
        return self._chunk_doc.get(chunk_id) or f"?{chunk_id}"

    # --- records ------------------------------------------------------------------------
    def register(self, item: RetrievedItem) -> str:
        """The gold-space id of a returned item; records its document, kind and text."""
        entry = self.id_map.get(item.id)
        gid = entry.chunk_id if entry is not None and entry.chunk_id else item.id
        known = self.lookup.chunks.get(gid)
        if entry is not None and entry.doc_id:
            self.doc_of[gid] = entry.doc_id
        elif known is None:
            doc = item.doc_id
            mapped = self.id_map.get(doc) if doc else None
            doc = mapped.doc_id if mapped is not None and mapped.doc_id else doc
            if doc or gid not in self.doc_of:
                self.doc_of[gid] = doc or self._chunk_doc.get(gid) or f"?{gid}"
        if gid not in self.kind_of or known is None:
            kind = item.metadata.get("kind")
            self.kind_of[gid] = kind if kind in ("child", "parent") else self.kind_of.get(gid, "child")
        if item.text and self.mode == "text" and gid not in self._texts:
            # Only text mode matches quotes against returned texts; squashing every text of
            # every case in the other modes cost ~0.8 ms per case (bench/gate_overhead.py).
            self._texts[gid] = _squash(item.text)
        return gid

    def retrieval_result(self, question: str, retrieval: Retrieval) -> RetrievalResult:
        final = [(self.register(i), i) for i in retrieval.items]
        stages: list[StageResult] = []
        for name, hits in retrieval.stages.items():
            stages.append(
                StageResult(name, tuple(Hit(self.register(h), _num(h.score), r) for r, h in enumerate(hits, 1)))
            )
        if FINAL_STAGE not in retrieval.stages:
            stages.append(StageResult(FINAL_STAGE, tuple(Hit(g, _num(i.score), r) for r, (g, i) in enumerate(final, 1))))
        self._check_corpus_ids([g for s in stages for g in s.ids])
        return RetrievalResult(
            question,
            tuple(self._chunk(g, i) for g, i in final),
            Trace(tuple(stages)),
            retrieval.degraded,
            retrieval.degradation_reason,
        )

    def chat_result(self, question: str, answer: Answer) -> ChatResult:
        behind = answer.retrieval
        retrieved = self.retrieval_result(
            question,
            Retrieval(answer.context, behind.stages if behind else {}, answer.degraded, answer.degradation_reason),
        )
        sources: list[Source] = []
        for n, item in enumerate(answer.sources, 1):
            gid = self.register(item)
            chunk = self._chunk(gid, item)
            meta = item.metadata
            sources.append(
                Source(
                    n=int(meta.get("n") or n),
                    chunk_id=gid,
                    doc_id=self.doc_of[gid],
                    book=str(meta.get("book") or chunk.book),
                    section=str(meta.get("section") or chunk.section),
                    page_start=_page(meta.get("page_start", chunk.page_start)),
                    page_end=_page(meta.get("page_end", chunk.page_end)),
                )
            )
        usage = answer.usage
        return ChatResult(
            question=question,
            answer=answer.answer,
            sources=tuple(sources),
            context_used=retrieved.context,
            trace=retrieved.trace,
            generator=answer.generator,
            refused=answer.refused,
            degraded=answer.degraded,
            degradation_reason=answer.degradation_reason,
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
        )

    def _chunk(self, gid: str, item: RetrievedItem) -> Chunk:
        known = self.lookup.chunks.get(gid)
        if known is not None:
            return known
        meta = dict(item.metadata)
        parent = meta.get("parent_id")
        return Chunk(
            chunk_id=gid,
            doc_id=self.doc_of.get(gid, f"?{gid}"),
            text=item.text,
            kind=cast(ChunkKind, self.kind_of.get(gid, "child")),  # only "child" / "parent" are stored
            parent_id=str(parent) if parent else None,
            book=str(meta.get("book") or meta.get("title") or ""),
            section=str(meta.get("section") or ""),
            page_start=_page(meta.get("page_start")),
            page_end=_page(meta.get("page_end")),
            char_start=0,
            char_end=len(item.text),
            metadata={k: v for k, v in meta.items() if k not in ("doc_id", "kind", "parent_id", "book", "section")},
        )

    def _check_corpus_ids(self, ids: Sequence[str]) -> None:
        """corpus mode: a service chunking differently returns ids we do not know; say so
        instead of scoring every case zero."""
        if self.mode != "corpus" or not ids or any(i in self.lookup.chunks for i in ids):
            return
        raise GoldMismatch(
            f"none of the {len(set(ids))} returned ids (e.g. {ids[0]!r}) is a chunk id of the local corpus chunked "
            "with the current settings: gold = 'corpus' needs the system to run rag_app's chunker on the same corpus "
            "with the same chunk settings (--rag-set on both sides); otherwise set gold = 'ids' (with an id_map) or "
            "gold = 'text' in the pipeline configuration"
        )


def _num(score: float | None) -> float:
    return float(score) if score is not None else 0.0


def _page(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
