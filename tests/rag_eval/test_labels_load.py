"""The human-labels file: good lines load on the metric's scale, every malformed-line kind
gets its file:line message, and all errors of a file come together (nothing lost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval.labels.load import LabelsError, load_labels
from rag_eval.labels.model import Label


def _write(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def test_labels_load_on_the_metrics_scale_with_units_and_several_annotators(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            {"case": "demo-001", "metric": "judge.faithfulness", "label": 1, "annotator": "王老师"},
            {"case": "demo-001", "metric": "judge.faithfulness", "label": "no", "annotator": "li"},
            {
                "case": "demo-001",
                "metric": "judge.coverage",
                "label": "Partially covered",
                "annotator": "li",
                "fact": 2,
            },
            {
                "case": "demo-001",
                "metric": "judge.faithfulness",
                "label": "yes",
                "annotator": "li",
                "claim": 1,
                "note": "见第1段",
            },
            {"case": "demo-002", "metric": "judge.relevance", "label": 0.5, "annotator": "li"},
            "",
            {"case": "dlg-001", "metric": "dialogue.hint_success", "label": False, "annotator": "li"},
        ],
    )
    labels = load_labels(path)
    assert [(lb.case, lb.metric, lb.value, lb.annotator, lb.unit, lb.index, lb.verdict) for lb in labels] == [
        ("demo-001", "judge.faithfulness", 1.0, "王老师", None, None, None),
        ("demo-001", "judge.faithfulness", 0.0, "li", None, None, "no"),
        ("demo-001", "judge.coverage", 0.5, "li", "fact", 2, "partially_covered"),
        ("demo-001", "judge.faithfulness", 1.0, "li", "claim", 1, "yes"),
        ("demo-002", "judge.relevance", 0.5, "li", None, None, None),
        ("dlg-001", "dialogue.hint_success", 0.0, "li", None, None, None),
    ]
    assert labels[3].note == "见第1段" and labels[0].source == f"{path}:1" and labels[5].source == f"{path}:7"


GOOD = {"case": "c1", "metric": "judge.faithfulness", "label": 1, "annotator": "li"}

MALFORMED: list[tuple[object, str]] = [
    ("{not json", "not valid JSON"),
    ([1, 2], "each line must be a JSON object"),
    ({**GOOD, "lable": 1}, "unknown field(s) 'lable'"),
    ({k: v for k, v in GOOD.items() if k != "case"}, "missing or empty required field 'case'"),
    ({**GOOD, "metric": ""}, "missing or empty required field 'metric'"),
    ({**GOOD, "metric": "faithfulness"}, "metric 'faithfulness' is not a judged metric's key"),
    ({**GOOD, "metric": "retrieval.recall@5"}, "metric 'retrieval.recall@5' is not a judged metric's key"),
    ({**GOOD, "annotator": " "}, "missing or empty required field 'annotator'"),
    ({**GOOD, "label": None}, "label is empty; fill it with one of yes, no"),
    ({**GOOD, "label": 1.5}, "label 1.5 is outside [0, 1]"),
    ({**GOOD, "label": "NaN"}, "label 'NaN' is not a verdict of this scale"),
    ('{"case": "c1", "metric": "judge.faithfulness", "label": NaN, "annotator": "li"}', "label nan is outside [0, 1]"),
    ({**GOOD, "label": "maybe"}, "label 'maybe' is not a verdict of this scale"),
    ({**GOOD, "label": [1]}, "label must be a verdict word, true/false or a number in [0, 1], got list"),
    ({**GOOD, "claim": 1, "fact": 1}, "a label is for one claim or one key fact, not both"),
    ({**GOOD, "claim": 0}, "claim must be the 1-based number of the claim"),
    ({**GOOD, "fact": 1}, "a fact label belongs to metric 'judge.coverage', not 'judge.faithfulness'"),
    ({**GOOD, "claim": 1, "label": 0.5}, "a claim label is one of yes, no (1, 0), got 0.5"),
    (
        {**GOOD, "metric": "judge.coverage", "fact": 1, "label": "yes"},
        "label 'yes' is not a verdict of this scale; use one of covered",
    ),
    ({**GOOD, "note": 3}, "note must be a string"),
]


@pytest.mark.parametrize(("line", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_each_malformed_line_kind_gets_its_file_line_message(tmp_path: Path, line: object, message: str) -> None:
    path = _write(tmp_path, [GOOD, line])
    with pytest.raises(LabelsError) as err:
        load_labels(path)
    text = str(err.value)
    assert text.startswith(f"{path}:2") and message in text, text


def test_duplicate_label_and_every_error_of_a_file_together(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            GOOD,
            {**GOOD, "label": 0},
            {**GOOD, "annotator": "wang"},
            {**GOOD, "label": 7},
            "[]",
            {**GOOD, "case": "c2", "claim": 1, "label": "yes"},
            {**GOOD, "case": "c2", "claim": 1, "label": "no"},
        ],
    )
    path.write_bytes(path.read_bytes() + b'{"case": "c\xff"}\n')
    with pytest.raises(LabelsError) as err:
        load_labels(path)
    lines = str(err.value).splitlines()
    assert [line.split(":")[1].split(" ")[0] for line in lines] == ["2", "4", "5", "7", "8"]
    assert "duplicate id 'c1 · judge.faithfulness · li' (first at line 1)" in lines[0]
    assert "duplicate id 'c2 · judge.faithfulness claim 1 · li' (first at line 6)" in lines[3]
    assert "UTF-8" in lines[4] or "utf-8" in lines[4].lower()


def test_a_missing_or_empty_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="human-labels file not found"):
        load_labels(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(LabelsError, match="the human-labels file is empty"):
        load_labels(tmp_path / "empty.jsonl")


def test_a_label_id_names_case_metric_unit_and_person() -> None:
    assert Label("c", "judge.coverage", 1.0, "li", "fact", 2).id == "c · judge.coverage fact 2 · li"


SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "human-labels.schema.json"


def test_the_schema_in_docs_accepts_what_the_loader_accepts_and_refuses_the_malformed() -> None:
    import jsonschema

    from rag_eval.labels.load import parse_label

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = [
        GOOD,
        {**GOOD, "label": "no", "claim": 2},
        {**GOOD, "metric": "judge.coverage", "fact": 1, "label": 0.5},
        {**GOOD, "metric": "dialogue.hint_success", "label": True, "note": "好"},
    ]
    for raw in good:
        assert not list(validator.iter_errors(raw)), raw
        parse_label(raw, "x:1")
    for line, _ in MALFORMED:
        if isinstance(line, str):  # not JSON, or NaN: nothing for a schema to see
            continue
        assert list(validator.iter_errors(line)), line


def test_the_demo_labels_fixture_loads_and_names_judged_demo_cases() -> None:
    """tests/data/agent_labels/demo_faithfulness.jsonl (bench/judge_agreement.py): 44 labels, one per case,
    every case a golden id of the demo set."""
    import json

    root = Path(__file__).resolve().parents[2]
    labels = load_labels(root / "tests" / "data" / "agent_labels" / "demo_faithfulness.jsonl")
    golden = {
        json.loads(line)["id"]
        for line in (root / "golden_sets" / "demo_maths" / "golden.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    assert len(labels) == 44 and len({lb.case for lb in labels}) == 44
    assert {lb.case for lb in labels} <= golden
    assert {lb.value for lb in labels} == {0.0, 0.5, 1.0} and all(lb.metric == "judge.faithfulness" for lb in labels)
