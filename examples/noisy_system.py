"""A retriever with seeded run-to-run noise, for ``--rag-pipeline examples.noisy_system:make_pipeline``.

The demo pipeline is deterministic: the same commit gives the same numbers, so a gate
never meets the noise a real system has (an LLM reranker, a vector service whose
approximate index changes, a generator at temperature > 0). This example adds that noise
on purpose, seeded, over a plain BM25 retriever (Okapi BM25, k1 = 1.5, b = 0.75) written
here in numpy so it runs without the ``[demo]`` extra:

- ``rank_noise = q`` (0 … 1): in a fraction q of the questions the top hit trades places
  with another of its top ``noise_depth`` (10) hits, picked uniformly; which questions and
  which partner come from ``sha256(rank_noise_seed, question)``, so a question's ranking
  does not depend on the order or the process it is asked in, and the same seed gives the
  same rankings every time. q = 0 is the base retriever, exactly.
- ``drop_rate = d`` (0 … 1): a *real* regression, independent of the seed: in the
  questions whose ``sha256("drop", question)`` falls in the lowest fraction d, the top
  ``noise_depth`` hits are pushed below the rest (the retriever misses them). d = 0 is
  no change. bench/gate_noise.py chooses d so that doc recall@5 drops 5 points.

Documents are cut into passages (a ``.md`` file at blank lines, up to ``passage_chars``
characters; a ``corpus.jsonl`` row per ``doc_id``, cut the same way when longer), and a
passage carries its ``doc_id`` so doc-level metrics work; with ``gold = "text"`` quoted
evidence is matched by text. Tokens: lower-cased Latin words and digits, and each CJK
character with each pair of neighbouring CJK characters (Chinese has no spaces).

    pytest eval_tests -m retrieval --rag-pipeline-config examples/noisy_system.toml \\
        --rag-results reports/noisy-seed1.json
    # another seed: [options] rank_noise_seed = 2 in a copy of the file
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

K1 = 1.5
B = 0.75
DEFAULT_TOP_K = 5
# Latin runs stop at a CJK character: in "含n个元素" n is one term, 个元素 its characters and pairs.
# (rag_eval.util.text.terms lets a Latin run swallow the CJK characters after it, "n个元素…".)
_TOKEN = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]+")
_CJK = re.compile(r"[\u3400-\u9fff]")


def tokenize(text: str) -> list[str]:
    """Latin words and digits as they are; a CJK run as its characters and its bigrams."""
    out: list[str] = []
    for run in _TOKEN.findall(text.lower()):
        if _CJK.match(run):
            out += list(run) + [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            out.append(run)
    return out


@dataclass(frozen=True)
class Passage:
    id: str
    doc_id: str
    text: str


def _cut(doc_id: str, text: str, limit: int) -> list[Passage]:
    """Blank-line paragraphs merged up to ``limit`` characters (a longer paragraph stays whole)."""
    parts = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    chunks: list[str] = []
    for p in parts:
        if chunks and len(chunks[-1]) + len(p) + 2 <= limit:
            chunks[-1] += "\n\n" + p
        else:
            chunks.append(p)
    return [Passage(f"{doc_id}#p{i}", doc_id, c) for i, c in enumerate(chunks)]


def read_passages(corpus: Path, limit: int) -> list[Passage]:
    """Passages of a folder of ``.md`` files (doc_id = file stem) or of a ``corpus.jsonl``."""
    if corpus.is_dir():
        files = sorted(corpus.glob("*.md"))
        if not files:
            raise ValueError(f"{corpus}: no .md files; set [options] corpus to a folder of .md files or a corpus.jsonl")
        return [p for f in files for p in _cut(f.stem, f.read_text(encoding="utf-8"), limit)]
    out: list[Passage] = []
    with corpus.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                row = json.loads(line)
                if "doc_id" not in row or "text" not in row:
                    raise ValueError(f"{corpus}:{n}: a corpus row needs 'doc_id' and 'text'")
                out.extend(_cut(str(row["doc_id"]), str(row["text"]), limit))
    return out


class BM25:
    """Okapi BM25 over passages: postings per term, scores accumulated in one numpy array."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        docs = [tokenize(p.text) for p in self.passages]
        lengths = np.array([len(d) for d in docs], dtype=float)
        norm = K1 * (1.0 - B + B * lengths / max(float(lengths.mean()), 1.0))
        counts: dict[str, dict[int, int]] = {}
        for i, toks in enumerate(docs):
            for t in toks:
                row = counts.setdefault(t, {})
                row[i] = row.get(i, 0) + 1
        n = len(docs)
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for t, row in counts.items():
            idx = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            tf = np.fromiter(row.values(), dtype=float, count=len(row))
            idf = math.log(1.0 + (n - len(row) + 0.5) / (len(row) + 0.5))
            self.postings[t] = (idx, idf * tf * (K1 + 1.0) / (tf + norm[idx]))

    def ranking(self, question: str, depth: int) -> list[tuple[int, float]]:
        """The ``depth`` best passages (index, score) with a positive score; ties by passage order."""
        scores = np.zeros(len(self.passages))
        for t in tokenize(question):
            hit = self.postings.get(t)
            if hit is not None:
                scores[hit[0]] += hit[1]
        order = np.lexsort((np.arange(scores.size), -scores))[:depth]
        return [(int(i), float(scores[i])) for i in order if scores[i] > 0]


def hash_fraction(*parts: object) -> float:
    """A number in [0, 1) from sha256 of the parts: the same parts, the same number, everywhere."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def perturb(ranked: Sequence[Any], question: str, rank_noise: float, seed: int, depth: int = 10) -> list[Any]:
    """``ranked`` with, in a fraction ``rank_noise`` of questions, the top hit swapped with
    one of positions 2 … ``depth``, both chosen from sha256(seed, question)."""
    out = list(ranked)
    if rank_noise <= 0 or len(out) < 2 or hash_fraction("noise", seed, question) >= rank_noise:
        return out
    j = 1 + int(hash_fraction("partner", seed, question) * (min(depth, len(out)) - 1))
    out[0], out[j] = out[j], out[0]
    return out


def degrade(ranked: Sequence[Any], question: str, drop_rate: float, depth: int = 10) -> list[Any]:
    """``ranked`` with its top ``depth`` moved below the rest, in the fraction ``drop_rate``
    of questions chosen by sha256("drop", question) (no seed: a change of the system)."""
    out = list(ranked)
    if drop_rate <= 0 or hash_fraction("drop", question) >= drop_rate:
        return out
    return out[depth:] + out[:depth]


def check_rate(name: str, value: object) -> float:
    """A rate option in [0, 1], or a ValueError naming the option and the fix."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"[options] {name} = {value!r}: must be a number from 0 to 1 (e.g. {name} = 0.15)")
    return float(value)


class NoisySystem:
    """BM25 ranking → ``degrade`` (drop_rate) → ``perturb`` (rank_noise, seed) → the top_k passages."""

    def __init__(
        self, index: BM25, rank_noise: float = 0.0, seed: int = 0, drop_rate: float = 0.0, depth: int = 10
    ) -> None:
        self.index = index
        self.rank_noise = check_rate("rank_noise", rank_noise)
        self.drop_rate = check_rate("drop_rate", drop_rate)
        self.seed = int(seed)
        self.depth = int(depth)

    def ranked(self, question: str, top_k: int | None = None) -> list[tuple[int, float]]:
        """(passage index, BM25 score) in the order ``retrieve`` returns them."""
        k = top_k or DEFAULT_TOP_K
        base = self.index.ranking(question, self.depth + max(k, self.depth))
        noisy = perturb(
            degrade(base, question, self.drop_rate, self.depth), question, self.rank_noise, self.seed, self.depth
        )
        return noisy[:k]

    def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        items = []
        for i, score in self.ranked(question, top_k):
            p = self.index.passages[i]
            items.append({"id": p.id, "text": p.text, "score": score, "metadata": {"doc_id": p.doc_id}})
        return {"items": items}

    def describe(self) -> dict[str, Any]:
        return {
            "retriever": "bm25-noisy",
            "rank_noise": self.rank_noise,
            "rank_noise_seed": self.seed,
            "drop_rate": self.drop_rate,
            "n_passages": len(self.index.passages),
        }


# The BM25 index of each (corpus, passage_chars), built once per process: every seed of a
# benchmark shares it (bench/gate_noise.py puts a ranking-caching subclass here).
INDEXES: dict[tuple[str, int], BM25] = {}


def index_key(corpus: Path, passage_chars: int) -> tuple[str, int]:
    return (str(corpus.resolve()), passage_chars)


def make_pipeline(options: Mapping[str, Any]) -> NoisySystem:
    """Called once per process with the [options] table: corpus, passage_chars, rank_noise,
    rank_noise_seed, drop_rate. The BM25 index is built once per corpus and process."""
    known = {"corpus", "passage_chars", "rank_noise", "rank_noise_seed", "drop_rate"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"[options] {', '.join(unknown)}: unknown; the options are {', '.join(sorted(known))}")
    corpus = Path(str(options.get("corpus", "golden_sets/demo_maths/corpus")))
    key = index_key(corpus, int(options.get("passage_chars", 400)))
    if key not in INDEXES:
        INDEXES[key] = BM25(read_passages(corpus, key[1]))
    return NoisySystem(
        INDEXES[key],
        options.get("rank_noise", 0.0),
        int(options.get("rank_noise_seed", 0)),
        options.get("drop_rate", 0.0),
    )
