"""Markdown book loading, corpus discovery and the corpus hash."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.corpus import corpus_hash, load_corpus, load_markdown_file, parse_markdown
from rag_app.errors import CorpusError
from rag_app.types import Document

BOOK = """---
book: 必修第一册
doc_id: bixiu1
grade: "高一"
---

# 必修第一册

<!-- page: 2 -->
## 1.1 集合的概念
一般地，我们把研究对象统称为元素。
<!-- page: 3 -->
### 例1 用列举法表示集合
$A=\\{1,2\\}$。
<!-- page: 4 -->

## 1.2 集合间的基本关系
子集。
"""


def test_front_matter_gives_book_doc_id_and_metadata() -> None:
    doc = parse_markdown(BOOK, source="books/b1.md", default_doc_id="b1")
    assert doc.doc_id == "bixiu1"
    assert doc.title == "必修第一册"
    assert doc.source == "books/b1.md"
    assert doc.metadata["grade"] == "高一"  # surrounding quotes removed
    assert "book" not in doc.metadata and "doc_id" not in doc.metadata
    assert doc.metadata["source_format"] == "markdown"
    assert not doc.text.startswith("---")  # front matter is not content
    assert doc.text.startswith("\n# 必修第一册\n")  # the blank line after '---' is kept; headings are kept


def test_page_markers_are_removed_and_their_offsets_point_at_the_page_content() -> None:
    doc = parse_markdown(BOOK, source="b1.md", default_doc_id="b1")
    assert "<!--" not in doc.text
    marks = doc.metadata["page_marks"]
    assert [page for _, page in marks] == [2, 3, 4]
    text = doc.text
    assert text[marks[0][0] :].startswith("## 1.1 集合的概念\n")
    assert text[marks[1][0] :].startswith("### 例1 用列举法表示集合\n")
    # page 4 starts at the blank line that followed its marker
    assert text[marks[2][0] :].startswith("\n## 1.2 集合间的基本关系")
    # the offsets are exact: the page-2 mark is right after "\n# 必修第一册\n\n" (1 + 7 + 1 + 1 = 10 chars)
    assert marks[0][0] == len("\n# 必修第一册\n\n") == 10


def test_without_front_matter_book_is_first_h1_then_file_stem(tmp_path: Path) -> None:
    with_h1 = tmp_path / "algebra.md"
    with_h1.write_text("intro line\n# Algebra Basics\n\n## 1 Sets\ntext\n", encoding="utf-8")
    doc = load_markdown_file(with_h1)
    assert (doc.doc_id, doc.title) == ("algebra", "Algebra Basics")
    assert doc.metadata["page_marks"] == []

    bare = tmp_path / "notes.md"
    bare.write_text("## 1 Sets\ntext\n", encoding="utf-8")
    assert load_markdown_file(bare).title == "notes"


def test_crlf_and_bom_are_normalised(tmp_path: Path) -> None:
    path = tmp_path / "w.md"
    path.write_bytes("\ufeff---\r\nbook: B\r\n---\r\n<!-- page: 7 -->\r\n## S\r\nx\r\n".encode("utf-8"))
    doc = load_markdown_file(path)
    assert doc.title == "B"
    assert doc.text == "## S\nx\n"
    assert doc.metadata["page_marks"] == [[0, 7]]


def test_page_marker_inside_fenced_code_is_text() -> None:
    raw = "## S\n```\n<!-- page: 9 -->\n```\n<!-- page: 10 -->\nafter\n"
    doc = parse_markdown(raw, source="s.md", default_doc_id="s")
    assert "<!-- page: 9 -->" in doc.text
    assert [p for _, p in doc.metadata["page_marks"]] == [10]


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ("---\nbook: B\nno colon here\n---\n", "s.md:3"),
        ("---\nbook: B\n", "never closed"),
        ("---\nbook: B\nbook: C\n---\n", "given twice"),
        ("## S\n<!-- page: iv -->\n", "s.md:2"),
        ("---\npage_marks: 1\n---\n", "reserved"),
    ],
)
def test_markdown_errors_name_the_place(raw: str, needle: str) -> None:
    with pytest.raises(CorpusError, match=needle.replace(".", r"\.")):
        parse_markdown(raw, source="s.md", default_doc_id="s")


def test_non_utf8_file_is_a_corpus_error(tmp_path: Path) -> None:
    path = tmp_path / "latin.md"
    path.write_bytes("## é\n".encode("latin-1"))
    with pytest.raises(CorpusError, match="latin.md: not valid UTF-8"):
        load_markdown_file(path)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_load_corpus_directory_recursive_md_and_corpus_jsonl_sorted_by_doc_id(tmp_path: Path) -> None:
    _write(tmp_path / "z_book.md", "---\ndoc_id: a_first\n---\n## S\nx\n")
    _write(tmp_path / "sub" / "m.md", "## S\ny\n")
    _write(tmp_path / "sub" / "corpus.jsonl", '{"doc_id": "j1", "text": "t"}\n')
    _write(tmp_path / "other.jsonl", '{"doc_id": "ignored", "text": "t"}\n')  # not named corpus.jsonl
    _write(tmp_path / ".hidden" / "h.md", "## S\nz\n")
    _write(tmp_path / "notes.txt", "not a corpus file")
    docs = load_corpus(tmp_path)
    assert [d.doc_id for d in docs] == ["a_first", "j1", "m"]
    assert load_corpus(str(tmp_path / "sub" / "m.md"))[0].doc_id == "m"
    assert [d.doc_id for d in load_corpus(tmp_path / "other.jsonl")] == ["ignored"]


def test_duplicate_doc_id_across_files_names_both(tmp_path: Path) -> None:
    a = _write(tmp_path / "a" / "same.md", "## S\nx\n")
    b = _write(tmp_path / "b" / "same.md", "## S\ny\n")
    with pytest.raises(CorpusError) as err:
        load_corpus(tmp_path)
    assert str(a) in str(err.value) and str(b) in str(err.value)
    assert "'same'" in str(err.value)


def test_load_corpus_path_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "missing")
    with pytest.raises(CorpusError, match="no \\*.md file"):
        load_corpus(tmp_path)
    with pytest.raises(CorpusError, match="neither .md nor .jsonl"):
        load_corpus(_write(tmp_path / "x.txt", "x"))


def test_corpus_hash_ignores_order_and_sees_one_character(tmp_path: Path) -> None:
    _write(tmp_path / "one" / "a.md", "## S\n集合。\n")
    _write(tmp_path / "one" / "b.md", "## T\n函数。\n")
    _write(tmp_path / "two" / "0_b.md", "---\ndoc_id: b\nbook: b\n---\n## T\n函数。\n")
    _write(tmp_path / "two" / "1_a.md", "---\ndoc_id: a\nbook: a\n---\n## S\n集合。\n")
    one, two = load_corpus(tmp_path / "one"), load_corpus(tmp_path / "two")
    h = corpus_hash(one)
    assert len(h) == 64 and int(h, 16) >= 0
    assert corpus_hash(list(reversed(one))) == h
    assert corpus_hash(two) == h  # other file names and order, same doc_id/title/text
    changed = [one[0], Document(one[1].doc_id, one[1].title, one[1].text.replace("函", "涵"))]
    assert corpus_hash(changed) != h


def test_corpus_hash_is_length_prefixed() -> None:
    left = [Document("d", "ab", "c")]
    right = [Document("d", "a", "bc")]
    assert corpus_hash(left) != corpus_hash(right)
    assert corpus_hash([]) != corpus_hash([Document("", "", "")])
