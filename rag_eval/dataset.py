"""A dataset folder: a corpus (Markdown books or corpus.jsonl) plus a golden set.

    golden_sets/demo_maths/          golden_sets/gaokao_math/
      corpus/*.md                      corpus.jsonl
      golden.jsonl                     qa.jsonl
                                       manifest.json   (optional: corpus_sha256 of the file)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rag_app.corpus import corpus_hash, load_corpus
from rag_app.types import Document
from rag_eval.golden.load import GoldenSetError, load_golden_set
from rag_eval.golden.model import GoldenItem

GOLDEN_NAMES: tuple[str, ...] = ("golden.jsonl", "qa.jsonl")


@dataclass(frozen=True)
class DatasetPaths:
    root: Path
    corpus: Path
    golden: Path


def find_paths(dataset: str | Path, golden: str | Path | None = None) -> DatasetPaths:
    root = Path(dataset)
    if not root.is_dir():
        raise GoldenSetError(f"--dataset {root}: not a folder (it should hold a corpus and a golden set)")
    if (root / "corpus").is_dir():
        corpus = root / "corpus"
    elif (root / "corpus.jsonl").is_file():
        corpus = root / "corpus.jsonl"
    elif any(root.glob("*.md")):
        corpus = root
    else:
        raise GoldenSetError(f"--dataset {root}: no corpus found (expected corpus/, corpus.jsonl or *.md files)")
    if golden is not None:
        golden_path = Path(golden)
    else:
        found = [root / n for n in GOLDEN_NAMES if (root / n).is_file()]
        if not found:
            raise GoldenSetError(
                f"--dataset {root}: no golden set found (expected {' or '.join(GOLDEN_NAMES)}; or pass --golden-set)"
            )
        golden_path = found[0]
    return DatasetPaths(root, corpus, golden_path)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def golden_items(paths: DatasetPaths) -> list[GoldenItem]:
    return load_golden_set(paths.golden)


@dataclass(frozen=True)
class Dataset:
    paths: DatasetPaths
    documents: tuple[Document, ...]
    items: tuple[GoldenItem, ...]
    corpus_hash: str
    golden_sha256: str

    @property
    def fingerprint(self) -> str:
        """Identifies what was measured: the corpus contents and the golden file."""
        return hashlib.sha256(f"{self.corpus_hash}|{self.golden_sha256}".encode()).hexdigest()[:16]


def load_dataset(paths: DatasetPaths) -> Dataset:
    items = golden_items(paths)
    docs = load_corpus(paths.corpus)
    chash = corpus_hash(docs)
    check_corpus_hash(items, chash, paths)
    return Dataset(paths, tuple(docs), tuple(items), chash, file_sha256(paths.golden))


def check_corpus_hash(items: Sequence[GoldenItem], chash: str, paths: DatasetPaths) -> None:
    """Refuse a golden set written against different document contents, naming both hashes."""
    for item in items:
        if item.corpus_sha256 and item.corpus_sha256 != chash:
            raise GoldenSetError(
                f"{item.source}: golden item {item.id!r} was written against corpus {item.corpus_sha256[:16]}…, "
                f"but {paths.corpus} has content hash {chash[:16]}…; re-check the gold against the new documents "
                "and update corpus.sha256 (python -m rag_eval validate --rehash prints it)"
            )
    manifest = paths.root / "manifest.json"
    if manifest.is_file() and paths.corpus.is_file():
        expected = json.loads(manifest.read_text(encoding="utf-8")).get("corpus_sha256")
        actual = file_sha256(paths.corpus)
        if expected and expected != actual:
            raise GoldenSetError(
                f"{manifest}: corpus_sha256 {expected[:16]}… does not match {paths.corpus} ({actual[:16]}…); "
                "the golden set was written against different documents"
            )
