"""A tiny in-process pipeline for ``--rag-pipeline examples.my_pipeline:make_pipeline``.

It ranks whole documents by shared character bigrams and answers with the best
document's first sentence: not a good RAG system, but a complete implementation of
the contract (rag_eval.core.contract) in plain Python with plain dicts, to copy from.

    pytest eval_tests -m "retrieval or deterministic" \\
        --rag-pipeline examples.my_pipeline:make_pipeline --rag-pipeline-config examples/my_pipeline.toml
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class KeywordPipeline:
    def __init__(self, corpus: Path) -> None:
        files = [corpus] if corpus.is_file() else sorted(corpus.glob("*.md"))
        self.docs: dict[str, str] = {}
        for f in files:
            if f.suffix == ".jsonl":
                for line in f.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        row = json.loads(line)
                        self.docs[str(row["doc_id"])] = str(row["text"])
            else:
                self.docs[f.stem] = f.read_text(encoding="utf-8")

    def retrieve(self, question: str, top_k: int | None = None) -> dict[str, Any]:
        q = _bigrams(question)
        scored = sorted(((len(q & _bigrams(t)) / (len(q) or 1), d) for d, t in self.docs.items()), reverse=True)
        hits = [(s, d) for s, d in scored if s > 0][: top_k or 5]
        return {"items": [{"id": d, "text": self.docs[d], "score": s, "metadata": {"doc_id": d}} for s, d in hits]}

    def chat(
        self, question: str, top_k: int | None = None, history: Sequence[Mapping[str, str]] = ()
    ) -> dict[str, Any]:
        context = self.retrieve(question, top_k)["items"]
        if not context:
            return {"answer": "No relevant material was found.", "refused": True}
        first = re.split(r"(?<=[。.!?！？])\s*", context[0]["text"].strip())[0]
        return {"answer": f"{first} [1]", "sources": context[:1], "context": context}

    def describe(self) -> dict[str, Any]:
        return {"generator": "keyword-first-sentence", "n_docs": len(self.docs)}


def make_pipeline(options: Mapping[str, Any]) -> KeywordPipeline:
    """Called once per process with the [options] table of the pipeline configuration."""
    return KeywordPipeline(Path(str(options.get("corpus", "golden_sets/demo_maths/corpus"))))


def _bigrams(text: str) -> set[str]:
    t = re.sub(r"\s+", "", text.lower())
    return {t[i : i + 2] for i in range(len(t) - 1)}
