"""Build the ready-to-run subsets of the shared external datasets shipped in golden_sets/.

    python golden_sets/make_subsets.py [--shared ../shared/datasets]

Deterministic: documents are chosen by a hash of their id, so rerunning gives the
same files. Each subset keeps the shared layout (corpus.jsonl + qa.jsonl), so it loads
as it is, plus a manifest (source, licence, sha256 of corpus.jsonl, selection rule)
and an ATTRIBUTION.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# name -> (shared folder, documents kept (None: all), licence text for ATTRIBUTION.md)
SUBSETS: dict[str, tuple[str, int | None, str]] = {
    "gaokao_math": (
        "gaokao_math_public",
        None,
        "GAOKAO-Bench by OpenLMLab (https://github.com/OpenLMLab/GAOKAO-Bench), Apache License 2.0. "
        "Chinese national college entrance exam maths papers 2010-2022; each document is the worked "
        "solution of one problem, each question the problem text.",
    ),
    "cmrc2018": (
        "cmrc2018_public",
        60,
        "CMRC 2018 by Yiming Cui et al. (https://github.com/ymcui/cmrc2018), CC BY-SA 4.0. "
        "Chinese Wikipedia paragraphs with human-written questions (trial set). "
        "This subset is licensed CC BY-SA 4.0 as well.",
    ),
    "squad20": (
        "squad20_public",
        40,
        "SQuAD 2.0 by Rajpurkar et al. (https://rajpurkar.github.io/SQuAD-explorer/), CC BY-SA 4.0. "
        "English Wikipedia paragraphs with answerable and unanswerable questions (dev set). "
        "This subset is licensed CC BY-SA 4.0 as well.",
    ),
}


def _rank(key: str) -> str:
    return hashlib.sha256(f"subset-v1|{key}".encode()).hexdigest()


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def build(name: str, shared: Path) -> dict[str, Any]:
    folder, keep, licence = SUBSETS[name]
    src = shared / folder
    docs = _read(src / "corpus.jsonl")
    questions = _read(src / "qa.jsonl")
    if keep is not None:
        chosen = {d["doc_id"] for d in sorted(docs, key=lambda d: _rank(d["doc_id"]))[:keep]}
        docs = [d for d in docs if d["doc_id"] in chosen]
        questions = [
            q
            for q in questions
            if (q["gold_doc_ids"] and set(q["gold_doc_ids"]) <= chosen)
            or (not q["gold_doc_ids"] and q.get("source_doc_id") in chosen)
        ]
    dropped = [q["id"] for q in questions if not str(q.get("question", "")).strip()]
    questions = [q for q in questions if q["id"] not in dropped]  # two cmrc2018 items have no question text
    out = HERE / name
    out.mkdir(exist_ok=True)
    _write(out / "corpus.jsonl", docs)
    _write(out / "qa.jsonl", questions)
    source = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    manifest = {
        "name": name,
        "source_dataset": folder,
        "source_repo": source.get("source_repo"),
        "source_commit": source.get("source_commit"),
        "licence": source.get("licence"),
        "selection": "all documents"
        if keep is None
        else f"{keep} documents with the smallest sha256('subset-v1|'+doc_id), and the questions whose gold lies in them",
        "dropped_questions_without_text": dropped,
        "n_docs": len(docs),
        "n_questions": len(questions),
        "n_negatives": sum(1 for q in questions if not q["gold_doc_ids"]),
        "corpus_sha256": hashlib.sha256((out / "corpus.jsonl").read_bytes()).hexdigest(),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (out / "ATTRIBUTION.md").write_text(
        f"# {name}\n\n{licence}\n\nConverted to the corpus.jsonl/qa.jsonl layout; {manifest['selection']}. "
        f"{manifest['n_docs']} documents, {manifest['n_questions']} questions "
        f"({manifest['n_negatives']} without an answer in the corpus). Rebuild with "
        "`python golden_sets/make_subsets.py`.\n",
        encoding="utf-8",
    )
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=HERE.parent.parent / "shared" / "datasets")
    args = parser.parse_args()
    for name in SUBSETS:
        m = build(name, args.shared)
        print(f"{name}: {m['n_docs']} docs, {m['n_questions']} questions ({m['n_negatives']} negatives)")


if __name__ == "__main__":
    main()
