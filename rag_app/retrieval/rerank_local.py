"""An offline second-stage scorer: no download, deterministic, explainable.

A real cross-encoder needs weights we may not download, so the local reranker
combines three signals the first stage does not combine this way:

    score = w_semantic * semantic + w_coverage * coverage + w_exact * exact + w_prior * prior

(a) ``semantic`` -- cosine between the query embedding (query mode) and the chunk
    embedding (passage mode), in [-1, 1]. RRF only used the vector *rank*; the
    reranker looks at the actual similarity.
(b) ``coverage`` -- the share of the query's distinct content tokens that occur among
    the chunk's tokens, in [0, 1]; idf-weighted when an idf mapping is given (a chunk
    that contains "等差数列" matters more than one that contains "公式"). BM25 rewards
    repeating one term; coverage rewards answering *all* of the question.
(c) ``exact`` -- the share of the query's multi-character terms and formula spans
    (``f(x)=x^2``, ``a_n``, ``2x+1``) found verbatim in the chunk, in [0, 1]. CJK terms
    and formulas are matched as substrings of the whitespace-free, NFKC-normalised
    chunk text, because jieba may segment the same words differently in a question
    and a textbook sentence; pure-Latin words are matched as whole tokens so that
    "sin" does not match inside "using".

(d) ``prior`` -- the chunk's fused (RRF) score divided by the best fused score, in
    [0, 1], when the pipeline passes the first stage's scores: agreement between the
    vector and BM25 lists is evidence the three signals above do not see.

Default weights 0.5 / 0.4 / 0.1 / 0.5: semantic similarity leads, lexical coverage
corrects embeddings that miss a maths term, exact matches only break near-ties, and the
prior keeps the first stage's consensus. The prior weight was chosen on the tune split
of gaokao_math (doc-level MRR@10 0.746 → 0.769; holdout 0.740 → 0.789, see
BENCHMARKS.md); the other weights predate that measurement.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from rag_app.errors import ConfigError, RerankError
from rag_app.interfaces import Embedder
from rag_app.types import Chunk

Tokenizer = Callable[[str], list[str]]

DEFAULT_W_SEMANTIC = 0.5
DEFAULT_W_COVERAGE = 0.4
DEFAULT_W_EXACT = 0.1
DEFAULT_W_PRIOR = 0.5
TOKEN_CACHE_SIZE = 200_000  # texts whose content tokens are remembered

# Function words that say nothing about which chunk answers: question words, particles,
# and maths-exercise verbs ("求", "请") that appear in every exercise. English "a" and
# "i" are deliberately absent: in maths they are a variable and the imaginary unit.
STOPWORDS: frozenset[str] = frozenset(
    "的 了 是 在 和 与 及 或 吗 呢 吧 啊 呀 么 什么 怎么 怎样 如何 为什么 哪些 哪个 多少 请 求 "
    "一个 这个 那个 这 那 有 也 都 就 而 之 其 被 把 对 于 为 以 可以 能 会 要 我 你 他 它 我们 "
    "an the of to in on for and or is are was were be been what how why which who does do did "
    "with by as at from that this these those it its can you we".split()
)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_GREEK = "\u0370-\u03ff"
_CONTENT_CHAR = re.compile(f"[0-9a-z{_CJK}{_GREEK}]")
_HAS_CJK = re.compile(f"[{_CJK}]")
# A formula span: letters, digits, Greek and operators, with no whitespace inside; it
# counts only if it holds a digit or an operator (plain words are handled as tokens).
_FORMULA_SPAN = re.compile(rf"[0-9a-z{_GREEK}^_+\-*/=()<>≤≥≠√|'.]+")
_FORMULA_MARK = re.compile(r"[0-9^_+\-*/=()<>≤≥≠√|']")


@dataclass(frozen=True)
class LocalScore:
    """The parts of one chunk's score, kept so that a surprising ranking can be explained."""

    semantic: float
    coverage: float
    exact: float
    total: float
    prior: float = 0.0


class LocalReranker:
    """Deterministic reranker from an embedder and a tokenizer; see the module docstring."""

    name = "local"

    def __init__(
        self,
        embedder: Embedder,
        tokenize: Tokenizer,
        *,
        idf: Mapping[str, float] | None = None,
        w_semantic: float = DEFAULT_W_SEMANTIC,
        w_coverage: float = DEFAULT_W_COVERAGE,
        w_exact: float = DEFAULT_W_EXACT,
        w_prior: float = DEFAULT_W_PRIOR,
        text_of: Callable[[Chunk], str] | None = None,
    ) -> None:
        weights = {"w_semantic": w_semantic, "w_coverage": w_coverage, "w_exact": w_exact, "w_prior": w_prior}
        for key, value in weights.items():
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"LocalReranker {key} must be a finite number >= 0, got {value}")
        if sum(weights.values()) == 0:
            raise ConfigError("LocalReranker weights are all zero; give at least one of them a positive value")
        self.embedder = embedder
        self.tokenize = tokenize
        # The pipeline passes the index's own text function, so the chunk vectors come
        # from the embedding cache instead of being computed again on every query.
        self.text_of: Callable[[Chunk], str] = text_of or (lambda c: c.text)
        self._tokens: dict[str, frozenset[str]] = {}
        self.w_semantic, self.w_coverage, self.w_exact = w_semantic, w_coverage, w_exact
        self.w_prior = w_prior
        # idf is looked up by normalised token; a token missing from it is treated as
        # the rarest known one (it occurs nowhere in the corpus the idf came from).
        self._idf = {_norm(k): max(float(v), 0.0) for k, v in (idf or {}).items()}
        self._idf_unknown = max(self._idf.values(), default=1.0)

    def rerank(self, query: str, chunks: Sequence[Chunk], first_stage: Sequence[float] | None = None) -> list[float]:
        return [part.total for part in self.explain(query, chunks, first_stage)]

    def explain(
        self, query: str, chunks: Sequence[Chunk], first_stage: Sequence[float] | None = None
    ) -> list[LocalScore]:
        """Score parts per chunk, in input order. Any failure raises ``RerankError``."""
        if not chunks:
            return []
        try:
            parts = self._explain(query, [self.text_of(c) for c in chunks])
            return self._with_prior(parts, first_stage)
        except RerankError:
            raise
        except Exception as exc:  # embedder/tokenizer failures must degrade, not crash
            raise RerankError(f"local reranker failed: {type(exc).__name__}: {exc}") from exc

    def _with_prior(self, parts: list[LocalScore], first_stage: Sequence[float] | None) -> list[LocalScore]:
        """Add the first stage's consensus: the fused score relative to the best one, in [0, 1]."""
        if not first_stage or self.w_prior == 0:
            return parts
        if len(first_stage) != len(parts):
            raise RerankError(f"{len(first_stage)} first-stage scores for {len(parts)} chunks")
        top = max(first_stage)
        return [
            LocalScore(
                p.semantic,
                p.coverage,
                p.exact,
                p.total + self.w_prior * (s / top if top > 0 else 0.0),
                s / top if top > 0 else 0.0,
            )
            for p, s in zip(parts, first_stage)
        ]

    # --- the three signals ----------------------------------------------------------------
    def _explain(self, query: str, texts: list[str]) -> list[LocalScore]:
        semantic = self._semantic(query, texts) if self.w_semantic > 0 else [0.0] * len(texts)
        q_tokens = self._content_tokens(query)
        q_weights = {t: (self._idf.get(t, self._idf_unknown) if self._idf else 1.0) for t in q_tokens}
        q_total = math.fsum(q_weights.values())
        terms = _exact_terms(query, q_tokens)
        out: list[LocalScore] = []
        for text, sem in zip(texts, semantic):
            c_tokens = self._content_tokens(text)
            coverage = math.fsum(w for t, w in q_weights.items() if t in c_tokens) / q_total if q_total > 0 else 0.0
            exact = _exact_share(terms, text, c_tokens)
            total = self.w_semantic * sem + self.w_coverage * coverage + self.w_exact * exact
            out.append(LocalScore(semantic=sem, coverage=coverage, exact=exact, total=total))
        return out

    def _semantic(self, query: str, texts: list[str]) -> list[float]:
        """Cosine per text; 0.0 for an empty query or text (nothing to compare, no embedder call)."""
        scores = [0.0] * len(texts)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        if not query.strip() or not todo:
            return scores
        q = np.asarray(self.embedder.embed_query(query), dtype=np.float64).reshape(-1)
        p = np.asarray(self.embedder.embed_passages([texts[i] for i in todo]), dtype=np.float64)
        p = p.reshape(len(todo), -1)
        if p.shape[1] != q.shape[0]:
            raise RerankError(
                f"embedder {self.embedder.model_id!r} returned query dim {q.shape[0]} but passage dim {p.shape[1]}"
            )
        # Normalise here too: the protocol promises unit vectors, but a cosine must not
        # depend on that promise; a zero vector has cosine 0 with everything.
        qn = np.linalg.norm(q)
        pn = np.linalg.norm(p, axis=1)
        denom = np.where(pn * qn > 0, pn * qn, 1.0)
        cos = (p @ q) / denom
        if not np.all(np.isfinite(cos)):
            raise RerankError(f"embedder {self.embedder.model_id!r} returned non-finite vectors")
        for i, value in zip(todo, cos):
            scores[i] = float(np.clip(value, -1.0, 1.0))
        return scores

    def _content_tokens(self, text: str) -> frozenset[str]:
        # Chunk texts recur across queries and jieba dominated the stage (~90% of its
        # time, bench/latency.py): remember each text's tokens, bounded.
        cached = self._tokens.get(text)
        if cached is None:
            tokens = (_norm(t) for t in self.tokenize(text))
            cached = frozenset(t for t in tokens if t and t not in STOPWORDS and _CONTENT_CHAR.search(t))
            if len(self._tokens) >= TOKEN_CACHE_SIZE:
                self._tokens.clear()
            self._tokens[text] = cached
        return cached


def _norm(text: str) -> str:
    """NFKC (full-width → ASCII, e.g. ``ｘ＝２`` → ``x=2``), lower case, no outer spaces."""
    return unicodedata.normalize("NFKC", text).lower().strip()


def _squash(text: str) -> str:
    """Normalised text without any whitespace, for verbatim matching."""
    return "".join(_norm(text).split())


def _exact_terms(query: str, q_tokens: AbstractSet[str]) -> set[str]:
    """Multi-character content tokens plus formula spans of the query."""
    terms = {t for t in q_tokens if len(t) >= 2}
    for span in _FORMULA_SPAN.findall(_norm(query)):
        span = span.strip(".")
        if len(span) >= 2 and _FORMULA_MARK.search(span):
            terms.add(span)
    return terms


def _exact_share(terms: AbstractSet[str], text: str, c_tokens: AbstractSet[str]) -> float:
    if not terms:
        return 0.0
    squashed = _squash(text)
    found = 0
    for term in terms:
        if _HAS_CJK.search(term) or _FORMULA_MARK.search(term):
            found += _squash(term) in squashed
        else:
            found += term in c_tokens
    return found / len(terms)
