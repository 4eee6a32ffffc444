"""Is the retrieved evidence enough to answer? One measured decision, from signals the
pipeline already has.

Signals (all from one ``retrieve()`` result and the index's BM25 statistics; no model call):

* ``coverage`` -- the idf-weighted share of the question's key terms that occur in the
  best context chunks (the first ``coverage_chunks`` of the final context, together).
  Key terms are the question's tokens (``rag_app.text``: jieba words, English words,
  LaTeX names) minus question and function words; a Chinese term also counts when it
  occurs verbatim in the chunk text (jieba may cut the same word differently in a
  question and in a textbook sentence). A term the corpus never contains weighs the
  most: that is what an out-of-material question ("椭圆的离心率") looks like.
* ``similarity`` -- the best vector cosine, and its margin over the similarity
  threshold (absent when no vector hit passed the threshold).
* ``unseen`` -- the idf-weighted share of key terms the corpus never contains (recorded).
* ``agreement`` -- the share of the vector stage's top ``agreement_k`` chunks that BM25
  also ranks in its top ``agreement_k``: two independent retrievers pointing at the
  same chunks.
* ``rerank_top`` / ``rerank_margin`` -- the reranker's best score and its lead over the
  second (absent for the pass-through reranker, whose "scores" are ranks).

The decision (``decide``) is one weight and a minimum score per question language:

    score = coverage + similarity_weight * (top_similarity - similarity_threshold)
    sufficient  <=>  score >= min_score[language]

``language`` is ``zh`` when the question has a Chinese word, else ``en``. No vector hit
above the threshold is never sufficient. When coverage cannot be measured (no key term,
or the question is in a script the corpus hardly uses: an English question on Chinese
notes) the similarity threshold alone decides, as it did before this check existed.
Agreement and the reranker's scores are recorded but not used: added to the score with
a weight calibrated the same way, none improved the held-back questions
(``bench/sufficiency.py``, BENCHMARKS.md "Evidence sufficiency").
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from rag_app.index.bm25 import BM25Index
from rag_app.retrieval.rerank_local import STOPWORDS as RERANK_STOPWORDS
from rag_app.settings import Settings
from rag_app.types import Chunk, RetrievalResult, Sufficiency

Tokenizer = Callable[[str], list[str]]

# Words that ask rather than say what is asked about; they are not key terms. The
# reranker's list covers particles and English function words; these add the question
# forms students type ("怎么求", "是多少", "which year").
QUESTION_WORDS: frozenset[str] = frozenset(
    "怎么 怎样 如何 什么 为什么 哪 哪些 哪个 哪里 哪一年 多少 几 是否 能否 请问 请 求 用 算 写 讲 "
    "一下 意思 理解 是不是 有没有 可以 公式 方法 步骤 问题 知道 告诉 解释 说明 "
    "when where who whom whose which what why how much many does did do is are was were name "
    "called type kind s".split()
)
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CONTENT = re.compile(f"[0-9a-z{_CJK}\u0370-\u03ff]")
_HAS_CJK = re.compile(f"[{_CJK}]")
CROSS_SCRIPT_SHARE = 0.2  # a script under 20 % of the corpus's words is "not the corpus's"
_WORD = re.compile(f"[a-z{_CJK}]{{2}}")  # a word, not a number, variable or symbol


@dataclass(frozen=True)
class SufficiencySignals:
    """The measured inputs of the decision; ``None`` means the signal does not exist here."""

    coverage: float | None  # None: the question has no key terms
    unseen: float | None  # idf-weighted share of key terms found nowhere in the corpus
    top_similarity: float | None  # None: no vector hit passed the threshold
    similarity_threshold: float
    agreement: float | None  # None: one of the two lists is empty
    rerank_top: float | None
    rerank_margin: float | None
    key_terms: tuple[str, ...]
    missing_terms: tuple[str, ...]  # key terms the best chunks do not contain, heaviest first

    @property
    def similarity_margin(self) -> float | None:
        return None if self.top_similarity is None else self.top_similarity - self.similarity_threshold

    @property
    def language(self) -> str:
        """``zh`` when the question has a Chinese key term, else ``en``."""
        return "zh" if any(_HAS_CJK.search(t) for t in self.key_terms) else "en"


@dataclass(frozen=True)
class SufficiencyPolicy:
    """The decision's numbers (settings ``sufficiency_*``); see the module docstring."""

    similarity_weight: float
    min_score_zh: float
    min_score_en: float

    @classmethod
    def from_settings(cls, settings: Settings) -> SufficiencyPolicy:
        return cls(
            settings.sufficiency_similarity_weight, settings.sufficiency_min_score_zh, settings.sufficiency_min_score_en
        )

    def min_score(self, language: str) -> float:
        return self.min_score_zh if language == "zh" else self.min_score_en

    def score(self, signals: SufficiencySignals) -> float | None:
        """coverage + weight * similarity margin; None when either is missing."""
        margin = signals.similarity_margin
        if signals.coverage is None or margin is None:
            return None
        return signals.coverage + self.similarity_weight * margin


def decide(signals: SufficiencySignals, policy: SufficiencyPolicy) -> Sufficiency:
    """The one decision, with its reason and every signal value, as a record."""
    language = signals.language
    min_score = policy.min_score(language)
    score = policy.score(signals)
    top, threshold = signals.top_similarity, signals.similarity_threshold
    if top is None:
        sufficient, reason = False, "no_vector_hit"
        message = f"no vector hit reached the similarity threshold {threshold:.2f}"
    elif score is None:
        sufficient, reason = True, "similarity_only"
        why = "the question has no key term" if not signals.key_terms else "the question is not in the corpus's script"
        message = f"{why}, so coverage is not measured; top similarity {top:.3f} >= threshold {threshold:.2f}"
    else:
        sufficient = score >= min_score
        reason = "sufficient" if sufficient else "low_score"
        missing = f" (missing: {', '.join(signals.missing_terms[:5])})" if signals.missing_terms else ""
        message = (
            f"coverage {signals.coverage:.2f}{missing} + {policy.similarity_weight:g} x similarity margin "
            f"{top - threshold:.3f} = {score:.2f} {'>=' if sufficient else '<'} {min_score:.2f} ({language})"
        )
    return Sufficiency(
        sufficient=sufficient,
        reason=reason,
        message=message,
        language=language,
        score=score,
        min_score=min_score if score is not None else None,
        coverage=signals.coverage,
        top_similarity=top,
        similarity_threshold=threshold,
        agreement=signals.agreement,
        rerank_top=signals.rerank_top,
        rerank_margin=signals.rerank_margin,
        unseen=signals.unseen,
        key_terms=signals.key_terms,
        missing_terms=signals.missing_terms,
    )


class TermWeights:
    """idf of a token over the index's child chunks: ln((N + 1) / (df + 0.5)).

    Positive for every token a question can contain; a token the corpus never contains
    gets the largest weight, ln(2(N + 1)).
    """

    def __init__(self, df: Mapping[str, int], n_docs: int) -> None:
        self._df = df
        self._n = n_docs
        # Share of the corpus's distinct words that are Chinese: tells a question asked in
        # another script (an English question on Chinese notes). Distinct words, because
        # LaTeX names (frac, sqrt) are few but occur in every chunk of maths notes.
        words = [t for t in df if _WORD.search(t)]
        self.cjk_share = sum(1 for t in words if _HAS_CJK.search(t)) / len(words) if words else 0.0

    @classmethod
    def from_bm25(cls, bm25: BM25Index) -> TermWeights:
        """Document frequencies from the BM25 index (same tokenizer, same child texts)."""
        counts = np.diff(bm25.indptr)
        return cls({t: int(counts[i]) for t, i in bm25.vocab.items()}, len(bm25))

    def df(self, token: str) -> int:
        return self._df.get(token, 0)

    def __call__(self, token: str) -> float:
        return math.log((self._n + 1) / (self.df(token) + 0.5))


def key_terms(question: str, tokenize: Tokenizer) -> list[str]:
    """The question's distinct content tokens, in order of first occurrence."""
    out: list[str] = []
    for raw in tokenize(question):
        t = unicodedata.normalize("NFKC", raw).lower().strip()
        if not t or t in out or t in RERANK_STOPWORDS or t in QUESTION_WORDS or not _CONTENT.search(t):
            continue
        out.append(t)
    return out


def measure(
    question: str,
    retrieved: RetrievalResult,
    *,
    tokenize: Tokenizer,
    weights: TermWeights,
    similarity_threshold: float,
    text_of: Callable[[Chunk], str] = lambda c: c.text,
    coverage_chunks: int = 3,
    agreement_k: int = 5,
    rerank_scores: bool = True,
) -> SufficiencySignals:
    """Every signal for one retrieval; pure arithmetic on what ``retrieve()`` returned."""
    terms = key_terms(question, tokenize)
    best = retrieved.context[:coverage_chunks]
    tokens: set[str] = set()
    squashed = ""
    for chunk in best:
        text = text_of(chunk)
        tokens.update(_stem(t) for t in tokenize(text))
        squashed += "\n" + "".join(unicodedata.normalize("NFKC", text).lower().split())
    w = {t: weights(t) for t in terms}
    total = math.fsum(w.values())
    found = [t for t in terms if _stem(t) in tokens or (_HAS_CJK.search(t) is not None and t in squashed)]
    missing = sorted((t for t in terms if t not in found), key=lambda t: (-w[t], terms.index(t)))
    comparable = not _cross_script(terms, weights.cjk_share)
    coverage = math.fsum(w[t] for t in found) / total if total > 0 and comparable else None
    unseen = math.fsum(w[t] for t in terms if weights.df(t) == 0) / total if total > 0 else None

    trace = retrieved.trace
    vector = trace.stage("vector")
    bm25 = trace.stage("bm25")
    reranked = trace.stage("reranked")
    top_similarity = max((h.score for h in vector.hits), default=None) if vector else None
    agreement: float | None = None
    if vector and bm25 and vector.hits and bm25.hits:
        v_top = set(vector.ids[:agreement_k])
        agreement = len(v_top & set(bm25.ids[:agreement_k])) / len(v_top)
    rerank_top = rerank_margin = None
    if rerank_scores and reranked and reranked.hits:
        rerank_top = reranked.hits[0].score
        if len(reranked.hits) > 1:
            rerank_margin = reranked.hits[0].score - reranked.hits[1].score
    return SufficiencySignals(
        coverage=coverage,
        unseen=unseen,
        top_similarity=top_similarity,
        similarity_threshold=similarity_threshold,
        agreement=agreement,
        rerank_top=rerank_top,
        rerank_margin=rerank_margin,
        key_terms=tuple(terms),
        missing_terms=tuple(missing),
    )


def _stem(token: str) -> str:
    """Plural and verb endings off an English word (``measurements`` -> ``measurement``,
    ``defined`` -> ``defin``), applied to both sides of a comparison; others unchanged."""
    if len(token) <= 4 or not token.isascii() or not token.isalpha():
        return token
    for suffix in ("ies", "es", "s", "ed", "ing", "ly"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


def _cross_script(terms: list[str], corpus_cjk_share: float) -> bool:
    """The question's words are in a script the corpus hardly uses (an English question on
    Chinese notes): lexical coverage says nothing there, only the embedding can match."""
    words = [t for t in terms if _WORD.search(t)]
    if not words:
        return False
    if any(_HAS_CJK.search(t) for t in words):
        return corpus_cjk_share < CROSS_SCRIPT_SHARE
    return corpus_cjk_share > 1 - CROSS_SCRIPT_SHARE
