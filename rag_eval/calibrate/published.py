"""The published figures of Table 2 (Pearson / Spearman ×100 against people, 280 instances).

Source: Ru et al., "RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented
Generation", NeurIPS 2024 Datasets and Benchmarks, arXiv:2408.08067, Table 2.

* RAGChecker and people, overall: 61.93 / 60.90 and 70.09 / 68.89, as the paper prints them
  (quoted in issue 36). The correctness and completeness pairs are the values RAGChecker's own
  script (``data/meta_evaluation/meta_eval.py`` of its repository) computes from the shipped
  files; this project's search tool returned only the paper's opening, not the table, so these
  four pairs were not read off the printed table here.
* RAGAS, TruLens, ARES and CRUD-RAG: their output files are not in the shipped copy (the
  stored snapshot of RAGChecker's repository at the shipped commit lists
  ``baseline_*_llama3.json`` but holds no content for them, and the PyPI wheel ships no data),
  and the paper's table could not be retrieved, so their figures are not given here (not known,
  never 0). Read them in Table 2 of arXiv:2408.08067.

``tests/rag_eval/test_calibrate_meta_eval.py`` reproduces every figure given here from the
shipped files to 0.01.
"""

from __future__ import annotations

from collections.abc import Mapping

CITATION = "Ru et al., RAGChecker, NeurIPS 2024 D&B, arXiv:2408.08067, Table 2"
Pair = tuple[float, float]

# row -> metric -> (Pearson ×100, Spearman ×100)
PUBLISHED: Mapping[str, Mapping[str, Pair]] = {
    "RAGChecker": {"correctness": (49.66, 46.95), "completeness": (60.67, 58.11), "overall": (61.93, 60.90)},
    "people (annotator 1 vs 2)": {
        "correctness": (63.67, 59.19),
        "completeness": (71.91, 68.36),
        "overall": (70.09, 68.89),
    },
}
NOT_RETRIEVED: tuple[str, ...] = ("RAGAS", "TruLens", "ARES", "CRUD-RAG")
NOT_RETRIEVED_NOTE = (
    "RAGAS, TruLens, ARES, CRUD-RAG: lower than RAGChecker's, per the paper; their figures "
    f"are not shipped (their output files are not in the copy, and the table was not retrievable): see {CITATION}"
)
