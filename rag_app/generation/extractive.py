"""The offline default generator: the answer is the context's best-matching sentences.

No LLM, no key, no network, same answer every time -- so ``make eval`` runs anywhere and
the retrieval half of the system can be gated on its own. It is a *baseline*: it
cannot paraphrase, but every sentence it outputs is verbatim from the context and
carries the right ``[n]``, which makes it a useful reference point for faithfulness and
citation checks.

How it works: split each distinct context chunk into sentences (never inside ``$...$``
maths), score each sentence by the IDF-weighted overlap of its tokens with the
question's tokens (IDF over the context's sentences, so tokens that occur everywhere
count for little), keep the best 2-3, put them back in context order and append
`` [n]``. Nothing in common with the question at all -> the refusal sentence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_app.generation.sources import REFUSAL_TEXT, mask_math, numbered_chunks
from rag_app.types import Chunk, Usage

Tokenizer = Callable[[str], list[str]]

# Tokens that carry no topic, removed from whatever the tokenizer returns. Without this,
# "what is the ..." or "……是什么" overlaps with nearly every sentence and the baseline
# would never refuse. Chinese question words are listed both as words (jieba-style
# tokenizers) and as the bigrams the default tokenizer makes of them.
_STOPWORDS: frozenset[str] = frozenset(
    "a an the is are was were be been of to in on at for and or not with by as it its this that these those "
    "what which who whom whose how why when where do does did can could should would will shall may might "
    "used use using i you we they he she me my your our their there here about from into than then so if "
    "的 地 得 是 了 在 和 与 及 或 吗 呢 吧 啊 呀 时 这 那 这个 那个 也 就 都 而 有 请 "
    "什么 怎么 怎样 如何 哪些 哪个 为什么 为何 请问 我们 你们 一下 意思 理解 "
    "么是 是什 么理 为什 么意 思是".split()
)
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUN = re.compile(rf"[{_CJK}]+|[a-z0-9]+")


def bigram_tokenize(text: str) -> list[str]:
    """Default tokenizer: Chinese runs -> character bigrams, Latin/digits -> lower-cased words.

    Bigrams need no dictionary yet match Chinese words well enough for overlap scoring;
    a one-character run stays a unigram so "角" can still match "角". Stopwords are not
    removed here but by the generator, the same way for any tokenizer passed in.
    """
    out: list[str] = []
    for run in _RUN.findall(text.lower()):
        if "\u3400" <= run[0]:
            grams = [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            grams = [run]
        out.extend(grams)
    return out


# --- sentence splitting ------------------------------------------------------------------
_TERMINATORS = "。！？!?；;…"
_CLOSERS = "”’\"'）)】」』"
_HEADING = re.compile(r"^\s*#{1,6}\s")
_BULLET = re.compile(r"^\s*(?:[-*+>]\s+)+")
_LIST_NUMBER = re.compile(r"^\s*\d+$")


def split_sentences(text: str) -> list[str]:
    """Sentences of one chunk, in order; a ``$...$`` formula is never cut.

    Boundaries: Chinese/Western end punctuation (plus trailing closing quotes), a
    full stop followed by white space (so 3.14 and "1." list numbers survive), and line
    breaks. Markdown headings are dropped: they match questions well but answer nothing.
    """
    masked = mask_math(text, fill="_")  # same length, so offsets map back to ``text``
    pieces: list[str] = []
    start = 0
    i, n = 0, len(masked)
    while i < n:
        ch = masked[i]
        end: int | None = None
        if ch == "\n":
            end = i
        elif ch in _TERMINATORS:
            end = i + 1
        elif ch == "." and (i + 1 == n or masked[i + 1].isspace()):
            line_start = masked.rfind("\n", 0, i) + 1
            if not _LIST_NUMBER.match(masked[line_start:i]):  # "1. " starts a list item
                end = i + 1
        if end is None:
            i += 1
            continue
        while end < n and masked[end] in _CLOSERS:
            end += 1
        pieces.append(text[start:end])
        start = i = max(end, i + 1)
    pieces.append(text[start:])
    out: list[str] = []
    for piece in pieces:
        if _HEADING.match(piece):
            continue
        sentence = _BULLET.sub("", piece).strip()
        if sentence:
            out.append(sentence)
    return out


@dataclass(frozen=True)
class _Candidate:
    n: int  # citation number of the chunk
    chunk_pos: int
    sent_pos: int
    text: str
    score: float


class ExtractiveGenerator:
    """Composes the answer from 2-3 context sentences with correct ``[n]`` markers.

    ``max_sentences`` caps the answer; sentences after the first ``min_sentences`` are
    kept only if they score at least ``min_relative_score`` of the best one, so a third
    sentence that merely shares one common word does not dilute the answer.
    """

    def __init__(
        self,
        tokenize: Tokenizer | None = None,
        *,
        max_sentences: int = 3,
        min_sentences: int = 2,
        min_relative_score: float = 0.3,
    ) -> None:
        if max_sentences < 1 or min_sentences < 1:
            raise ValueError(f"max_sentences ({max_sentences}) and min_sentences ({min_sentences}) must be >= 1")
        self._raw_tokenize: Tokenizer = tokenize or bigram_tokenize
        self.max_sentences = max_sentences
        self.min_sentences = min(min_sentences, max_sentences)
        self.min_relative_score = min_relative_score

    def _tokenize(self, text: str) -> set[str]:
        return {t for t in self._raw_tokenize(text) if t.lower() not in _STOPWORDS}

    @property
    def name(self) -> str:
        return "extractive-baseline"

    @property
    def deterministic(self) -> bool:
        return True

    def generate(
        self, question: str, context: Sequence[Chunk], history: Sequence[dict[str, str]] = ()
    ) -> tuple[str, Usage]:
        """``history`` is ignored: extraction answers the current question only."""
        chosen = self.select(question, context)
        if not chosen:
            return REFUSAL_TEXT, Usage()
        return " ".join(f"{c.text} [{c.n}]" for c in chosen), Usage()

    def select(self, question: str, context: Sequence[Chunk]) -> list[_Candidate]:
        """The chosen sentences in context order (empty when nothing overlaps)."""
        q_tokens = self._tokenize(question)
        if not q_tokens:
            return []
        sentences: list[tuple[int, int, int, str, set[str]]] = []
        for pos, (n, chunk) in enumerate(numbered_chunks(context)):
            for s_pos, sentence in enumerate(split_sentences(chunk.text)):
                sentences.append((n, pos, s_pos, sentence, self._tokenize(sentence)))
        if not sentences:
            return []
        df: dict[str, int] = {}
        for *_, toks in sentences:
            for t in toks & q_tokens:
                df[t] = df.get(t, 0) + 1
        total = len(sentences)
        idf = {t: math.log(1.0 + total / d) for t, d in df.items()}
        scored = [
            _Candidate(n, pos, s_pos, text, sum(idf[t] for t in sorted(toks & q_tokens)))
            for n, pos, s_pos, text, toks in sentences
        ]
        ranked = sorted((c for c in scored if c.score > 0), key=lambda c: (-c.score, c.chunk_pos, c.sent_pos))
        chosen: list[_Candidate] = []
        seen_text: set[str] = set()
        for cand in ranked:
            if len(chosen) == self.max_sentences:
                break
            key = re.sub(r"\s+", "", cand.text)
            if key in seen_text:  # overlapping child chunks repeat sentences; cite the first
                continue
            if len(chosen) >= self.min_sentences and cand.score < self.min_relative_score * ranked[0].score:
                break
            seen_text.add(key)
            chosen.append(cand)
        return sorted(chosen, key=lambda c: (c.chunk_pos, c.sent_pos))
