"""JSONL corpus loading: documents, extra keys, and errors that name file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_app.corpus import load_corpus, load_jsonl_file
from rag_app.errors import CorpusError
from tests.support.datasets import DATASETS

SHARED_GAOKAO = DATASETS / "gaokao_math_public" / "corpus.jsonl"


def _jsonl(tmp_path: Path, lines: list[str], name: str = "corpus.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_documents_title_default_extra_keys_and_blank_lines(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        [
            json.dumps({"doc_id": "g:1", "title": "2010 理数", "text": "解: $x$.", "qtype": "MCQ", "year": 2010}),
            "",
            "   ",
            json.dumps({"doc_id": 7, "text": "no title"}),
        ],
    )
    docs = load_jsonl_file(path)
    assert [d.doc_id for d in docs] == ["g:1", "7"]  # an integer doc_id is read as its string
    first, second = docs
    assert first.title == "2010 理数" and first.text == "解: $x$."
    assert first.metadata == {"qtype": "MCQ", "year": 2010, "source_format": "jsonl"}
    assert first.source == f"{path}:1"
    assert second.title == "7"  # no title: the doc_id
    assert second.source == f"{path}:4"  # line numbers count the skipped blank lines


@pytest.mark.parametrize(
    ("bad_line", "what"),
    [
        ('{"doc_id": "x", "text": ', "not valid JSON"),
        ('["doc_id", "text"]', "expected a JSON object, got list"),
        ('{"text": "t"}', "missing key 'doc_id'"),
        ('{"doc_id": "x"}', "missing key 'text'"),
        ('{"doc_id": "", "text": "t"}', "doc_id must be a non-empty string"),
        ('{"doc_id": "x", "text": 3}', "text must be a string"),
        ('{"doc_id": "x", "text": "t", "page": "3"}', "'page' must be an integer"),
        ('{"doc_id": "x", "text": "t", "page_marks": []}', "reserved"),
    ],
)
def test_bad_line_error_names_file_and_line(tmp_path: Path, bad_line: str, what: str) -> None:
    path = _jsonl(tmp_path, ['{"doc_id": "ok1", "text": "a"}', '{"doc_id": "ok2", "text": "b"}', bad_line])
    with pytest.raises(CorpusError) as err:
        load_jsonl_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}:3: ")  # the third line is the bad one
    assert what in message


def test_duplicate_doc_id_names_both_lines(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        ['{"doc_id": "a", "text": "1"}', '{"doc_id": "b", "text": "2"}', '{"doc_id": "a", "text": "3"}'],
    )
    with pytest.raises(CorpusError) as err:
        load_jsonl_file(path)
    assert f"{path}:3" in str(err.value) and f"{path}:1" in str(err.value)
    assert "duplicate doc_id 'a'" in str(err.value)


def test_load_corpus_on_jsonl_sorts_by_doc_id(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, ['{"doc_id": "b", "text": "2"}', '{"doc_id": "a", "text": "1"}'])
    assert [d.doc_id for d in load_corpus(path)] == ["a", "b"]


def test_shared_gaokao_corpus_loads() -> None:
    if not SHARED_GAOKAO.is_file():
        pytest.skip(f"{SHARED_GAOKAO} not present")
    docs = load_corpus(SHARED_GAOKAO)
    assert len(docs) == 544
    assert len({d.doc_id for d in docs}) == 544
    assert [d.doc_id for d in docs] == sorted(d.doc_id for d in docs)
    assert all(d.text.strip() and d.title for d in docs)
