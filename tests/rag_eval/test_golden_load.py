"""Golden set loading: the project's layout, the shared datasets' layout (the real files),
derived splits, and an error naming file:line and the item id for every mistake."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from rag_eval.golden.load import MAX_QUESTION_CHARS, GoldenSetError, derived_split, load_golden_set, parse_item
from rag_eval.golden.model import EvidenceGroup, EvidenceRef, GoldenItem, KeyFact
from tests.support.datasets import DATASETS

SHARED = DATASETS
GAOKAO = SHARED / "gaokao_math_public" / "qa.jsonl"
SQUAD20 = SHARED / "squad20_public" / "qa.jsonl"


def write_lines(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines) + "\n",
        encoding="utf-8",
    )
    return path


def error_of(tmp_path: Path, *lines: Any) -> str:
    path = write_lines(tmp_path, *lines)
    with pytest.raises(GoldenSetError) as info:
        load_golden_set(path)
    return str(info.value)


OK = {"id": "ok-1", "question": "集合的子集有几个？", "evidence": [{"doc_id": "bixiu1", "quote": "子集个数为 $2^n$"}]}


# --------------------------------------------------------------------------- own layout


def test_own_layout_full_item(tmp_path: Path) -> None:
    raw = {
        "id": "demo-001",
        "question": "一个集合有n个元素，它的子集有多少个？",
        "history": [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}],
        "tags": {"scenario": "multi-chunk", "topic": "set", "level": 2},
        "evidence": [
            {"doc_id": "bixiu1", "quote": "子集个数为 $2^n$"},
            {"any_of": [{"chunk_id": "bixiu1::集合::child::1"}, {"doc_id": "bixiu2"}]},
            "bixiu1::集合::child::3",
        ],
        "key_facts": [
            "每个元素选或不选",
            {"fact": "子集个数为2^n", "source": {"doc_id": "bixiu1", "quote": "子集个数为 $2^n$"}},
        ],
        "reference_answer": "2^n 个",
        "must_contain": ["2^n"],
        "must_not_contain": ["答案是"],
        "expected_action": "answer",
        "split": "holdout",
        "corpus": {"name": "demo_maths", "sha256": "abc"},
    }
    path = write_lines(tmp_path, "", raw)  # a blank first line: the item is on line 2
    (item,) = load_golden_set(path)
    assert item.id == "demo-001"
    assert item.source == f"{path}:2"
    assert item.history == ({"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"})
    assert item.tags == {"scenario": "multi-chunk", "topic": "set", "level": "2"}
    assert item.evidence == (
        EvidenceGroup((EvidenceRef(doc_id="bixiu1", quote="子集个数为 $2^n$"),)),
        EvidenceGroup((EvidenceRef(chunk_id="bixiu1::集合::child::1"), EvidenceRef(doc_id="bixiu2"))),
        EvidenceGroup((EvidenceRef(chunk_id="bixiu1::集合::child::3"),)),
    )
    assert item.key_facts == (
        KeyFact("每个元素选或不选"),
        KeyFact("子集个数为2^n", EvidenceRef(doc_id="bixiu1", quote="子集个数为 $2^n$")),
    )
    assert (item.reference_answer, item.must_contain, item.must_not_contain) == ("2^n 个", ("2^n",), ("答案是",))
    assert (item.expected_action, item.split, item.corpus_name, item.corpus_sha256) == (
        "answer",
        "holdout",
        "demo_maths",
        "abc",
    )
    assert not item.is_negative and item.scenario == "multi-chunk"
    assert item.gold_doc_ids == frozenset({"bixiu1", "bixiu2"})


def test_defaults_of_a_minimal_item(tmp_path: Path) -> None:
    (item,) = load_golden_set(write_lines(tmp_path, OK))
    assert item.tags == {"scenario": "standard"}
    assert item.expected_action == "answer"
    assert item.split in ("tune", "holdout")
    assert item.history == () and item.key_facts == () and item.extra == {}


def test_an_item_without_evidence_is_a_negative_expecting_refusal(tmp_path: Path) -> None:
    (item,) = load_golden_set(write_lines(tmp_path, {"id": "neg", "question": "黎曼猜想证明了吗？"}))
    assert item.is_negative
    assert item.scenario == "negative"
    assert item.expected_action == "refuse"


def test_tags_as_a_list(tmp_path: Path) -> None:
    (item,) = load_golden_set(write_lines(tmp_path, {**OK, "tags": ["scenario:colloquial", "topic:set", "hard"]}))
    assert item.tags == {"scenario": "colloquial", "topic": "set", "tag": "hard"}


def test_any_of_groups_are_alternatives(tmp_path: Path) -> None:
    raw = {
        **OK,
        "evidence": [{"any_of": [{"doc_id": "a", "quote": "x"}, {"doc_id": "b", "quote": "y"}]}, {"doc_id": "c"}],
    }
    (item,) = load_golden_set(write_lines(tmp_path, raw))
    assert len(item.evidence) == 2  # two requirements
    assert [r.doc_id for r in item.evidence[0].any_of] == ["a", "b"]
    assert item.evidence[0].to_dict() == {"any_of": [{"doc_id": "a", "quote": "x"}, {"doc_id": "b", "quote": "y"}]}
    assert item.evidence[1].to_dict() == {"doc_id": "c"}


def test_gold_doc_ids_become_one_group_of_alternatives(tmp_path: Path) -> None:
    raw = {"id": "g", "question": "q", "gold_doc_ids": ["d1", "d2"], "gold_chunk_ids": ["c1", "c2"]}
    (item,) = load_golden_set(write_lines(tmp_path, raw))
    assert item.evidence == (
        EvidenceGroup((EvidenceRef(chunk_id="c1"),)),
        EvidenceGroup((EvidenceRef(chunk_id="c2"),)),
        EvidenceGroup((EvidenceRef(doc_id="d1"), EvidenceRef(doc_id="d2"))),
    )


def test_to_dict_round_trips_through_parse(tmp_path: Path) -> None:
    raw = {
        **OK,
        "tags": {"scenario": "standard"},
        "split": "tune",
        "key_facts": [{"fact": "f", "source": {"chunk_id": "c"}}],
    }
    item = parse_item(raw, "f.jsonl:1")
    again = parse_item(item.to_dict(), "f.jsonl:1")
    assert again == item


# --------------------------------------------------------------------------- shared layout, real files


@pytest.fixture(scope="module")
def gaokao() -> list[GoldenItem]:
    return load_golden_set(GAOKAO)


@pytest.fixture(scope="module")
def squad20() -> list[GoldenItem]:
    return load_golden_set(SQUAD20)


def test_gaokao_loads_as_it_is(gaokao: list[GoldenItem]) -> None:
    manifest = json.loads((GAOKAO.parent / "manifest.json").read_text(encoding="utf-8"))
    assert len(gaokao) == manifest["n_questions"] == 453
    assert sum(1 for i in gaokao if not i.is_negative) == manifest["n_questions_with_gold"] == 453
    first = gaokao[0]
    assert first.id == "gaokao_math:q:Math_I_MCQs:0"
    # two gold docs = the same problem in two papers: one requirement with two alternatives
    assert first.evidence == (
        EvidenceGroup(
            (EvidenceRef(doc_id="gaokao_math:Math_I_MCQs:0"), EvidenceRef(doc_id="gaokao_math:Math_II_MCQs:0"))
        ),
    )
    assert first.answers == ("D",) and first.reference_answer == "D"
    assert first.extra == {"qtype": "选择题", "year": "2010"}
    assert first.source == f"{GAOKAO}:1"
    assert all(len(i.evidence) == 1 for i in gaokao)


def test_squad20_negatives_come_from_is_impossible(squad20: list[GoldenItem]) -> None:
    manifest = json.loads((SQUAD20.parent / "manifest.json").read_text(encoding="utf-8"))
    assert len(squad20) == manifest["n_questions"] == 6890
    negatives = [i for i in squad20 if i.is_negative]
    assert len(negatives) == 6890 - manifest["n_questions_with_gold"] == 3435
    assert all(i.extra["is_impossible"] for i in negatives)
    assert not any(i.extra["is_impossible"] for i in squad20 if not i.is_negative)
    assert all(i.expected_action == "refuse" and i.scenario == "negative" for i in negatives)
    assert all(i.reference_answer == "" for i in negatives)  # null in the file
    neg = next(i for i in negatives if i.id == "squad20:5ad39d53604f3c001a3fe8d1")
    assert neg.extra["source_doc_id"] == "squad20:Normans#0"


def _article(doc_id: str) -> str:
    return doc_id.split("#")[0]


def test_squad20_splits_are_keyed_by_article(squad20: list[GoldenItem]) -> None:
    split_of_article: dict[str, set[str]] = defaultdict(set)
    for item in squad20:
        split_of_article[_article(str(item.extra["source_doc_id"]))].add(item.split)
    # every article (negatives included, through source_doc_id) lands in exactly one split
    assert all(len(s) == 1 for s in split_of_article.values()), {
        a: s for a, s in split_of_article.items() if len(s) > 1
    }
    per_split = Counter(next(iter(s)) for s in split_of_article.values())
    assert per_split["tune"] > 0 and per_split["holdout"] > 0, per_split


def test_gaokao_splits_never_share_a_gold_doc(gaokao: list[GoldenItem]) -> None:
    split_of_doc: dict[str, set[str]] = defaultdict(set)
    for item in gaokao:
        for d in item.gold_doc_ids:
            split_of_doc[d].add(item.split)
    assert all(len(s) == 1 for s in split_of_doc.values())
    counts = Counter(i.split for i in gaokao)
    assert counts["tune"] > 0 and counts["holdout"] > 0, counts


def test_derived_splits_are_stable(squad20: list[GoldenItem]) -> None:
    again = load_golden_set(SQUAD20)
    assert [i.split for i in again] == [i.split for i in squad20]


def test_derived_split_rule() -> None:
    import hashlib

    def expected(key: str) -> str:
        return (
            "holdout" if int(hashlib.sha256(f"rag-eval-split-v1|{key}".encode()).hexdigest(), 16) % 3 == 0 else "tune"
        )

    group = (EvidenceGroup((EvidenceRef(doc_id="squad20:Normans#3"),)),)
    # keyed by the article, so every paragraph of it gets the same split
    assert derived_split({"id": "q1"}, group) == expected("squad20:Normans")
    assert derived_split({"id": "q2", "source_doc_id": "squad20:Normans#0"}, ()) == expected("squad20:Normans")
    # no document at all: keyed by the id
    assert derived_split({"id": "lonely"}, ()) == expected("lonely")
    # an explicit split wins over the derived one
    raw = {"id": "x", "question": "q", "gold_doc_ids": ["squad20:Normans#0"], "split": "tune"}
    assert parse_item(raw, "f:1").split == "tune"
    raw["split"] = "holdout"
    assert parse_item(raw, "f:1").split == "holdout"


# --------------------------------------------------------------------------- errors: file:line and id


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    msg = error_of(tmp_path, OK, '{"id": "x", "question": }')
    assert msg.startswith(f"{tmp_path / 'golden.jsonl'}:2: not valid JSON (Expecting value at column 25)")


def test_non_object_line(tmp_path: Path) -> None:
    msg = error_of(tmp_path, ["id", "question"])
    assert msg == f"{tmp_path / 'golden.jsonl'}:1: each line must be a JSON object, got list"


@pytest.mark.parametrize(
    ("raw", "field"),
    [({"question": "q"}, "id"), ({"id": " ", "question": "q"}, "id"), ({"id": 7, "question": "q"}, "id")],
)
def test_missing_id(tmp_path: Path, raw: dict[str, Any], field: str) -> None:
    msg = error_of(tmp_path, raw)
    assert msg == f"{tmp_path / 'golden.jsonl'}:1: missing or empty required field {field!r} (a non-empty string)"


def test_missing_question_names_the_id(tmp_path: Path) -> None:
    msg = error_of(tmp_path, {"id": "q-7"})
    assert (
        msg
        == f"{tmp_path / 'golden.jsonl'}:1 (id 'q-7'): missing or empty required field 'question' (a non-empty string)"
    )


def test_unknown_field_names_the_id_and_lists_valid_fields(tmp_path: Path) -> None:
    msg = error_of(tmp_path, {**OK, "qestion": "typo", "gold": []})
    assert msg.startswith(
        f"{tmp_path / 'golden.jsonl'}:1 (id 'ok-1'): unknown field(s) 'gold', 'qestion'; valid fields: "
    )
    for name in ("question", "evidence", "gold_doc_ids", "key_facts", "split", "is_impossible", "source_doc_id"):
        assert name in msg


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (7, "evidence must be a list of requirements"),
        ([7], "evidence entries are objects like"),
        ([{"doc": "x"}], "unknown evidence key(s) ['doc']; use chunk_id, doc_id, quote"),
        ([{"quote": "x"}], "an evidence entry needs chunk_id or doc_id"),
        ([{"chunk_id": "c", "quote": "x"}], "a quote needs its doc_id and must not be empty"),
        ([{"doc_id": "d", "quote": "  "}], "a quote needs its doc_id and must not be empty"),
        ([{"doc_id": "d", "quote": 5}], "evidence quote must be a string, got 5"),
        ([{"doc_id": 7}], "evidence doc_id must be a string, got 7"),
        ([{"any_of": []}], "any_of must be a non-empty list"),
        ([{"any_of": "d"}], "any_of must be a non-empty list"),
    ],
)
def test_bad_evidence_entries(tmp_path: Path, evidence: Any, expected: str) -> None:
    msg = error_of(tmp_path, {"id": "ev", "question": "q", "evidence": evidence})
    assert msg.startswith(f"{tmp_path / 'golden.jsonl'}:1 (id 'ev'): {expected}"), msg


def test_duplicate_id_names_the_first_line(tmp_path: Path) -> None:
    other = {"id": "other", "question": "q2"}
    msg = error_of(tmp_path, OK, other, "", {**OK, "question": "again"})
    assert msg == f"{tmp_path / 'golden.jsonl'}:4: duplicate id 'ok-1' (first at line 1); ids must be unique"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"tags": "scenario=standard"}, 'tags must be an object like {"scenario": "standard"}'),
        (
            {"history": [{"role": "system", "content": "x"}]},
            'history is a list of {"role": "user"|"assistant", "content": ...}',
        ),
        ({"history": {"role": "user"}}, "history is a list of"),
        ({"key_facts": "fact"}, "key_facts must be a list"),
        ({"key_facts": [{"text": "f"}]}, 'a key fact is a string or {"fact": ..., "source": {...}}'),
        ({"key_facts": [{"fact": "f", "source": {"doc": "d"}}]}, "unknown evidence key(s) ['doc']"),
        ({"expected_action": "answers"}, "expected_action 'answers' is not one of answer, refuse, clarify"),
        ({"split": "test"}, "split 'test' is not one of tune, holdout"),
        ({"corpus": "demo"}, 'corpus must be an object {"name": ..., "sha256": ...}'),
        ({"must_contain": "2^n"}, "must_contain must be a list of strings"),
        ({"answers": [1]}, "answers must be a list of strings"),
        ({"reference_answer": 3}, "reference_answer must be a string"),
    ],
)
def test_bad_fields_name_file_line_and_id(tmp_path: Path, extra: dict[str, Any], expected: str) -> None:
    msg = error_of(tmp_path, {"id": "bad", "question": "q", "evidence": [{"doc_id": "d"}], **extra})
    assert msg.startswith(f"{tmp_path / 'golden.jsonl'}:1 (id 'bad'): {expected}"), msg


def test_all_errors_of_a_file_are_reported_together(tmp_path: Path) -> None:
    msg = error_of(tmp_path, OK, "not json", {"id": "x", "question": "q", "split": "test"}, [1])
    lines = msg.splitlines()
    assert [line.split(":")[1].split(" ")[0] for line in lines] == ["2", "3", "4"]


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(GoldenSetError, match=r"golden\.jsonl: the golden set is empty"):
        load_golden_set(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GoldenSetError, match=r"nope\.jsonl: golden set not found"):
        load_golden_set(tmp_path / "nope.jsonl")


# --------------------------------------------------------------------------- hostile files (issue 26.9, 26.12, 26.15)


def write_bytes(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_bytes(data)
    return path


def test_invalid_utf8_names_file_line_and_column_not_a_traceback(tmp_path: Path) -> None:
    good = json.dumps(OK, ensure_ascii=False).encode()
    path = write_bytes(tmp_path, good + b'\n{"id": "b", "question": "' + "集合".encode() + b'caf\xff?"}\n')
    with pytest.raises(GoldenSetError) as info:
        load_golden_set(path)
    assert str(info.value) == f"{path}:2: byte 0xff at column 31 is not UTF-8; save the file as UTF-8"


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = write_bytes(tmp_path, b"\xef\xbb\xbf" + json.dumps(OK, ensure_ascii=False).encode() + b"\n")
    assert [i.id for i in load_golden_set(path)] == ["ok-1"]


def test_a_byte_order_mark_past_the_first_line_is_still_an_error(tmp_path: Path) -> None:
    line = json.dumps(OK, ensure_ascii=False).encode()
    path = write_bytes(tmp_path, line + b"\n\xef\xbb\xbf" + line.replace(b"ok-1", b"ok-2") + b"\n")
    with pytest.raises(GoldenSetError, match=r"golden\.jsonl:2: not valid JSON"):
        load_golden_set(path)


def test_deep_nesting_names_file_and_line_not_a_recursion_traceback(tmp_path: Path) -> None:
    msg = error_of(tmp_path, OK, '{"id": "deep", "question": "q", "tags": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert msg.startswith(f"{tmp_path / 'golden.jsonl'}:2: nested too deeply to read"), msg


def test_a_control_character_message_reads_once_at_column(tmp_path: Path) -> None:
    msg = error_of(tmp_path, '{"id": "c", "question": "tab\there"}')
    assert msg == f"{tmp_path / 'golden.jsonl'}:1: not valid JSON (Invalid control character at column 29)", msg


def test_ids_that_differ_only_by_unicode_normalisation_are_flagged(tmp_path: Path) -> None:
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    msg = error_of(tmp_path, {**OK, "id": nfc}, {**OK, "id": nfd})
    assert msg == (
        f"{tmp_path / 'golden.jsonl'}:2: id {nfd!r} differs from id {nfc!r} (line 1) only by Unicode "
        "normalisation (NFC/NFD): they look the same in every report; make the ids distinct"
    )


def test_a_question_longer_than_the_limit_names_file_line_id_and_the_limit(tmp_path: Path) -> None:
    at_limit = {**OK, "id": "at", "question": "问" * MAX_QUESTION_CHARS}
    assert len(load_golden_set(write_lines(tmp_path, at_limit))[0].question) == MAX_QUESTION_CHARS
    msg = error_of(tmp_path, at_limit, {**OK, "id": "huge", "question": "x" * 5_000_000})
    assert msg.startswith(
        f"{tmp_path / 'golden.jsonl'}:2 (id 'huge'): question is 5,000,000 characters, more than the limit of "
        f"{MAX_QUESTION_CHARS:,} (docs/golden-sets.md#limits)"
    ), msg


def test_a_history_turn_longer_than_the_limit_is_refused(tmp_path: Path) -> None:
    msg = error_of(tmp_path, {**OK, "history": [{"role": "user", "content": "y" * (MAX_QUESTION_CHARS + 1)}]})
    assert "(id 'ok-1'): history[0].content is 8,001 characters" in msg


# --------------------------------------------------------------------------- model


def test_evidence_ref_labels() -> None:
    assert EvidenceRef(chunk_id="c1").label == "c1"
    assert EvidenceRef(doc_id="d").label == "d"
    assert EvidenceRef(doc_id="d", quote="short").label == "d: “short”"
    long = "x" * 30
    assert EvidenceRef(doc_id="d", quote=long).label == f"d: “{'x' * 23}…”"


def test_has_tag_and_scenario_default() -> None:
    item = GoldenItem(id="i", question="q", tags={"topic": "set"})
    assert item.has_tag("topic", "set") and not item.has_tag("topic", "logic")
    assert item.scenario == "negative"  # no evidence and no scenario tag
