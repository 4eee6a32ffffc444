"""Gold modes: corpus, ids and text, the id map, and the corpus-mode id check."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.types import Document
from rag_eval.adapters import AdapterConfigError
from rag_eval.adapters.gold import GoldMismatch, GoldSpace, IdMapEntry, load_id_map
from rag_eval.core.contract import Retrieval, RetrievedItem
from rag_eval.golden.model import EvidenceGroup, EvidenceRef, GoldenItem

DOCS = [
    Document("alg", "Algebra", "The quadratic formula solves ax^2+bx+c=0.  Completing the square derives it."),
    Document("geo", "Geometry", "Pythagoras: a^2 + b^2 = c^2 for right triangles."),
]


def item(*groups: tuple[EvidenceRef, ...]) -> GoldenItem:
    return GoldenItem(id="q1", question="q", evidence=tuple(EvidenceGroup(g) for g in groups))


def space(mode: str, id_map: dict[str, IdMapEntry] | None = None) -> GoldSpace:
    return GoldSpace(mode, DOCS, [], id_map)


def scored(sp: GoldSpace, gold_item: GoldenItem, *items: RetrievedItem):  # type: ignore[no-untyped-def]
    result = sp.retrieval_result("q", Retrieval(items))
    return result, sp.resolve(gold_item, result.trace.stages[-1].ids)


def test_text_mode_matches_a_quote_inside_returned_text_ignoring_whitespace() -> None:
    sp = space("text")
    gold_item = item((EvidenceRef(doc_id="alg", quote="Completing the\nsquare derives it"),))

    result, gold = scored(
        sp,
        gold_item,
        RetrievedItem("s9", "nothing here", 0.9, {"doc_id": "x"}),
        RetrievedItem("s1", "...c=0. Completing  the square derives it.", 0.5, {"doc_id": "x"}),
    )

    assert gold.child_groups == (frozenset({"s1"}),)
    assert gold.doc_groups == (frozenset({"alg"}),)
    assert [c.chunk_id for c in result.context] == ["s9", "s1"]


def test_text_mode_with_no_match_keeps_a_requirement_nothing_satisfies() -> None:
    sp = space("text")
    _, gold = scored(sp, item((EvidenceRef(doc_id="geo", quote="Pythagoras"),)), RetrievedItem("s1", "other", 1.0))

    assert gold.child_groups == (frozenset({"?unmatched:q1:1"}),)


def test_ids_mode_maps_service_ids_and_documents_through_the_id_map() -> None:
    id_map = {"seg-7": IdMapEntry(chunk_id="alg::c1", doc_id="alg"), "dify-doc-geo": IdMapEntry(doc_id="geo")}
    sp = space("ids", id_map)
    gold_item = item((EvidenceRef(chunk_id="alg::c1"),), (EvidenceRef(doc_id="geo"),))

    result, gold = scored(
        sp,
        gold_item,
        RetrievedItem("seg-3", "", 0.9, {"doc_id": "dify-doc-geo"}),
        RetrievedItem("seg-7", "", 0.8, {"doc_id": "whatever"}),
    )

    assert result.trace.stages[-1].ids == ["seg-3", "alg::c1"]
    assert (sp.doc_of["seg-3"], sp.doc_of["alg::c1"]) == ("geo", "alg")
    assert gold.child_groups is None  # one requirement is a whole document: document level only
    assert gold.doc_groups == (frozenset({"alg"}), frozenset({"geo"}))


def test_ids_mode_counts_a_quote_as_its_whole_document() -> None:
    sp = space("ids")
    _, gold = scored(
        sp, item((EvidenceRef(doc_id="alg", quote="quadratic formula"),)), RetrievedItem("c", "quadratic formula")
    )

    assert gold.child_groups is None and gold.doc_groups == (frozenset({"alg"}),)


def test_corpus_mode_says_when_no_returned_id_is_a_local_chunk() -> None:
    sp = space("corpus")
    with pytest.raises(
        GoldMismatch, match=r"none of the 1 returned ids \(e.g. 'seg-1'\) is a chunk id of the local corpus"
    ):
        sp.retrieval_result("q", Retrieval((RetrievedItem("seg-1"),)))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("m.csv", "id,doc\nx,y\n", "the first line must be the header service_id,chunk_id,doc_id"),
        ("m.csv", "service_id,chunk_id,doc_id\nx,,\n", "needs a service_id and a chunk_id or doc_id"),
        ("m.csv", "service_id,doc_id\nx,a\nx,b\n", "service_id 'x' is mapped twice"),
        ("m.jsonl", '{"service_id": "x", "doc_id": "a"}\nnot json\n', "m.jsonl:2: not JSON"),
    ],
)
def test_a_bad_id_map_names_the_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AdapterConfigError, match=message):
        load_id_map(path)


def test_an_id_map_reads_csv_with_comments_and_jsonl(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("# note\nservice_id,chunk_id,doc_id\na,c1,\nb,,d2\n", encoding="utf-8")
    (tmp_path / "m.jsonl").write_text('{"service_id": "a", "chunk_id": "c1"}\n', encoding="utf-8")

    assert load_id_map(tmp_path / "m.csv") == {"a": IdMapEntry("c1", None), "b": IdMapEntry(None, "d2")}
    assert load_id_map(tmp_path / "m.jsonl") == {"a": IdMapEntry("c1", None)}
