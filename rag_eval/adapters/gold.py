"""Where gold meets a system's output: the one place that turns contract records into
the structures the tiers score (``RetrievalRecord``, ``AnswerRecord``) and resolves each
item's gold into the id space of what came back.

Three modes (``gold = ...`` in the pipeline configuration):

``corpus``  gold is resolved against the local dataset corpus read and chunked as the
            adapter kind's ``CorpusView`` declares (for rag_app and its HTTP API:
            rag_app's chunker with the current settings; ``rag_eval.golden.resolve``);
            returned ids must be those chunk ids.
            Measures chunk and document level at every exposed stage.
``ids``     returned ids, after the optional id map (service id -> gold chunk_id /
            doc_id), are compared with evidence given as ``chunk_id`` / ``doc_id``. A
            quoted span counts as its whole document. Chunk-level metrics exist only for
            items whose every requirement names a chunk id.
``text``    like ``ids``, and a returned item also satisfies a quoted-span requirement
            when its text contains the quote (whitespace-insensitive) and is not much
            longer than it: at most ``text_max_item_chars`` (default 2000) characters or
            10 times the quote, whichever is more. A longer item (a whole document or
            book) counts at document level only, so returning whole documents cannot win
            chunk-level recall. A quote split across two returned chunks matches neither.

In the ids and text modes a gold chunk id's document comes from what is known before
any case runs: the ``doc_id`` beside the ``chunk_id`` in the golden item, the local
corpus if there is one, or the id map. Never from what the system returned for other
cases: that made the number depend on test order, ``-n`` and ``-k`` (and, taken from
this case's own return, would be known only when the chunk was found, a biased
sample). When none settles it, document-level metrics are absent for that item and
the case says why, never computed as 0.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.core.contract import Answer, Retrieval, RetrievedItem
from rag_eval.core.records import AnswerRecord, Chunk, Document, Hit, RetrievalRecord, Source, StageResult, Trace, Usage
from rag_eval.core.stages import StageSpec, infer_stages
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup, ResolvedGold, resolve

GOLD_MODES: tuple[str, ...] = ("corpus", "ids", "text")
#: text mode: a returned item longer than this many characters (whitespace removed), or
#: than TEXT_MAX_RATIO times the quote, satisfies a quoted span at document level only,
#: so a system returning whole books cannot win chunk-level recall.
TEXT_MAX_ITEM_CHARS = 2000
UNKNOWN_DOC = "?"  # prefix of the stand-in document of a returned item whose document is unknown
TEXT_MAX_RATIO = 10
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


def _squash(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace())


class GoldSpace:
    """Gold resolution and record conversion for one run; grows as results come in.

    ``documents``/``chunks`` are the local corpus when there is one (corpus mode needs
    it; the ids and text modes use it, when given, to place chunk ids in documents).
    """

    def __init__(
        self,
        mode: str,
        documents: Iterable[Document] = (),
        chunks: Iterable[Chunk] = (),
        id_map: Mapping[str, IdMapEntry] | None = None,
        stages: StageSpec | None = None,
        text_max_item_chars: int = TEXT_MAX_ITEM_CHARS,
    ) -> None:
        if mode not in GOLD_MODES:
            raise AdapterConfigError(f"gold = {mode!r}; valid: {', '.join(GOLD_MODES)}")
        self.mode = mode
        self.stages = stages  # None: inferred from each retrieval's own stage order
        self.text_max_item_chars = text_max_item_chars
        self.lookup = ChunkLookup(documents, chunks)
        self.id_map = dict(id_map or {})
        self.doc_of: dict[str, str] = {cid: c.doc_id for cid, c in self.lookup.chunks.items()}
        self.kind_of: dict[str, str] = {cid: c.kind for cid, c in self.lookup.chunks.items()}
        self._texts: dict[str, str] = {}
        self._chunk_doc = {e.chunk_id: e.doc_id for e in self.id_map.values() if e.chunk_id and e.doc_id}
        self._cache: dict[str, ResolvedGold] = {}

    def spec_for(self, retrieval: Retrieval) -> StageSpec:
        """The declared stages, or (none declared) the ones this retrieval returned."""
        return self.stages if self.stages is not None else infer_stages(retrieval.stages)

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
        unknown: list[str] = []
        for gi, group in enumerate(item.evidence):
            alts: set[str] = set()
            gdocs: set[str] = set()
            whole: set[str] = set()
            chunk_level = False
            for ref in group.any_of:
                if ref.chunk_id:
                    chunk_level = True
                    alts.add(ref.chunk_id)
                    doc = ref.doc_id or self._gold_doc(ref.chunk_id)
                    if doc is None:
                        unknown.append(ref.chunk_id)
                    else:
                        gdocs.add(doc)
                elif ref.quote and self.mode == "text":
                    chunk_level = True
                    gdocs.add(str(ref.doc_id))
                    needle = _squash(ref.quote)
                    limit = max(self.text_max_item_chars, TEXT_MAX_RATIO * len(needle))
                    alts |= {g for g in seen if needle and needle in (t := self._texts.get(g, "")) and len(t) <= limit}
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
        return ResolvedGold(groups, groups, tuple(docs), tuple(dict.fromkeys(unknown)))

    def _gold_doc(self, chunk_id: str) -> str | None:
        """A gold chunk's document from what is fixed before any case: the local corpus or
        the id map; None when unknown. Not ``doc_of``: that grows with the returns of the
        cases run so far in this process, so it would depend on order, -n and -k."""
        if chunk_id in self.lookup.chunks:
            return self.lookup.chunks[chunk_id].doc_id
        return self._chunk_doc.get(chunk_id)

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
            doc = doc or self._chunk_doc.get(gid)
            # From this item alone (never kept from another case's return of the same id);
            # an item of unknown document is its own document: never equal to gold.
            self.doc_of[gid] = doc or f"{UNKNOWN_DOC}{gid}"
        if gid not in self.kind_of or known is None:
            kind = item.metadata.get("kind")
            self.kind_of[gid] = kind if kind in ("child", "parent") else self.kind_of.get(gid, "child")
        if item.text and self.mode == "text" and gid not in self._texts:
            # Only text mode matches quotes against returned texts; squashing every text of
            # every case in the other modes cost ~0.8 ms per case (bench/gate_overhead.py).
            self._texts[gid] = _squash(item.text)
        return gid

    def retrieval_result(self, question: str, retrieval: Retrieval) -> RetrievalRecord:
        spec = self.spec_for(retrieval)
        # A returned list the declaration leaves out (rag_app's API still sends an identity
        # "reranked" list with reranker = none) is not scored: the declaration decides.
        final = [(self.register(i), i) for i in retrieval.items]
        stages: list[StageResult] = []
        for name in spec.names:
            if name in retrieval.stages:
                hits = retrieval.stages[name]
                stages.append(
                    StageResult(name, tuple(Hit(self.register(h), _num(h.score), r) for r, h in enumerate(hits, 1)))
                )
            elif name == spec.final:
                stages.append(StageResult(name, tuple(Hit(g, _num(i.score), r) for r, (g, i) in enumerate(final, 1))))
        self._check_corpus_ids([g for s in stages for g in s.ids])
        return RetrievalRecord(
            question,
            tuple(self._chunk(g, i) for g, i in final),
            Trace(tuple(stages)),
            retrieval.degraded,
            retrieval.degradation_reason,
            dict(retrieval.stage_ms),
        )

    def chat_result(self, question: str, answer: Answer) -> AnswerRecord:
        behind = answer.retrieval
        retrieved = self.retrieval_result(
            question,
            Retrieval(
                answer.context,
                behind.stages if behind else {},
                answer.degraded,
                answer.degradation_reason,
                {**(behind.stage_ms if behind else {}), **answer.stage_ms},
            ),
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
                    doc_id=self.doc_of.get(gid, ""),
                    book=str(meta.get("book") or chunk.book),
                    section=str(meta.get("section") or chunk.section),
                    page_start=_page(meta.get("page_start", chunk.page_start)),
                    page_end=_page(meta.get("page_end", chunk.page_end)),
                )
            )
        usage = answer.usage
        return AnswerRecord(
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
            stage_ms=retrieved.stage_ms,
        )

    def _chunk(self, gid: str, item: RetrievedItem) -> Chunk:
        known = self.lookup.chunks.get(gid)
        if known is not None:
            return known
        meta = dict(item.metadata)
        parent = meta.get("parent_id")
        return Chunk(
            chunk_id=gid,
            doc_id=self.doc_of.get(gid, ""),
            text=item.text,
            kind=self.kind_of.get(gid, "child"),
            parent_id=str(parent) if parent else None,
            book=str(meta.get("book") or meta.get("title") or ""),
            section=str(meta.get("section") or ""),
            page_start=_page(meta.get("page_start")),
            page_end=_page(meta.get("page_end")),
            char_start=0,
            char_end=len(item.text),
            metadata={
                k: v
                for k, v in meta.items()
                if k not in ("doc_id", "kind", "parent_id", "book", "section", "pages_label")
            },
            pages_label=str(meta.get("pages_label") or ""),
        )

    def _check_corpus_ids(self, ids: Sequence[str]) -> None:
        """corpus mode: a service chunking differently returns ids we do not know; say so
        instead of scoring every case zero."""
        if self.mode != "corpus" or not ids or any(i in self.lookup.chunks for i in ids):
            return
        raise GoldMismatch(
            f"none of the {len(set(ids))} returned ids (e.g. {ids[0]!r}) is a chunk id of the local corpus chunked "
            "with the current settings: gold = 'corpus' needs the system to chunk the same corpus as its adapter "
            "kind reads it locally (for rag_app: the same chunk settings, --rag-set on both sides); otherwise set "
            "gold = 'ids' (with an id_map) or gold = 'text' in the pipeline configuration"
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
