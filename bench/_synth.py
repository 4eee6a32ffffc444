"""Synthetic but real-looking corpora and queries for the scale benchmarks.

Why not random tokens: BM25 cost depends on the shape of the vocabulary (how many
documents the common query terms hit) and the tokenizer's cost on the script mix
(jieba for Chinese, the LaTeX scanner for maths). So the synthetic documents are built
from *real sentences* of the shared datasets -- gaokao maths solutions (Chinese +
LaTeX), cmrc2018 (Chinese Wikipedia) and SQuAD (English Wikipedia) -- recombined with a
seeded RNG: every document is a new random sequence of real sentences (that is the
perturbation that keeps 100k documents distinct while the vocabulary stays real), and
the queries are real questions from the same datasets' ``qa.jsonl``.

Everything is deterministic for a given seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from _common import DATASETS, read_jsonl

# Share of documents drawn from each source (SQuAD 1.1 and 2.0 share one pool).
SOURCE_WEIGHTS: dict[str, float] = {"gaokao": 0.4, "cmrc": 0.3, "squad": 0.3}
_SOURCE_DIRS: dict[str, tuple[str, ...]] = {
    "gaokao": ("gaokao_math_public",),
    "cmrc": ("cmrc2018_public",),
    "squad": ("squad11_public", "squad20_public"),
}
# Split after Chinese/English sentence ends and at line breaks; LaTeX periods inside $...$
# are rare enough at sentence scale not to matter for a benchmark.
_SENTENCE_END = re.compile(r"(?<=[。！？；!?])|(?<=\.)\s+|\n+")
MIN_SENTENCE, MAX_SENTENCE = 8, 240


@dataclass(frozen=True)
class SentencePool:
    """Real sentences per source, plus one title per sentence (the document it came from)."""

    sentences: dict[str, list[str]]
    titles: dict[str, list[str]]

    def sizes(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.sentences.items()}


def load_pool(datasets: Path = DATASETS) -> SentencePool:
    sentences: dict[str, list[str]] = {}
    titles: dict[str, list[str]] = {}
    for source, dirs in _SOURCE_DIRS.items():
        sents: list[str] = []
        tits: list[str] = []
        seen: set[str] = set()
        for d in dirs:
            for doc in read_jsonl(datasets / d / "corpus.jsonl"):
                for s in _SENTENCE_END.split(doc["text"]):
                    s = s.strip()
                    if MIN_SENTENCE <= len(s) <= MAX_SENTENCE and s not in seen:
                        seen.add(s)
                        sents.append(s)
                        tits.append(str(doc.get("title") or doc["doc_id"]))
        if not sents:
            raise FileNotFoundError(f"no sentences found for source {source!r} under {datasets}; check {dirs}")
        sentences[source], titles[source] = sents, tits
    return SentencePool(sentences, titles)


def _pick_source(rng: random.Random) -> str:
    return rng.choices(list(SOURCE_WEIGHTS), weights=list(SOURCE_WEIGHTS.values()))[0]


def _joiner(source: str) -> str:
    return " " if source == "squad" else ""


def synthetic_text(pool: SentencePool, rng: random.Random, min_chars: int, max_chars: int) -> tuple[str, str, str]:
    """(source, title, text): real sentences of one source, in random order, ``min..max`` chars."""
    source = _pick_source(rng)
    sents, titles = pool.sentences[source], pool.titles[source]
    target = rng.randint(min_chars, max_chars)
    first = rng.randrange(len(sents))
    parts = [sents[first]]
    length = len(parts[0])
    while length < target:
        s = sents[rng.randrange(len(sents))]
        if length + len(s) > max_chars and length >= min_chars:
            break
        parts.append(s)
        length += len(s) + 1
    return source, titles[first], _joiner(source).join(parts)[: max_chars + MAX_SENTENCE]


def synthetic_docs(pool: SentencePool, n: int, seed: int, min_chars: int, max_chars: int) -> Iterator[dict[str, str]]:
    """``n`` corpus.jsonl-style documents ``{"doc_id", "title", "text"}``."""
    rng = random.Random(seed)
    for i in range(n):
        source, title, text = synthetic_text(pool, rng, min_chars, max_chars)
        yield {"doc_id": f"synth-{source}-{i:06d}", "title": f"{title} #{i}", "text": text}


def synthetic_token_docs(
    pool: SentencePool,
    n: int,
    seed: int,
    tokenize: Callable[[str], list[str]],
    min_chars: int = 120,
    max_chars: int = 320,
) -> tuple[list[str], list[list[str]], dict[str, float]]:
    """``n`` child-sized documents as (ids, token lists, stats), tokenizing each sentence once.

    A document's tokens are the concatenation of its sentences' tokens. That equals
    tokenizing the joined text except where jieba would cut across a sentence boundary,
    and it makes 100k documents cost seconds instead of minutes of jieba.
    """
    cache: dict[tuple[str, int], list[str]] = {}
    rng = random.Random(seed)
    ids: list[str] = []
    docs: list[list[str]] = []
    chars = 0
    for i in range(n):
        source = _pick_source(rng)
        sents = pool.sentences[source]
        target = rng.randint(min_chars, max_chars)
        tokens: list[str] = []
        length = 0
        while length < target:
            j = rng.randrange(len(sents))
            key = (source, j)
            if key not in cache:
                cache[key] = tokenize(sents[j])
            tokens.extend(cache[key])
            length += len(sents[j]) + 1
        ids.append(f"synth-{source}-{i:06d}")
        docs.append(tokens)
        chars += length
    n_tokens = sum(len(d) for d in docs)
    stats = {
        "docs": float(n),
        "tokens": float(n_tokens),
        "mean_tokens_per_doc": n_tokens / max(n, 1),
        "mean_chars_per_doc": chars / max(n, 1),
        "vocabulary": float(len({t for d in docs for t in d})),
        "sentences_tokenized": float(len(cache)),
    }
    return ids, docs, stats


def real_questions(n: int, seed: int, datasets: Path = DATASETS) -> list[tuple[str, str]]:
    """``n`` real (source, question) pairs, mixed like ``SOURCE_WEIGHTS``, seeded sample."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    weights = list(SOURCE_WEIGHTS.items())
    remaining = n
    for idx, (source, w) in enumerate(weights):
        k = remaining if idx == len(weights) - 1 else round(n * w)
        remaining -= k
        qs = [q["question"] for d in _SOURCE_DIRS[source] for q in read_jsonl(datasets / d / "qa.jsonl")]
        out += [(source, q) for q in rng.sample(qs, k)]
    rng.shuffle(out)  # so that any prefix (e.g. the few reference queries) mixes the sources
    return out
