"""Parent/child chunking: offsets, atomic blocks, sizes, overlap, ids, pages.

hypothesis is not installed in the project virtualenv, so the property tests draw their
documents from a seeded ``random.Random``: failures are reproducible from the seed.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from rag_app.corpus import ChunkConfig, chunk_documents, load_corpus, parse_markdown
from rag_app.corpus.segment import Protected, split_pieces
from rag_app.errors import ConfigError, CorpusError
from rag_app.settings import Settings
from rag_app.types import Chunk, Document
from tests.support.datasets import DATASETS

SHARED_GAOKAO = DATASETS / "gaokao_math_public" / "corpus.jsonl"
REPO_ROOT = Path(__file__).resolve().parents[2]
SMALL = ChunkConfig(chunk_size=80, chunk_overlap=30, parent_max_chars=240)


def md(text: str, doc_id: str = "b1", book: str | None = "书") -> Document:
    head = f"---\nbook: {book}\ndoc_id: {doc_id}\n---\n" if book is not None else ""
    return parse_markdown(head + text, source=f"{doc_id}.md", default_doc_id=doc_id)


def jsonl_doc(doc_id: str, text: str, title: str = "T", **extra: object) -> Document:
    return Document(doc_id, title, text, metadata={**extra, "source_format": "jsonl"}, source="c.jsonl:1")


def children(chunks: Sequence[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.kind == "child"]


def parents(chunks: Sequence[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.kind == "parent"]


# ---------------------------------------------------------------- invariant checks


def check_invariants(docs: Sequence[Document], chunks: Sequence[Chunk], config: ChunkConfig) -> None:
    """Everything that must hold for any corpus; shared by the example and property tests."""
    by_id = {d.doc_id: d for d in docs}
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids)), "chunk ids must be unique"
    chunk_by_id = {c.chunk_id: c for c in chunks}
    for c in chunks:
        text = by_id[c.doc_id].text
        assert c.text == text[c.char_start : c.char_end], c.chunk_id
        assert c.text == c.text.strip() and c.text, c.chunk_id
        if c.kind == "parent":
            assert c.parent_id is None
            continue
        parent = chunk_by_id[c.parent_id or ""]
        assert parent.kind == "parent" and parent.doc_id == c.doc_id
        assert parent.char_start <= c.char_start and c.char_end <= parent.char_end
        if len(c.text) > config.chunk_size:  # allowed only for one atomic piece
            pieces = split_pieces(text, parent.char_start, parent.char_end, config.chunk_size, Protected.of(text))
            assert (c.char_start, c.char_end) in {(p.start, p.end) for p in pieces}, c.chunk_id
    # children of one parent: ordered, overlapping only by whole leading pieces, covering it
    for parent in parents(chunks):
        text = by_id[parent.doc_id].text
        kids = [c for c in chunks if c.parent_id == parent.chunk_id]
        assert kids and kids[0].char_start == parent.char_start and kids[-1].char_end == parent.char_end
        pieces = split_pieces(text, parent.char_start, parent.char_end, config.chunk_size, Protected.of(text))
        starts = {p.start for p in pieces}
        ends = {p.end for p in pieces}
        for prev, nxt in zip(kids, kids[1:]):
            assert prev.char_start < nxt.char_start, "children advance"
            assert nxt.char_start in starts and prev.char_end in ends
            if nxt.char_start < prev.char_end:  # an overlap: whole pieces, at most chunk_overlap long
                assert prev.char_end - nxt.char_start <= config.chunk_overlap
            else:  # no gap with content in it
                assert not text[prev.char_end : nxt.char_start].strip()


def atomic_spans_respected(chunks: Sequence[Chunk], doc_id: str, spans: Sequence[tuple[int, int]]) -> None:
    kids = [c for c in children(chunks) if c.doc_id == doc_id]
    for s, e in spans:
        assert any(c.char_start <= s and e <= c.char_end for c in kids), (s, e)
        for c in kids:
            assert not s < c.char_start < e and not s < c.char_end < e, (c.chunk_id, s, e)


# ---------------------------------------------------------------- examples

BOOK = """# 必修第一册

<!-- page: 2 -->
## 1.1 集合的概念
一般地，我们把研究对象统称为元素。把一些元素组成的总体叫做集合。元素是确定的，如 $x \\in A$。记 $\\{x \\mid x^2=1. 0；y\\}$ 为 B。
<!-- page: 3 -->
### 例1 用列举法表示
| 集合 | 元素 |
|---|---|
| A | 1。2 |

$$
x^2 + y^2 = 1。
a. b
$$

```python
print("a. b。")
# not a heading
```
## 1.2 集合间的基本关系
子集。
## 1.2 集合间的基本关系
又一节同名。
"""


def test_sections_ids_pages_and_heading_in_first_child() -> None:
    doc = md(BOOK)
    chunks = chunk_documents([doc], SMALL)
    check_invariants([doc], chunks, SMALL)
    # the '# 必修第一册' line has no content of its own, so there is no section for it
    assert [c.section for c in parents(chunks)] == ["1.1 集合的概念", "1.2 集合间的基本关系", "1.2 集合间的基本关系"]
    assert [c.chunk_id for c in parents(chunks)] == [
        "书::1.1集合的概念::parent",
        "书::1.2集合间的基本关系::parent",
        "书::1.2集合间的基本关系~2::parent",  # a second section of the same name
    ]
    first_kids = [c for c in chunks if c.parent_id == "书::1.1集合的概念::parent"]
    assert first_kids[0].chunk_id == "书::1.1集合的概念::p2::child::1"
    assert first_kids[0].text.startswith("## 1.1 集合的概念\n一般地")
    assert [c.chunk_id.rsplit("::", 1)[1] for c in first_kids] == [str(i) for i in range(1, len(first_kids) + 1)]
    # the section runs from page 2 into page 3
    p = parents(chunks)[0]
    assert (p.page_start, p.page_end, p.pages_label) == (2, 3, "第2-3页")
    assert first_kids[-1].page_start == 3 and "::p3::" in first_kids[-1].chunk_id
    # text before the first marker would count as the first page; everything after is on page 3
    assert all(c.page_start == c.page_end == 3 for c in chunks if c.section.startswith("1.2"))
    assert all(c.book == "书" and c.doc_id == "b1" for c in chunks)


def test_formulas_tables_and_code_are_never_split() -> None:
    doc = md(BOOK)
    text = doc.text
    atomic = [
        "$x \\in A$",
        "$\\{x \\mid x^2=1. 0；y\\}$",  # 。-like and '. ' inside inline maths
        "| 集合 | 元素 |\n|---|---|\n| A | 1。2 |",
        "$$\nx^2 + y^2 = 1。\na. b\n$$",
        '```python\nprint("a. b。")\n# not a heading\n```',
    ]
    spans = [(text.index(a), text.index(a) + len(a)) for a in atomic]
    for config in (SMALL, ChunkConfig(chunk_size=20, chunk_overlap=5, parent_max_chars=40), ChunkConfig()):
        chunks = chunk_documents([doc], config)
        check_invariants([doc], chunks, config)
        atomic_spans_respected(chunks, doc.doc_id, spans)


def test_long_paragraph_splits_into_sentences_with_sentence_overlap() -> None:
    sentences = [f"第{i}句讲集合的元素与表示方法{'。' if i % 2 else '！'}" for i in range(1, 13)]  # 15 chars each
    doc = jsonl_doc("j", "".join(sentences))
    config = ChunkConfig(chunk_size=50, chunk_overlap=20, parent_max_chars=400)
    kids = children(chunk_documents([doc], config))
    check_invariants([doc], chunk_documents([doc], config), config)
    # 12 sentences of 15 chars; a child holds 3 (45 <= 50) and repeats the last one (15 <= 20):
    # starts at sentences 1, 3, 5, 7, 9, 11 → 6 children
    assert len(kids) == 6
    assert kids[0].text == "".join(sentences[0:3])
    assert kids[1].text == "".join(sentences[2:5])
    assert kids[-1].text == "".join(sentences[10:12])
    for prev, nxt in zip(kids, kids[1:]):
        shared = doc.text[nxt.char_start : prev.char_end]
        assert shared in sentences  # exactly one whole sentence is repeated


def test_no_overlap_when_the_last_piece_is_longer_than_the_overlap() -> None:
    doc = jsonl_doc("j", "甲" * 30 + "。" + "乙" * 30 + "。" + "丙" * 30 + "。")  # 31-char sentences
    config = ChunkConfig(chunk_size=70, chunk_overlap=20, parent_max_chars=400)
    kids = children(chunk_documents([doc], config))
    assert [(c.char_start, c.char_end) for c in kids] == [(0, 62), (62, 93)]


def test_ascii_sentence_ends_need_following_space() -> None:
    doc = jsonl_doc("j", "Pi is 3.14 roughly. The set {a.b} has one element! Is it? Yes; see $a. b$ here.")
    config = ChunkConfig(chunk_size=20, chunk_overlap=0, parent_max_chars=200)
    kids = children(chunk_documents([doc], config))
    assert [k.text for k in kids] == [
        "Pi is 3.14 roughly.",
        "The set {a.b} has one element!",  # one sentence, longer than 20: a child of its own
        "Is it? Yes;",
        "see $a. b$ here.",
    ]


def test_oversized_atomic_block_is_one_child() -> None:
    table = "\n".join(f"| {i} | {'x' * 20} |" for i in range(10))  # 10 rows of 27 chars
    code = "```\n" + "\n".join(f"line {i}。 more. text" for i in range(10)) + "\n```"
    doc = md(f"## 表\n前言。\n\n{table}\n\n{code}\n\n后记。\n")
    config = ChunkConfig(chunk_size=60, chunk_overlap=10, parent_max_chars=2000)
    kids = children(chunk_documents([doc], config))
    assert table in [k.text for k in kids]
    assert code in [k.text for k in kids]
    check_invariants([doc], chunk_documents([doc], config), config)


def test_long_section_splits_into_several_parents_on_block_boundaries() -> None:
    paragraphs = [f"第{i}段。" + "内容" * 40 for i in range(1, 7)]  # 4 + 80 = 84 chars each
    doc = md("## 2.1 长节\n" + "\n\n".join(paragraphs) + "\n")
    config = ChunkConfig(chunk_size=100, chunk_overlap=0, parent_max_chars=200)
    chunks = chunk_documents([doc], config)
    check_invariants([doc], chunks, config)
    ps = parents(chunks)
    # heading (8) + \n + 84 = 93, then + 2 + 84 = 179 <= 200; 84 + 2 + 84 = 170 <= 200: 3 parents
    assert [p.chunk_id for p in ps] == [f"书::2.1长节::parent::{j}" for j in (1, 2, 3)]
    assert all(len(p.text) <= 200 for p in ps)
    assert ps[0].text.startswith("## 2.1 长节\n第1段") and ps[1].text.startswith("第3段")
    kids = children(chunks)
    assert [k.chunk_id for k in kids] == [f"书::2.1长节::child::{i}" for i in range(1, 7)]  # no pages: no ::p
    assert [k.parent_id for k in kids] == [ps[0].chunk_id] * 2 + [ps[1].chunk_id] * 2 + [ps[2].chunk_id] * 2
    assert chunks[:3] == ps  # parents first, then their children
    assert all(k.page_start is None and k.page_end is None for k in kids)


def test_preamble_with_content_is_a_section_titled_by_the_book() -> None:
    doc = md("# 书\n本书介绍。\n\n## 1 开始\n正文。\n")
    assert [p.section for p in parents(chunk_documents([doc], SMALL))] == ["书", "1 开始"]
    no_front = md("前言文字。\n## 1 开始\n正文。\n", doc_id="nf", book=None)
    assert [p.chunk_id for p in parents(chunk_documents([no_front], SMALL))] == ["nf::nf::parent", "nf::1开始::parent"]


def test_jsonl_doc_is_one_section_even_with_headings_and_carries_scalar_metadata() -> None:
    doc = jsonl_doc(
        "gk::1", "# 标题\n解: $x$.\n## 不是节\n故选 A.", title="2010 理数", qtype="MCQ", year=2010, tags=["a"]
    )
    chunks = chunk_documents([doc], SMALL)
    assert [c.chunk_id for c in chunks] == ["gk:1::parent", "gk:1::child::1"]  # '::' in the doc_id became ':'
    assert {c.section for c in chunks} == {"2010 理数"} and {c.book for c in chunks} == {"2010 理数"}
    assert chunks[1].metadata == {"qtype": "MCQ", "year": 2010}  # no list, no source_format
    paged = jsonl_doc("p", "正文。", page=12)
    assert {(c.page_start, c.page_end) for c in chunk_documents([paged], SMALL)} == {(12, 12)}
    assert chunk_documents([jsonl_doc("empty", "  \n ")], SMALL) == []


def test_page_marks_are_not_copied_to_chunks_but_front_matter_keys_are() -> None:
    doc = parse_markdown("---\nbook: B\ngrade: 高一\n---\n<!-- page: 5 -->\n## S\nx。\n", "b.md", "b")
    for c in chunk_documents([doc], SMALL):
        assert c.metadata == {"grade": "高一"}
        assert (c.page_start, c.page_end) == (5, 5)


def test_ids_are_stable_across_runs_and_input_order() -> None:
    docs = [md(BOOK, doc_id="b1", book="一"), md(BOOK, doc_id="b2", book="二"), jsonl_doc("a", "解。" * 200)]
    first = [c.to_dict() for c in chunk_documents(docs, SMALL)]
    assert [c.to_dict() for c in chunk_documents(docs, SMALL)] == first
    assert [c.to_dict() for c in chunk_documents(list(reversed(docs)), SMALL)] == first
    assert [c["doc_id"] for c in first] == sorted(c["doc_id"] for c in first)  # documents in doc_id order


def test_ids_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("---\nbook: 书\n---\n" + BOOK, encoding="utf-8")
    script = (
        "import json, sys\n"
        "from rag_app.corpus import ChunkConfig, chunk_documents, load_corpus\n"
        "chunks = chunk_documents(load_corpus(sys.argv[1]), ChunkConfig(80, 30, 240))\n"
        "print(json.dumps([c.to_dict() for c in chunks], ensure_ascii=False))\n"
    )
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO_ROOT)},
        ).stdout
        for seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1] and json.loads(outputs[0])


def test_id_collision_across_documents_names_both() -> None:
    same_book = [md("## S\n一。\n", doc_id="x1", book="书"), md("## S\n二。\n", doc_id="x2", book="书")]
    with pytest.raises(CorpusError) as err:
        chunk_documents(same_book, SMALL)
    assert "'书::S::parent'" in str(err.value) and "'x1'" in str(err.value) and "'x2'" in str(err.value)
    with pytest.raises(CorpusError, match="duplicate doc_id 'd'"):
        chunk_documents([jsonl_doc("d", "a"), jsonl_doc("d", "b")], SMALL)


def test_chunk_config_validation_and_settings() -> None:
    assert ChunkConfig().to_dict() == {"chunk_size": 320, "chunk_overlap": 60, "parent_max_chars": 2400}
    settings = Settings(chunk_size=200, chunk_overlap=20, parent_max_chars=1000)
    assert ChunkConfig.from_settings(settings) == ChunkConfig(200, 20, 1000)
    for bad in ({"chunk_size": 0}, {"chunk_overlap": 320}, {"chunk_overlap": -1}, {"parent_max_chars": 100}):
        with pytest.raises(ConfigError):
            ChunkConfig(**bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- property tests (seeded)

_WORDS = ["集合", "元素", "函数", "定义域", "set", "value", "x", "的", "与", "是"]
_ENDS = ["。", "！", "？", "；", ". ", "! ", "; ", "，", " "]
_INLINE = ["$x^2$", "$a。b$", "$1. 2; 3$", "$\\{x \\mid x>0\\}$", "$a\nb$", "$f(x)=\\frac{1}{2}. $", "$\\$5$"]


def _random_doc(rng: random.Random, n: int) -> tuple[str, list[tuple[int, int]]]:
    """A random Markdown book body and the spans (offsets) of every atomic element in it."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0

    def put(s: str, atomic: bool = False) -> None:
        nonlocal length
        if atomic:
            spans.append((length, length + len(s)))
        out.append(s)
        length += len(s)

    for _ in range(n):
        kind = rng.choice(["h2", "h3", "para", "para", "para", "table", "display", "code"])
        if kind == "h2":
            put(f"## {rng.randint(1, 9)}.{rng.randint(1, 9)} {rng.choice(_WORDS)}\n")
        elif kind == "h3":
            put(f"### 例{rng.randint(1, 9)}\n")
        elif kind == "para":
            for _ in range(rng.randint(1, 12)):
                for _ in range(rng.randint(1, 6)):
                    put(rng.choice(_WORDS))
                if rng.random() < 0.4:
                    put(rng.choice(_INLINE), atomic=True)
                put(rng.choice(_ENDS))
            put("\n\n")
        elif kind == "table":
            rows = "\n".join(f"| {rng.choice(_WORDS)}。 | {rng.choice(_WORDS)}. x |" for _ in range(rng.randint(1, 6)))
            put(rows, atomic=True)
            put("\n\n")
        elif kind == "display":
            body = "\n".join(f"{rng.choice(_WORDS)}。 {rng.choice(_WORDS)}. " for _ in range(rng.randint(1, 4)))
            put(f"$$\n{body}\n$$", atomic=True)
            put("\n\n")
        else:
            body = "\n".join(f"## not a heading {i}. $x" for i in range(rng.randint(1, 4)))
            put(f"```\n{body}\n```", atomic=True)
            put("\n\n")
    return "".join(out), spans


@pytest.mark.parametrize("seed", range(40))
def test_property_offsets_and_atomic_elements(seed: int) -> None:
    rng = random.Random(seed)
    body, spans = _random_doc(rng, rng.randint(1, 25))
    doc = parse_markdown(body, source=f"rand{seed}.md", default_doc_id=f"rand{seed}")
    assert doc.text == body  # no front matter, no page marks: offsets carry over unchanged
    size = rng.choice([30, 60, 120, 320])
    config = ChunkConfig(
        chunk_size=size, chunk_overlap=rng.randint(0, size // 2), parent_max_chars=size * rng.randint(1, 4)
    )
    chunks = chunk_documents([doc], config)
    check_invariants([doc], chunks, config)
    in_sections = [(s, e) for s, e in spans if any(p.char_start <= s < p.char_end for p in parents(chunks))]
    assert len(in_sections) == len(spans)  # nothing atomic was dropped
    atomic_spans_respected(chunks, doc.doc_id, spans)
    # nothing with content is lost: every non-space character (outside level-1/2 headings
    # that have no content of their own) is in some child
    covered = [False] * len(body)
    for c in children(chunks):
        covered[c.char_start : c.char_end] = [True] * (c.char_end - c.char_start)
    lost = "".join(ch for ch, cov in zip(body, covered) if not cov and not ch.isspace())
    assert re.fullmatch(r"(##\d\.\d\w+)*", lost), lost


# ---------------------------------------------------------------- the shared gaokao corpus

_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)


def test_shared_gaokao_corpus_invariants() -> None:
    if not SHARED_GAOKAO.is_file():
        pytest.skip(f"{SHARED_GAOKAO} not present")
    docs = load_corpus(SHARED_GAOKAO)
    config = ChunkConfig()
    chunks = chunk_documents(docs, config)
    check_invariants(docs, chunks, config)
    assert {c.doc_id for c in chunks} == {d.doc_id for d in docs}  # every document has chunks
    assert all(c.chunk_id.startswith(c.doc_id.replace("::", ":") + "::") for c in chunks)
    for doc in docs:  # an independent formula finder: gaokao has no escaped '$'
        spans = [m.span() for m in _MATH.finditer(doc.text)]
        atomic_spans_respected(chunks, doc.doc_id, spans)
    assert chunk_documents(list(reversed(docs)), config) == chunks


DEMO_CORPUS = REPO_ROOT / "golden_sets" / "demo_maths" / "corpus"


def test_demo_corpus_invariants() -> None:
    if not any(DEMO_CORPUS.glob("*.md")):
        pytest.skip(f"no demo books in {DEMO_CORPUS} yet")
    docs = load_corpus(DEMO_CORPUS)
    config = ChunkConfig()
    chunks = chunk_documents(docs, config)
    check_invariants(docs, chunks, config)
    for doc in docs:
        assert doc.metadata["page_marks"], f"{doc.source} has page markers"
        spans = [m.span() for m in _MATH.finditer(doc.text)]
        atomic_spans_respected(chunks, doc.doc_id, spans)
    for c in chunks:  # every chunk of a paged book has pages, and its id says where it starts
        assert c.page_start is not None and c.page_end is not None and c.page_start <= c.page_end
        if c.kind == "child":
            assert f"::p{c.page_start}::child::" in c.chunk_id
