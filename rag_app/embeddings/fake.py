"""A hashing embedder FOR UNIT TESTS ONLY: no model, no semantics, but similar texts
get similar vectors, so retrieval tests can assert rankings without loading a model.

Each text becomes a bag of features -- lower-cased word tokens, single characters and
character bigrams -- and each feature adds +1 or -1 to one of 64 buckets chosen by a
stable hash (blake2b, not Python's salted ``hash``, so every process and every run
agrees). Texts sharing many characters share many buckets, which gives a high cosine;
unrelated texts land near 0. Query and passage modes are the same.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from rag_app.interfaces import Vectors

FAMILY = "fake"
DIM = 64
MODEL_ID = "fake-hash-64"
_WORD = re.compile(r"[0-9a-z]+")
_EMPTY_FEATURE = "\x00empty"  # so "" still gets a unit vector, as the protocol promises


def features(text: str) -> list[str]:
    """Word tokens, non-space characters and adjacent-character bigrams of ``text``."""
    lowered = text.lower()
    chars = "".join(lowered.split())
    feats = ["w:" + w for w in _WORD.findall(lowered)]
    feats += ["c:" + c for c in chars]
    feats += ["b:" + chars[i : i + 2] for i in range(len(chars) - 1)]
    return feats or [_EMPTY_FEATURE]


def _bucket(feature: str) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % DIM, (1.0 if (value >> 32) & 1 else -1.0)


class FakeEmbedder:
    """Deterministic 64-d hashed-feature vectors. For unit tests only."""

    family = FAMILY

    def __init__(self) -> None:
        self.calls = 0  # number of embed calls, so tests can check what was computed
        self.texts_embedded = 0

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    def embed_passages(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out

    def embed_query(self, text: str) -> Vectors:
        return self.embed_passages([text])[0]

    @staticmethod
    def _vector(text: str) -> Vectors:
        acc = np.zeros(DIM, dtype=np.float64)
        for feature in features(text):
            index, sign = _bucket(feature)
            acc[index] += sign
        norm = float(np.linalg.norm(acc))
        if norm == 0.0:  # features cancelled out exactly: fall back to the empty-text vector
            index, sign = _bucket(_EMPTY_FEATURE)
            acc[index] = sign
            norm = 1.0
        return (acc / norm).astype(np.float32)

    def __repr__(self) -> str:
        return "FakeEmbedder()"
