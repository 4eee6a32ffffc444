"""The hybrid pipeline: vector + BM25 → RRF → rerank → truncate → generate.

Each stage's ranked output is kept in the trace so that evaluation can say where a
gold chunk was lost. This module wires components; each stage lives in its own module.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_app.corpus import ChunkConfig, chunk_documents, corpus_hash, load_corpus
from rag_app.embeddings import make_embedder
from rag_app.errors import RerankError
from rag_app.generation import REFUSAL_TEXT, build_sources, is_refusal, make_generator
from rag_app.index import Index, build_or_load_index, indexed_text
from rag_app.index.chroma_server import ChromaServer
from rag_app.interfaces import Embedder, Generator, Reranker
from rag_app.retrieval import make_reranker, rrf_fuse, truncate_context
from rag_app.settings import Settings
from rag_app.sufficiency import SufficiencyPolicy, SufficiencySignals, TermWeights, decide, measure
from rag_app.text import tokenize
from rag_app.types import (
    ChatResult,
    Chunk,
    DialogueTurn,
    Hit,
    RetrievalResult,
    Source,
    StageResult,
    Sufficiency,
    Trace,
    Usage,
)

if TYPE_CHECKING:
    from rag_app.dialogue import TutorPolicy

log = logging.getLogger(__name__)

RERANK_FAILED = "rerank_failed"


@dataclass(frozen=True)
class PipelineInfo:
    """What results files and reports show about the system under test."""

    index_fingerprint: str
    corpus_hash: str
    embedder: str
    embedder_family: str
    similarity_threshold: float
    reranker: str
    generator: str
    generator_deterministic: bool
    n_docs: int
    n_children: int
    n_parents: int
    vector_store: str = ""  # "chroma http://host:port collection ..." or "chroma embedded:<dir> ..."; no token
    index_built: bool = False  # this process built the index (else it loaded an existing one)
    embeddings_computed: int = 0  # passages the model embedded for this build
    embeddings_cached: int = 0  # passages read from the embedding cache for this build


class RagPipeline:
    """Builds (or reuses) the index for a corpus and answers questions over it."""

    def __init__(
        self,
        settings: Settings,
        *,
        corpus_path: str | Path | None = None,
        embedder: Embedder | None = None,
        embedder_family: str | None = None,
        reranker: Reranker | None = None,
        generator: Generator | None = None,
    ) -> None:
        self.settings = settings
        path = Path(corpus_path if corpus_path is not None else settings.corpus_path)
        self.documents = load_corpus(path)
        self.corpus_hash = corpus_hash(self.documents)
        config = ChunkConfig.from_settings(settings)
        chunks = chunk_documents(self.documents, config)
        if embedder is None:
            embedder, embedder_family = make_embedder(settings)
        self.embedder = embedder
        self.embedder_family = embedder_family or "custom"
        server = ChromaServer.from_settings(settings)  # None: the embedded store
        self.index: Index = build_or_load_index(
            docs=self.documents,
            chunks=chunks,
            embedder=embedder,
            cache_dir=Path(settings.cache_dir),
            corpus_hash=self.corpus_hash,
            chunk_config=config.to_dict(),
            client=server.connect() if server is not None else None,
        )
        self.threshold = settings.threshold_for(self.embedder_family)
        self.reranker = (
            reranker if reranker is not None else make_reranker(settings, embedder, tokenize, text_of=indexed_text)
        )
        self.generator = generator if generator is not None else make_generator(settings, tokenize)
        self._term_weights: TermWeights | None = None  # built on the first sufficiency check
        self._tutor: TutorPolicy | None = None  # built on the first dialogue call

    @property
    def info(self) -> PipelineInfo:
        stats = self.index.stats
        return PipelineInfo(
            index_fingerprint=self.index.fingerprint,
            corpus_hash=self.corpus_hash,
            embedder=self.embedder.model_id,
            embedder_family=self.embedder_family,
            similarity_threshold=self.threshold,
            reranker=self.reranker.name,
            generator=self.generator.name,
            generator_deterministic=self.generator.deterministic,
            n_docs=stats.n_docs,
            n_children=stats.n_children,
            n_parents=stats.n_parents,
            vector_store=self.index.vectors.describe(),
            index_built=stats.built,
            embeddings_computed=stats.embeddings_computed,
            embeddings_cached=stats.embeddings_cached,
        )

    def retrieve(self, question: str, top_k: int | None = None) -> RetrievalResult:
        """Run every retrieval stage; ``top_k`` caps the chunks kept after reranking."""
        s = self.settings
        keep = top_k if top_k is not None else s.rerank_top_n
        stages: list[StageResult] = []

        t0 = time.perf_counter()
        qv = self.embedder.embed_query(question)
        vector = [(cid, sc) for cid, sc in self.index.vector_search(qv, s.vector_top_k) if sc >= self.threshold]
        stages.append(_stage("vector", vector, t0))

        t0 = time.perf_counter()
        bm25 = self.index.bm25_search(question, s.bm25_top_k)
        stages.append(_stage("bm25", bm25, t0))

        t0 = time.perf_counter()
        fused = rrf_fuse([[c for c, _ in vector], [c for c, _ in bm25]], k=s.rrf_k, top_k=s.fused_top_k)
        stages.append(StageResult("fused", tuple(fused), time.perf_counter() - t0))

        degraded, reason = False, None
        t0 = time.perf_counter()
        reranked, degraded, reason = self._rerank(question, fused, keep)
        stages.append(StageResult("reranked", tuple(reranked), time.perf_counter() - t0))

        t0 = time.perf_counter()
        context = truncate_context(self._context_chunks(reranked), s.context_chars)
        stages.append(
            StageResult(
                "context",
                tuple(Hit(c.chunk_id, 0.0, i + 1) for i, c in enumerate(context)),
                time.perf_counter() - t0,
            )
        )
        return RetrievalResult(question, tuple(context), Trace(tuple(stages)), degraded, reason)

    def sufficiency(self, question: str, retrieved: RetrievalResult) -> Sufficiency:
        """Is ``retrieved`` enough to answer ``question``? (rag_app/sufficiency.py)"""
        return decide(self.sufficiency_signals(question, retrieved), SufficiencyPolicy.from_settings(self.settings))

    def sufficiency_signals(self, question: str, retrieved: RetrievalResult) -> SufficiencySignals:
        """The measured inputs of the sufficiency decision for one retrieval."""
        if self._term_weights is None:
            self._term_weights = TermWeights.from_bm25(self.index.bm25)
        return measure(
            question,
            retrieved,
            tokenize=tokenize,
            weights=self._term_weights,
            similarity_threshold=self.threshold,
            text_of=indexed_text,
            rerank_scores=not getattr(self.reranker, "passthrough", False),
        )

    def chat(self, question: str, top_k: int | None = None, history: Sequence[dict[str, str]] = ()) -> ChatResult:
        """Retrieve, then answer from the context only; no context or insufficient
        evidence → say so, never invent."""
        retrieved = self.retrieve(question, top_k)
        verdict = self.sufficiency(question, retrieved) if self.settings.sufficiency else None
        if not retrieved.context:
            return self._result(retrieved, REFUSAL_TEXT, refused=True, sufficiency=verdict)
        if verdict is not None and not verdict.sufficient:
            log.info("insufficient evidence, refusing: %s", verdict.message)
            return self._result(retrieved, REFUSAL_TEXT, refused=True, sufficiency=verdict)
        t0 = time.perf_counter()
        answer, usage = self.generator.generate(question, retrieved.context, history)
        generation = StageResult("generation", (), time.perf_counter() - t0)
        refused = is_refusal(answer)
        return self._result(
            retrieved,
            answer,
            refused=refused,
            sources=() if refused else tuple(build_sources(retrieved.context)),
            context=retrieved.context,
            trace=Trace(retrieved.trace.stages + (generation,)),
            usage=usage,
            sufficiency=verdict,
        )

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any] | None = None) -> DialogueTurn:
        """One tutor turn for the conversation so far (oldest first, ending with the student's
        message) and the learning context: clarify, state limits, or a layered hint with
        ``[n]`` sources and answer interception (rag_app/dialogue/policy.py). A malformed
        conversation is a ValueError naming the turn."""
        if self._tutor is None:
            from rag_app.dialogue import TutorPolicy

            self._tutor = TutorPolicy(self)
        return self._tutor.respond(turns, context)

    def _result(
        self,
        retrieved: RetrievalResult,
        answer: str,
        *,
        refused: bool,
        sources: tuple[Source, ...] = (),
        context: tuple[Chunk, ...] = (),
        trace: Trace | None = None,
        usage: Usage = Usage(),  # noqa: B008 - a frozen dataclass: one shared immutable default is safe
        sufficiency: Sufficiency | None = None,
    ) -> ChatResult:
        return ChatResult(
            question=retrieved.question,
            answer=answer,
            sources=sources,
            context_used=context,
            trace=trace or retrieved.trace,
            generator=self.generator.name,
            refused=refused,
            degraded=retrieved.degraded,
            degradation_reason=retrieved.degradation_reason,
            usage=usage,
            sufficiency=sufficiency,
        )

    def _rerank(self, question: str, fused: list[Hit], keep: int) -> tuple[list[Hit], bool, str | None]:
        if not fused:
            return [], False, None
        if getattr(self.reranker, "passthrough", False):
            return [Hit(h.chunk_id, h.score, i + 1) for i, h in enumerate(fused[:keep])], False, None
        chunks = [self.index.chunks[h.chunk_id] for h in fused]
        try:
            scores = self.reranker.rerank(question, chunks, [h.score for h in fused])
            if len(scores) != len(chunks):
                raise RerankError(f"reranker returned {len(scores)} scores for {len(chunks)} chunks")
        except RerankError as exc:
            # The answer still comes: keep the fused order and say the result is degraded.
            log.warning("reranker %s failed, keeping fused order: %s", self.reranker.name, exc)
            return [Hit(h.chunk_id, h.score, i + 1) for i, h in enumerate(fused[:keep])], True, RERANK_FAILED
        order = sorted(range(len(fused)), key=lambda i: (-scores[i], i))
        return [Hit(fused[i].chunk_id, float(scores[i]), r + 1) for r, i in enumerate(order[:keep])], False, None

    def _context_chunks(self, hits: list[Hit]) -> list[Chunk]:
        chunks = [self.index.chunks[h.chunk_id] for h in hits]
        if self.settings.context_mode == "child":
            return chunks
        parents: list[Chunk] = []
        seen: set[str] = set()
        for c in chunks:
            parent = self.index.chunks.get(c.parent_id or "", c)
            if parent.chunk_id not in seen:
                seen.add(parent.chunk_id)
                parents.append(parent)
        return parents


def _stage(name: str, ranked: list[tuple[str, float]], t0: float) -> StageResult:
    hits = tuple(Hit(cid, float(score), i + 1) for i, (cid, score) in enumerate(ranked))
    return StageResult(name, hits, time.perf_counter() - t0)


_DEFAULT: dict[tuple[str, ...], RagPipeline] = {}


def default_pipeline(settings: Settings | None = None) -> RagPipeline:
    """The process-wide pipeline for the library API, built once per settings."""
    settings = settings or Settings.load()
    key = tuple(f"{k}={v}" for k, v in sorted(settings.to_dict().items()))
    if key not in _DEFAULT:
        _DEFAULT[key] = RagPipeline(settings)
    return _DEFAULT[key]


def retrieve(question: str, top_k: int | None = None, settings: Settings | None = None) -> RetrievalResult:
    """Library API: the final context and the per-stage trace for one question."""
    return default_pipeline(settings).retrieve(question, top_k)


def chat(question: str, top_k: int | None = None, settings: Settings | None = None) -> ChatResult:
    """Library API: answer, sources, context_used, degraded, degradation_reason and trace."""
    return default_pipeline(settings).chat(question, top_k)
