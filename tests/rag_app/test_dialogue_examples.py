"""Worked examples read from parent sections: statement, solution, parts, where a chunk lies."""

from __future__ import annotations

from rag_app.dialogue.examples import ExampleCatalog, parse_examples
from rag_app.types import Chunk

SECTION = """## 1.4 充分条件与必要条件

怎样快速判断？可以把条件看成集合。

### 例5 判断条件类型

（1）"$x>2$"是"$x^2>4$"的什么条件？

解：所以是充分不必要条件。

（2）"$x^2-3x+2=0$"是"$x=1$"的什么条件？

解：所以是必要不充分条件。

### 例6 由包含关系求参数

已知 $B\\subseteq A$，求 $m$ 的取值范围。

解：分两种情况。

（1）若 $B=\\varnothing$，则 $m<2$。

（2）若 $B\\ne\\varnothing$，则 $2\\le m\\le 3$。
"""


def _parent(text: str = SECTION, book: str = "必修第一册", doc: str = "bixiu1", start: int = 100) -> Chunk:
    return Chunk(
        f"{book}::1.4::parent",
        doc,
        text,
        "parent",
        None,
        book,
        "1.4 充分条件与必要条件",
        4,
        5,
        start,
        start + len(text),
    )


def test_statement_solution_and_parts() -> None:
    ex5, ex6 = parse_examples(_parent())
    assert (ex5.number, ex5.title, ex5.book) == (5, "判断条件类型", "必修第一册")
    assert ex5.statement.startswith("（1）") and ex5.solution.startswith("解：")
    assert ex5.parts == (1, 2)  # the second sub-question is a line of the block ending in ？
    assert ex6.parts == ()  # （1）（2） of a case analysis are no parts
    assert ex5.label == "必修第一册 例5（判断条件类型）"


def test_catalog_by_number_book_and_chunk_offsets() -> None:
    other = _parent(SECTION.replace("例6", "例7"), book="必修第二册", doc="bixiu2")
    catalog = ExampleCatalog.from_chunks({c.chunk_id: c for c in (_parent(), other)})
    assert [e.book for e in catalog.numbered(5)] == ["必修第一册", "必修第二册"]
    assert [e.book for e in catalog.numbered(5, ["必修第二册"])] == ["必修第二册"]
    assert catalog.numbered(9) == []
    inside = SECTION.index("已知 $B")
    child = Chunk(
        "c",
        "bixiu1",
        "已知",
        "child",
        "必修第一册::1.4::parent",
        "必修第一册",
        "",
        4,
        4,
        100 + inside,
        100 + inside + 20,
    )
    found = catalog.containing(child)
    assert found is not None and found.number == 6
    intro = Chunk("i", "bixiu1", "怎样", "child", "必修第一册::1.4::parent", "必修第一册", "", 4, 4, 100, 110)
    assert catalog.containing(intro) is None  # the explanation before the first example
