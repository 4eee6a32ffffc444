"""BM25Index: scores equal rank_bm25's BM25Okapi; search order, persistence, edge cases."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from rag_app.index.bm25 import BM25Index
from rag_app.text import tokenize
from tests.support.datasets import DATASETS

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "golden_sets" / "demo_maths" / "corpus"


def reference_top(ref: BM25Okapi, ids: Sequence[str], tokens: list[str], k: int) -> list[tuple[str, float]]:
    """BM25Okapi's ranking under our contract: positive scores, score desc, then id asc."""
    scores = ref.get_scores(tokens)
    ranked = sorted(((-float(s), i) for i, s in zip(ids, scores) if s > 0))
    return [(i, -s) for s, i in ranked[:k]]


def assert_matches_okapi(ids: list[str], docs: list[list[str]], queries: list[list[str]]) -> None:
    ref = BM25Okapi(docs)
    index = BM25Index.build(ids, docs)
    assert index.average_idf == pytest.approx(ref.average_idf, rel=1e-12)
    assert index.avgdl == ref.avgdl
    for q in queries:
        expected = ref.get_scores(q)
        got = index.scores(q)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0)
        top = index.search(q, 10)
        ref_top = reference_top(ref, ids, q, 10)
        assert [i for i, _ in top] == [i for i, _ in ref_top], q
        np.testing.assert_allclose([s for _, s in top], [s for _, s in ref_top], rtol=1e-9, atol=0)


def read_jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_equals_okapi_on_gaokao_plus_cmrc_sample() -> None:
    gaokao, cmrc = DATASETS / "gaokao_math_public", DATASETS / "cmrc2018_public"
    if not (gaokao / "corpus.jsonl").is_file() or not (cmrc / "corpus.jsonl").is_file():
        pytest.skip(f"shared datasets not present under {DATASETS}")
    corpus = read_jsonl(gaokao / "corpus.jsonl") + read_jsonl(cmrc / "corpus.jsonl")[:120]
    ids = [str(d["doc_id"]) for d in corpus]
    docs = [tokenize(str(d["text"])) for d in corpus]
    qa = read_jsonl(gaokao / "qa.jsonl")[:30] + read_jsonl(cmrc / "qa.jsonl")[:20]
    queries = [tokenize(str(q["question"])) for q in qa]
    assert len(queries) == 50 and all(queries)
    # the dense-row path is exercised: some query term is in at least N/10 documents
    index = BM25Index.build(ids, docs)
    assert any(index.vocab.get(t) in index._dense_row for q in queries for t in q)
    assert_matches_okapi(ids, docs, queries)


def test_equals_okapi_on_the_bundled_demo_corpus() -> None:
    paragraphs: list[str] = []
    for path in sorted(DEMO_CORPUS.glob("*.md")):
        paragraphs += [p for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]
    assert len(paragraphs) >= 50, f"demo corpus at {DEMO_CORPUS} looks empty"
    docs = [tokenize(p) for p in paragraphs]
    ids = [f"p{i:04d}" for i in range(len(paragraphs))]
    queries = [docs[i][:12] for i in range(0, len(docs), max(1, len(docs) // 40))][:40]
    queries += [tokenize("等比数列的前n项和公式"), tokenize(r"$\sin^2\alpha+\cos^2\alpha=1$")]
    assert_matches_okapi(ids, docs, queries)


def test_equals_okapi_on_a_random_corpus_with_repeated_query_tokens() -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(300)]
    weights = [1.0 / (i + 1) for i in range(300)]  # Zipf: a few terms in most documents
    docs = [rng.choices(vocab, weights, k=rng.randint(1, 40)) for _ in range(800)]
    ids = [f"d{i}" for i in range(800)]
    queries = [rng.choices(vocab, weights, k=rng.randint(1, 12)) for _ in range(30)]
    queries.append(["w5", "w5", "w5", "w9", "unknown"])
    assert_matches_okapi(ids, docs, queries)


def test_hand_computed_scores_on_three_documents() -> None:
    # N = 3, every document has 3 tokens, so avgdl = 3 and for tf = 1 the length factor is
    # 1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 3/3)) = 2.5 / 2.5 = 1: the score is the idf.
    docs = [["x", "a", "b"], ["x", "c", "d"], ["x", "e", "f"]]
    index = BM25Index.build(["d0", "d1", "d2"], docs)
    idf_rare = math.log(3 - 1 + 0.5) - math.log(1 + 0.5)  # ln(2.5/1.5): a..f are in one document
    idf_x_raw = math.log(3 - 3 + 0.5) - math.log(3 + 0.5)  # ln(0.5/3.5) < 0: x is in all three
    eps = 0.25 * (idf_x_raw + 6 * idf_rare) / 7  # a negative idf becomes 0.25 * mean raw idf
    assert eps > 0
    assert index.search(["a"], 5) == [("d0", pytest.approx(idf_rare, rel=1e-12))]
    # a repeated query token counts twice, as in BM25Okapi
    assert index.search(["a", "a"], 5) == [("d0", pytest.approx(2 * idf_rare, rel=1e-12))]
    # x is floored to eps and is in every document; equal scores are ordered by id
    assert index.search(["x"], 5) == [(d, pytest.approx(eps, rel=1e-12)) for d in ("d0", "d1", "d2")]
    assert index.search(["x", "c"], 1) == [("d1", pytest.approx(eps + idf_rare, rel=1e-12))]


def test_two_document_corpus_is_degenerate_in_okapi_and_here() -> None:
    # N = 2: a term in one document gets ln(1.5/1.5) = 0, so nothing can score above 0.
    docs = [["a", "b"], ["b", "c"]]
    ref = BM25Okapi(docs)
    index = BM25Index.build(["d0", "d1"], docs)
    np.testing.assert_allclose(index.scores(["a"]), ref.get_scores(["a"]), rtol=0, atol=0)
    assert list(index.scores(["a"])) == [0.0, 0.0]
    assert index.search(["a"], 5) == []  # zero scores are not hits: index corpora of >= 3 docs


def test_ties_go_to_the_smaller_id_and_zero_scores_are_excluded() -> None:
    docs = [["same", "text"], ["other", "words"], ["same", "text"], ["same", "text"], ["more", "filler"]]
    index = BM25Index.build(["c", "z", "a", "b", "y"], docs)
    assert [i for i, _ in index.search(["same"], 10)] == ["a", "b", "c"]  # z, y do not match
    assert [i for i, _ in index.search(["same"], 2)] == ["a", "b"]  # the cut keeps the smaller ids
    assert index.search(["nothing"], 10) == []
    assert index.search(["same"], 0) == []


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    rng = random.Random(3)
    vocab = ["数列", "等比", "x^2", "frac", "a_1", "0.9"] + [f"t{i}" for i in range(50)]
    docs = [rng.choices(vocab, k=rng.randint(2, 30)) for _ in range(200)]
    ids = [f"doc-{i}" for i in range(200)]
    index = BM25Index.build(ids, docs)
    index.save(tmp_path / "bm25")
    assert sorted(p.name for p in (tmp_path / "bm25").iterdir()) == ["bm25_arrays.npz", "bm25_meta.json"]
    with np.load(tmp_path / "bm25" / "bm25_arrays.npz", allow_pickle=False) as z:  # no pickled objects
        assert set(z.files) == {"idf", "indptr", "doc_idx", "weight", "doc_len"}
    loaded = BM25Index.load(tmp_path / "bm25")
    for q in (["数列", "x^2"], ["frac", "frac", "t3"], ["a_1", "0.9", "t40"]):
        np.testing.assert_array_equal(loaded.scores(q), index.scores(q))
        assert loaded.search(q, 10) == index.search(q, 10)


def test_load_names_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="bm25_meta.json"):
        BM25Index.load(tmp_path)


def test_build_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="2 ids but 1 token lists"):
        BM25Index.build(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="duplicate document ids"):
        BM25Index.build(["a", "a", "b"], [["x"], ["y"], ["z"]])


def test_empty_corpus_and_empty_documents() -> None:
    assert BM25Index.build([], []).search(["x"], 5) == []
    index = BM25Index.build(["a", "b", "c", "d"], [[], ["x"], ["y"], ["z"]])
    assert [i for i, _ in index.search(["x", "y"], 5)] == ["b", "c"]
