"""The framework's own corpus reader (rag_eval.corpus): corpus.jsonl or a folder of .md
documents, every bad line named file:line with the fix, and the order-free corpus hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.core.records import Document
from rag_eval.corpus import CorpusError, corpus_hash, load_documents


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)
    return path


def test_jsonl_documents_by_doc_id_with_their_metadata_and_line(tmp_path: Path) -> None:
    f = write(
        tmp_path / "corpus.jsonl",
        '{"doc_id": "b", "title": "集合", "text": "子集", "book": "必修一"}\n\n{"id": 7, "text": "t"}\n',
    )
    docs = load_documents(f)
    assert [(d.doc_id, d.title, d.text, dict(d.metadata), d.source) for d in docs] == [
        ("7", "", "t", {}, f"{f}:3"),
        ("b", "集合", "子集", {"book": "必修一"}, f"{f}:1"),
    ]


def test_a_byte_order_mark_is_no_error(tmp_path: Path) -> None:
    f = write(tmp_path / "corpus.jsonl", '{"doc_id": "a", "text": "x"}\n', encoding="utf-8-sig")
    assert [d.doc_id for d in load_documents(f)] == ["a"]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
        ('["a"]', 'expected an object like {"doc_id"'),
        ('{"text": "x"}', "'doc_id' is missing or not a string; expected {\"doc_id\""),
        ('{"doc_id": "a"}', "'text' is missing or not a string; expected {\"doc_id\""),
    ],
)
def test_a_bad_line_is_named_by_file_and_line(tmp_path: Path, line: str, said: str) -> None:
    f = write(tmp_path / "corpus.jsonl", '{"doc_id": "ok", "text": "x"}\n' + line + "\n")
    with pytest.raises(CorpusError) as exc:
        load_documents(f)
    assert str(exc.value).startswith(f"{f}:2: {said}")


def test_every_bad_line_is_told_at_once_and_an_id_twice_in_one_file_names_the_first_line(tmp_path: Path) -> None:
    f = write(tmp_path / "corpus.jsonl", '{"doc_id": "a", "text": "x"}\n{bad\n{"doc_id": "a", "text": "y"}\n')
    with pytest.raises(CorpusError) as exc:
        load_documents(f)
    lines = str(exc.value).splitlines()
    assert [ln.split(": ", 1)[0] for ln in lines] == [f"{f}:2", f"{f}:3"]
    assert "duplicate id 'a' (first at line 1)" in lines[1]


def test_an_empty_corpus_file_holds_no_document(tmp_path: Path) -> None:
    assert load_documents(write(tmp_path / "corpus.jsonl", "\n  \n")) == ()


def test_a_folder_of_markdown_takes_front_matter_or_the_first_heading(tmp_path: Path) -> None:
    write(tmp_path / "c" / "one.md", "---\ndoc_id: d1\ntitle: '函数'\n---\n正文\n")
    write(tmp_path / "c" / "sub" / "two.md", "# 二次函数\n\n顶点式\n")
    write(tmp_path / "c" / ".hidden" / "x.md", "# no\n")
    docs = load_documents(tmp_path / "c")
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        ("d1", "函数", "正文\n"),
        ("two", "二次函数", "# 二次函数\n\n顶点式\n"),
    ]


def test_a_doc_id_twice_names_both_places(tmp_path: Path) -> None:
    write(tmp_path / "c" / "a.jsonl", '{"doc_id": "x", "text": "1"}\n')
    write(tmp_path / "c" / "x.md", "# x\n")
    with pytest.raises(CorpusError, match=r"duplicate doc_id 'x', also in .*a\.jsonl:1"):
        load_documents(tmp_path / "c")


def test_a_missing_path_says_so(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file or folder"):
        load_documents(tmp_path / "nope")


def test_the_hash_is_order_free_and_sees_every_field() -> None:
    a, b = Document("a", "t", "x", {}, ""), Document("b", "", "y", {}, "")
    assert corpus_hash([a, b]) == corpus_hash([b, a])
    assert len({corpus_hash([a, b]), corpus_hash([a]), corpus_hash([Document("a", "t2", "x", {}, ""), b])}) == 3
    # field boundaries are unambiguous: ("ab", "") and ("a", "b") differ
    assert corpus_hash([Document("ab", "", "x", {}, "")]) != corpus_hash([Document("a", "b", "x", {}, "")])
