"""Coverage gaps over tag dimensions: every cell counted, empty and thin cells found,
critical and high-priority cells first; ``validate --coverage --min N --fail-under``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.cli import main
from rag_eval.golden.coverage import DRAFTED_SCENARIOS, coverage_cells, gaps_table
from rag_eval.golden.load import parse_item
from rag_eval.golden.model import SCENARIOS, GoldenItem


def item(n: int, **tags: str) -> GoldenItem:
    raw: dict[str, Any] = {"id": f"q{n}", "question": f"问题{n}", "gold_doc_ids": ["d"], "tags": tags}
    return parse_item(raw, f"golden.jsonl:{n}")


ITEMS = [
    item(1, scenario="standard", difficulty="easy"),
    item(2, scenario="standard", difficulty="easy"),
    item(3, scenario="standard", difficulty="hard", critical="yes"),
    item(4, scenario="colloquial", difficulty="easy", priority="high"),
    item(5, scenario="colloquial", difficulty="easy"),
]


def test_cells_are_every_combination_of_the_values_with_their_counts() -> None:
    cells = coverage_cells(ITEMS, ["difficulty"], 2)
    assert {c.label: c.count for c in cells} == {"difficulty=easy": 4, "difficulty=hard": 1}
    assert [c.label for c in cells if c.thin] == ["difficulty=hard"]  # 1 < 2


def test_the_scenario_dimension_lists_every_drafted_scenario_even_when_empty() -> None:
    cells = coverage_cells(ITEMS, ["scenario"], 1)
    scenarios = {dict(c.values)["scenario"] for c in cells}
    assert scenarios == set(SCENARIOS) | set(DRAFTED_SCENARIOS)
    assert sum(c.count for c in cells) == len(ITEMS)
    assert {dict(c.values)["scenario"] for c in cells if c.thin} == scenarios - {"standard", "colloquial"}


def test_gaps_come_critical_first_then_by_priority_then_fewest_items() -> None:
    items = [
        item(1, difficulty="easy", topic="sets"),
        item(2, difficulty="easy", topic="sets"),
        item(3, difficulty="hard", topic="sets", critical="yes"),
        item(4, difficulty="easy", topic="logic", priority="high"),
    ]
    cells = coverage_cells(items, ["difficulty", "topic"], 3)
    # a value is critical / prioritised when an item carrying it is; a cell takes its values' most:
    # hard and sets are critical (item 3); easy and logic have priority high = 3 (item 4)
    assert [(c.label, c.count, c.critical, c.priority) for c in cells] == [
        ("difficulty=hard × topic=logic", 0, True, 3.0),
        ("difficulty=easy × topic=sets", 2, True, 3.0),
        ("difficulty=hard × topic=sets", 1, True, 0.0),
        ("difficulty=easy × topic=logic", 1, False, 3.0),
    ]
    assert all(c.thin for c in cells)  # each has fewer than 3
    assert (
        gaps_table(cells, 3).splitlines()[1]
        == "  difficulty=hard × topic=logic: 0 item(s) (critical, priority 3, empty)"
    )


def write_set(tmp_path: Path, items: list[GoldenItem]) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    return path


def test_validate_lists_thin_cells_and_fails_under_the_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = write_set(tmp_path, ITEMS)
    args = ["validate", "--golden-set", str(golden), "--coverage", "--dimension", "difficulty", "--min", "2"]
    assert main(args) == 0  # gaps are listed; without --fail-under they do not fail
    out = capsys.readouterr().out
    assert "coverage gaps: 1 of 2 cells have fewer than 2 item(s)" in out
    assert "difficulty=hard: 1 item(s) (critical, thin)" in out
    assert main([*args, "--fail-under"]) == 1
    assert "--fail-under: 1 cell(s) below --min 2" in capsys.readouterr().out
    assert main(["validate", "--golden-set", str(golden), "--coverage", "--dimension", "difficulty", "--min", "1",
                 "--fail-under"]) == 0  # fmt: skip
