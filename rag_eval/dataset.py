"""A dataset: a golden set, and optionally the local corpus it was written against.

A corpus is needed only where gold must be located in it (``gold = "corpus"``) or
checked against it; with ``gold = "ids"`` or ``"text"`` a golden set alone is a dataset.

    golden_sets/demo_maths/          golden_sets/gaokao_math/
      corpus/*.md                      corpus.jsonl
      golden.jsonl                     qa.jsonl
                                       manifest.json   (optional: corpus_sha256 of the file)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_eval.core.errors import RagEvalError
from rag_eval.core.records import Document
from rag_eval.corpus import corpus_hash, load_documents
from rag_eval.golden.load import GoldenSetError, load_golden_set
from rag_eval.golden.model import GoldenItem

GOLDEN_NAMES: tuple[str, ...] = ("golden.jsonl", "qa.jsonl")


@dataclass(frozen=True)
class DatasetPaths:
    root: Path
    corpus: Path | None
    golden: Path


ALLOW_OUTSIDE = "--rag-allow-outside-dataset"


def find_paths(
    dataset: str | Path | None,
    golden: str | Path | None = None,
    where: str = "--rag-dataset",
    allow_outside: bool = False,
) -> DatasetPaths:
    """The golden set and the corpus, if any, of a dataset folder (or a golden file alone).

    The dataset is its folder: a corpus file or a found golden file that resolves outside
    it (a symlink, ``..``) is refused naming both paths, unless ``allow_outside``
    (``--rag-allow-outside-dataset``): its text would reach the reports unasked."""
    paths = _find_paths(dataset, golden, where)
    if dataset is not None and not allow_outside:
        refuse_outside(paths, where, found_golden=golden is None)
    return paths


def refuse_outside(paths: DatasetPaths, where: str, found_golden: bool = True) -> None:
    """A GoldenSetError for the first corpus (or found golden) file outside ``paths.root``."""
    root = paths.root.resolve()
    files = [paths.golden] if found_golden else []
    if paths.corpus is not None:
        files.append(paths.corpus)
        if paths.corpus.is_dir():
            files += sorted(
                p
                for p in paths.corpus.rglob("*")
                if not any(part.startswith(".") for part in p.relative_to(paths.corpus).parts)
            )
    for file in files:
        target = file.resolve()
        if not target.is_relative_to(root):
            raise GoldenSetError(
                f"{where} {paths.root}: {file} resolves to {target}, outside the dataset folder {root}; a dataset's "
                "corpus and golden files are read from its folder only (a symlink or `..` out of it would put "
                f"another file's text in the reports): copy the file into the folder, or allow it with {ALLOW_OUTSIDE}"
            )


def _find_paths(dataset: str | Path | None, golden: str | Path | None, where: str) -> DatasetPaths:
    if dataset is None:
        if golden is None:
            raise GoldenSetError("no golden set: give --rag-golden-set FILE.jsonl or --rag-dataset FOLDER")
        golden_path = Path(golden)
        if not golden_path.is_file():
            raise GoldenSetError(f"--rag-golden-set {golden_path}: no such file")
        return DatasetPaths(golden_path.parent, None, golden_path)
    root = Path(dataset)
    if not root.is_dir():
        raise GoldenSetError(f"{where} {root}: not a folder (it should hold a golden set, and optionally a corpus)")
    corpus: Path | None
    if (root / "corpus").is_dir():
        corpus = root / "corpus"
    elif (root / "corpus.jsonl").is_file():
        corpus = root / "corpus.jsonl"
    elif any(root.glob("*.md")):
        corpus = root
    else:
        corpus = None
    if golden is not None:
        golden_path = Path(golden)
        if not golden_path.is_file():
            raise GoldenSetError(f"--rag-golden-set {golden_path}: no such file")
    else:
        found = [root / n for n in GOLDEN_NAMES if (root / n).is_file()]
        if not found:
            raise GoldenSetError(
                f"{where} {root}: no golden set found (expected {' or '.join(GOLDEN_NAMES)}; or pass --rag-golden-set)"
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
    documents: tuple[Document, ...]  # empty without a corpus
    items: tuple[GoldenItem, ...]
    corpus_hash: str  # "" without a corpus
    golden_sha256: str

    @property
    def fingerprint(self) -> str:
        """Identifies what was measured: the corpus contents and the golden file."""
        return hashlib.sha256(f"{self.corpus_hash}|{self.golden_sha256}".encode()).hexdigest()[:16]


CorpusReader = Callable[[Path], Sequence[Document]]


def load_dataset(
    paths: DatasetPaths,
    read_corpus: CorpusReader = load_documents,
    *,
    pinned_by: CorpusReader | None = None,
    rehash: str = "",
) -> Dataset:
    """The golden set and its corpus as ``read_corpus`` reads it. A golden item's
    ``corpus.sha256`` is the content hash of the corpus as read by ``read_corpus`` or, when
    given, by ``pinned_by`` (the reading ``corpus-hash`` prints without options): one set of
    files, however this run's system reads them. ``rehash``: options of ``corpus-hash``
    that read the corpus as this run does, for the mismatch message."""
    items = golden_items(paths)
    docs: tuple[Document, ...] = tuple(read_corpus(paths.corpus)) if paths.corpus is not None else ()
    chash = corpus_hash(docs) if paths.corpus is not None else ""
    if paths.corpus is not None:
        corpus = paths.corpus
        other = (lambda: corpus_hash(pinned_by(corpus))) if pinned_by is not None else None
        check_corpus_hash(items, chash, paths, other=other, rehash=rehash)
    return Dataset(paths, tuple(docs), tuple(items), chash, file_sha256(paths.golden))


def _other_hash(other: Callable[[], str]) -> str:
    """The other reading's hash, or "" when that reading fails (its system is not installed,
    or it refuses these files): the pin is then compared with this run's reading alone."""
    try:
        return other()
    except (ImportError, RagEvalError, OSError, ValueError):
        return ""


def check_corpus_hash(
    items: Sequence[GoldenItem],
    chash: str,
    paths: DatasetPaths,
    *,
    other: Callable[[], str] | None = None,
    rehash: str = "",
) -> None:
    """Refuse a golden set written against different document contents, naming both hashes.
    ``other``: the hash of another reading of the same files, worked out only if a pin
    differs from ``chash`` (a pin equal to it is the same corpus)."""
    other_hash: str | None = None  # worked out at the first pin that differs from chash
    for item in items:
        if not item.corpus_sha256 or item.corpus_sha256 == chash:
            continue
        if other is not None and other_hash is None:
            other_hash = _other_hash(other)
        if item.corpus_sha256 == other_hash:
            continue
        command = f"python -m rag_eval corpus-hash --rag-dataset {paths.root}" + (f" {rehash}" if rehash else "")
        raise GoldenSetError(
            f"{item.source}: golden item {item.id!r} was written against corpus {item.corpus_sha256[:16]}…, "
            f"but {paths.corpus} has content hash {chash[:16]}…; re-check the gold against the new documents "
            f"and update corpus.sha256 ({command} prints it)"
        )
    manifest = paths.root / "manifest.json"
    if manifest.is_file() and paths.corpus is not None and paths.corpus.is_file():
        expected = json.loads(manifest.read_text(encoding="utf-8")).get("corpus_sha256")
        actual = file_sha256(paths.corpus)
        if expected and expected != actual:
            raise GoldenSetError(
                f"{manifest}: corpus_sha256 {expected[:16]}… does not match {paths.corpus} ({actual[:16]}…); "
                "the golden set was written against different documents"
            )
