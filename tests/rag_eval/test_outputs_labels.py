"""The human-labels block in the terminal lines, the Markdown summary and the HTML report
(``rag_eval.outputs.labels``): one row per labelled metric, the labels left out listed,
user-supplied text escaped in each output, and the block round-trips through the typed
results and the schema."""

from __future__ import annotations

import dataclasses
from typing import Any

from rag_eval.labels.compare import compare_labels
from rag_eval.labels.model import Label
from rag_eval.outputs.html import render_html
from rag_eval.outputs.labels import label_rows, terminal_lines
from rag_eval.outputs.markdown import render_markdown
from rag_eval.results.file import check_results
from rag_eval.results.model import RunResults
from tests.rag_eval._results import case, results
from tests.rag_eval._typed import typed

EVIL = "q-<script>alert(1)</script>\u202e"


def _with_labels() -> dict[str, Any]:
    cases = [case(f"j{i}", "pass", "judge", metrics={"faithfulness": float(i % 4 != 0)}) for i in range(8)]
    data = results(cases, thresholds={"judge": {"faithfulness": {"min": 0.5}}})
    # judge on j0..j4: 0 1 1 1 0; people: 0 1 1 0 0 → 4 of 5 agree, bias (3 − 2) / 5 = +0.2
    labels = [
        Label(f"j{i}", "judge.faithfulness", h, "ann", source=f"l.jsonl:{i + 1}")
        for i, h in enumerate((0.0, 1.0, 1.0, 0.0, 0.0))
    ]
    labels.append(Label(EVIL, "judge.faithfulness", 1.0, "ann", source="l.jsonl:6"))
    report = compare_labels(labels, data)
    return dataclasses.replace(RunResults.from_dict(data), labels=report.to_dict()).to_dict()


def test_one_terminal_line_per_metric_then_the_labels_left_out() -> None:
    data = _with_labels()
    lines = terminal_lines(data["labels"])
    assert lines[0] == "human labels: 1 labelled metric(s), 95% intervals"
    assert lines[1].startswith("  judge.faithfulness: 5 of 8 judged, agreement 0.80 accuracy, κ ")
    assert "bias +0.20; judge-only 0.75 [" in lines[1] and "labels-only 0.40 [" in lines[1] and "(λ " in lines[1]
    assert lines[2] == "  1 label(s) left out (not used):"
    assert lines[3].startswith(f"    l.jsonl:6: {EVIL} · judge.faithfulness: case not judged")
    assert terminal_lines(None) == []


def test_the_block_validates_and_round_trips_through_the_typed_results() -> None:
    data = _with_labels()
    assert check_results(data) == data  # the schema's $defs/labelReport accepts it
    assert RunResults.from_dict(data).to_dict() == data
    (row,) = label_rows(data["labels"])
    assert (row.metric, row.labelled, row.bias) == ("judge.faithfulness", "5 of 8 judged", "+0.20")


def test_markdown_and_html_show_the_section_with_user_text_escaped() -> None:
    data = _with_labels()
    md = render_markdown(typed(data))
    assert "### Judge vs human labels (95% intervals)" in md
    (row,) = [line for line in md.splitlines() if line.startswith("| `judge.faithfulness` | 5 of 8 judged |")]
    assert row.startswith(
        "| `judge.faithfulness` | 5 of 8 judged | 0.80 accuracy | 0.62 | +0.20 | 0.75 \\[0.41, 0.93\\] |"
    )
    html = render_html(typed(data))
    assert '<section id="labels">' in html and "judge.faithfulness" in html
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    section = html.split('<section id="labels">')[1].split("</section>")[0]
    # escaped, the right-to-left override shown as its escape (escape.terminal) and isolated
    assert "<bdi>l.jsonl:6: q-&lt;script&gt;alert(1)&lt;/script&gt;\\u202e · judge.faithfulness" in section
    assert "\u202e" not in section


def test_without_labels_no_section_anywhere() -> None:
    data = results(
        [case("j0", "pass", "judge", metrics={"faithfulness": 1.0})], thresholds={"judge": {"faithfulness": 0.5}}
    )
    assert "labels" not in data
    assert "Judge vs human labels" not in render_markdown(typed(data))
    assert 'id="labels"' not in render_html(typed(data))
