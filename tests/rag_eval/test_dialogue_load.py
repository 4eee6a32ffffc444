"""Dialogue sets: the shipped demo set loads and matches the schema; each mistake is
refused by the loader (naming file:line, the field and the fix) and by the schema alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rag_eval.dialogue.load import DialogueSetError, load_dialogue_set, parse_dialogue
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import EvidenceGroup, EvidenceRef

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "dialogue-set.schema.json").read_text(encoding="utf-8"))
SHIPPED = sorted(ROOT.glob("golden_sets/*/dialogues.jsonl"))

OK: dict[str, Any] = {
    "id": "d-1",
    "opening": "这个二次函数的最小值怎么求？",
    "context": {"problem": "求 f(x)=x^2-6x+5 的最小值"},
    "target_intent": "solve_problem",
    "known": [{"name": "function", "value": "f(x)=x^2-6x+5", "keywords": ["哪个函数"]}],
    "conditions": [{"name": "interval", "keywords": ["区间", "interval"], "reply": "在 [1,4] 上"}],
    "expected_turns": [
        {"action": "clarify", "asks": ["interval"]},
        {"action": "answer", "hint_level": "reminder"},
        {"action": "answer", "hint_level": "approach"},
    ],
    "follow_ups": ["再具体一点"],
    "forbidden": ["f(3)=-4"],
    "evidence": [{"doc_id": "bixiu1", "quote": "对称轴 $x=3\\in[1,4]$"}],
    "split": "tune",
    "tags": {"scenario": "missing-condition"},
}


def write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "dialogues.jsonl"
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_a_dialogue_set_is_shipped() -> None:
    assert [p.parent.name for p in SHIPPED] == ["demo_maths"]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_shipped_dialogue_matches_the_schema_and_loads(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        raw = json.loads(line)
        errors = [e.message for e in validator.iter_errors(raw)]
        assert not errors, f"{path}:{lineno}: {errors}"
        parse_dialogue(raw, f"{path}:{lineno}")
    assert len(load_dialogue_set(path)) == len(path.read_text(encoding="utf-8").splitlines())


def test_a_full_item_loads_into_the_model(tmp_path: Path) -> None:
    path = write(tmp_path, "", OK)
    (item,) = load_dialogue_set(path)
    assert item.source == f"{path}:2"
    assert [t.action for t in item.expected_turns] == ["clarify", "answer", "answer"]
    assert item.expected_turns[0].asks == ("interval",)
    assert [t.hint_level for t in item.expected_turns] == [None, "reminder", "approach"]
    assert item.condition("interval") is not None and item.condition("interval").reply == "在 [1,4] 上"  # type: ignore[union-attr]
    assert item.known[0].value == "f(x)=x^2-6x+5"
    assert item.evidence == (EvidenceGroup((EvidenceRef(doc_id="bixiu1", quote="对称轴 $x=3\\in[1,4]$"),)),)
    assert item.material_sufficient and item.clarification_limit == 3
    assert item.needs_clarification and item.should_be_guided
    assert item.cannot_answer_line == "我不记得了"
    assert item.intent_label(item.expected_turns[1]) == "solve_problem"


def test_to_dict_round_trips_and_the_golden_view_keeps_the_gold(tmp_path: Path) -> None:
    (item,) = load_dialogue_set(write(tmp_path, OK))
    again = DialogueItem.from_dict(json.loads(json.dumps(item.to_dict())))
    assert again == DialogueItem(**{**item.__dict__, "source": ""})
    golden = item.to_golden_item()
    assert (golden.question, golden.evidence, golden.must_not_contain, golden.expected_action) == (
        item.opening,
        item.evidence,
        ("f(3)=-4",),
        "clarify",
    )


def test_defaults_material_from_evidence_and_cannot_answer_from_the_language(tmp_path: Path) -> None:
    raw = {"id": "n-1", "opening": "Can you explain L'Hopital's rule?", "expected_turns": [{"action": "state_limits"}]}
    (item,) = load_dialogue_set(write(tmp_path, raw))
    assert not item.material_sufficient
    assert item.cannot_answer_line == "I don't remember"


BAD = [
    ({k: v for k, v in OK.items() if k != "opening"}, "missing or empty required field 'opening'"),
    ({**OK, "colour": "red"}, "unknown field(s) 'colour'"),
    ({**OK, "expected_turns": [{"action": "guess"}]}, "action 'guess' is not one of clarify, answer, state_limits"),
    (
        {**OK, "expected_turns": [{"action": "answer", "hint_level": "solution"}]},
        "hint_level 'solution' must be one of reminder",
    ),
    (
        {**OK, "expected_turns": [{"action": "clarify", "asks": ["book"]}, {"action": "answer"}]},
        "asks ['book'] not among the item's conditions",
    ),
    ({**OK, "expected_turns": [{"action": "clarify", "asks": ["interval"]}]}, "is the last turn and 'clarify'"),
    ({**OK, "follow_ups": []}, "0 follow-up(s) for 1 answer/state_limits turn(s)"),
    ({**OK, "evidence": []}, "no gold evidence but an expected 'answer' turn"),
    ({**OK, "conditions": [{"name": "interval", "keywords": []}]}, "keywords must list the words"),
    ({**OK, "forbidden": ["  "]}, "forbidden: "),
    ({**OK, "evidence": [{"quote": "no doc"}]}, "an evidence entry needs chunk_id or doc_id"),
    # issue 26.9: a documented length limit on what the student sends, with file:line
    ({**OK, "opening": "问" * 8_001}, "opening is 8,001 characters, more than the limit of 8,000"),
    ({**OK, "follow_ups": ["x" * 9_000]}, "follow_ups[0] is 9,000 characters, more than the limit of 8,000"),
    (
        {**OK, "conditions": [{"name": "interval", "keywords": ["区间"], "reply": "y" * 8_001}]},
        "reply is 8,001 characters",
    ),
]


@pytest.mark.parametrize(("raw", "message"), BAD, ids=[m for _, m in BAD])
def test_schema_and_loader_reject_the_same_bad_items(tmp_path: Path, raw: dict[str, Any], message: str) -> None:
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(raw)) or message in (
        # the schema cannot count follow-ups, look up condition names or see evidence: the loader does
        "asks ['book'] not among the item's conditions",
        "is the last turn and 'clarify'",
        "0 follow-up(s) for 1 answer/state_limits turn(s)",
        "no gold evidence but an expected 'answer' turn",
    )
    path = write(tmp_path, raw)
    with pytest.raises(DialogueSetError) as info:
        load_dialogue_set(path)
    assert f"{path}:1" in str(info.value) and message in str(info.value)


def test_too_many_clarifying_turns_for_the_limit(tmp_path: Path) -> None:
    raw = {
        **OK,
        "clarification_limit": 1,
        "expected_turns": [
            {"action": "clarify", "asks": ["interval"]},
            {"action": "clarify", "asks": ["interval"]},
            {"action": "answer"},
        ],
    }
    with pytest.raises(DialogueSetError, match="2 clarifying turns exceed clarification_limit=1"):
        load_dialogue_set(write(tmp_path, raw))


def test_all_errors_of_a_file_come_together_with_their_lines(tmp_path: Path) -> None:
    path = write(tmp_path, OK, "{not json", {**OK, "id": "d-1"})
    with pytest.raises(DialogueSetError) as info:
        load_dialogue_set(path)
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"{path}:2: not valid JSON")
    assert lines[1] == f"{path}:3: duplicate id 'd-1' (first at line 1); ids must be unique"


def test_a_missing_file_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(DialogueSetError, match="dialogue set not found"):
        load_dialogue_set(tmp_path / "nope.jsonl")


def test_invalid_utf8_and_a_byte_order_mark(tmp_path: Path) -> None:
    """Issue 26.12/26.15: a bad byte is file:line, not a UnicodeDecodeError; a BOM is accepted."""
    line = json.dumps(OK, ensure_ascii=False).encode()
    path = tmp_path / "dialogues.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line + b"\n")
    assert [d.id for d in load_dialogue_set(path)] == ["d-1"]
    path.write_bytes(line + b"\n" + line.replace(b'"d-1"', b'"d-\xe9"') + b"\n")
    with pytest.raises(DialogueSetError) as info:
        load_dialogue_set(path)
    assert str(info.value) == f"{path}:2: byte 0xe9 at column 11 is not UTF-8; save the file as UTF-8"
