"""rag_eval.outputs.svg: geometry as arithmetic, missing intervals said, text escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from rag_eval.outputs.html import render_html
from rag_eval.outputs.svg import (
    CURVE_W,
    LABEL_GAP,
    LABEL_W,
    PAD,
    ROW_W,
    Scale,
    diff_svg,
    domain,
    gate_svg,
    interval,
    recall_curves,
    recall_svg,
)
from tests.rag_eval._results_factory import make_results
from tests.rag_eval._typed import gate_result, typed

NS = "{http://www.w3.org/2000/svg}"


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # well-formed XML, or this raises


def _lines(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in _tree(svg).iter(f"{NS}line") if cls in (e.get("class") or "").split()]


def test_scale_maps_ends_and_middle() -> None:
    s = Scale(0.0, 1.0, 10.0, 210.0)
    assert (s.x(0.0), s.x(0.5), s.x(1.0)) == (10.0, 110.0, 210.0)
    assert domain([0.2, 0.9]) == (0.0, 1.0)
    lo, hi = domain([10.0, 20.0])
    assert (lo, hi) == (9.0, 21.0)


def test_gate_value_interval_and_threshold_at_their_x() -> None:
    svg = gate_svg(gate_result("retrieval.recall@5", 0.5, 0.8, ci=[0.25, 0.75], passed=False))
    width = ROW_W - 2 * PAD
    dot = next(_tree(svg).iter(f"{NS}circle"))
    assert float(dot.get("cx") or "nan") == PAD + 0.5 * width
    bar = _lines(svg, "ci")[0]
    assert (float(bar.get("x1") or 0), float(bar.get("x2") or 0)) == (PAD + 0.25 * width, PAD + 0.75 * width)
    assert float(_lines(svg, "threshold")[0].get("x1") or 0) == PAD + 0.8 * width
    assert "fail" in (dot.get("class") or "")


def test_no_interval_is_said_never_a_zero_width_bar() -> None:
    svg = gate_svg(gate_result("m", 0.9, 0.8, passed=True, ci_note="n < 2"))
    assert _lines(svg, "ci") == []
    assert "no interval: n &lt; 2" in svg
    assert interval([0.5, 0.4]) is None and interval(None) is None and interval([0.1, float("nan")]) is None
    no_value = gate_svg(gate_result("m", None, 0.8))
    assert "no value" in no_value and not list(_tree(no_value).iter(f"{NS}circle"))


def test_diff_is_drawn_around_zero() -> None:
    svg = diff_svg(gate_result("retrieval.recall@5", None, kind="regression", diff=-0.05, diff_ci=[-0.1, 0.0]))
    zero = float(_lines(svg, "zero")[0].get("x1") or 0)
    assert zero == (PAD + ROW_W - PAD) / 2  # symmetric domain: zero in the middle
    bar = _lines(svg, "ci")[0]
    assert (
        float(bar.get("x1") or 0)
        < float(next(_tree(svg).iter(f"{NS}circle")).get("cx") or 0)
        < float(bar.get("x2") or 0)
    )
    assert abs(float(bar.get("x2") or 0) - zero) < 1e-9


def test_recall_curves_per_stage_and_hostile_stage_name_escaped() -> None:
    hostile = '<script>alert("x")</script>&'
    metrics = {
        "retrieval.recall@1": 0.4,  # the final stage's, copied without the stage
        "retrieval.recall@5": 0.7,
        "retrieval.dense.recall@1": 0.4,
        "retrieval.dense.recall@5": 0.7,
        f"retrieval.{hostile}.recall@10": 0.9,
        f"retrieval.{hostile}.recall@1": 0.5,
        "retrieval.mrr": 0.3,
        "retrieval.bm25.recall@5": "n/a",
    }
    curves = recall_curves(metrics)
    assert curves == {"dense": [(1, 0.4), (5, 0.7)], hostile: [(1, 0.5), (10, 0.9)]}
    svg = recall_svg(curves)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    root = _tree(svg)
    assert len(list(root.iter(f"{NS}polyline"))) == 2
    assert recall_svg({}) == ""


def test_the_report_holds_the_svgs_one_per_gate() -> None:
    results = make_results(24)
    results["gates"][0]["ci"] = [0.4, 0.8]
    results["metrics"]["retrieval.recall@10"] = 0.8
    page = render_html(typed(results))
    assert page.count('class="chart gate-chart"') == len(results["gates"])
    assert 'class="chart recall-chart"' in page
    assert re.search(r'<td class="chart"><svg', page)


def test_a_regression_row_is_drawn_around_zero_in_the_gate_table_and_the_charts_section() -> None:
    results = make_results(24)
    results["gates"].append(
        {
            "metric": "regression: retrieval.recall@5",
            "tier": "regression",
            "key": "retrieval.recall@5",
            "tags": {},
            "op": "min",
            "threshold": 0.55,
            "value": 0.6,
            "n": 23,
            "errors": 0,
            "min_cases": 1,
            "passed": True,
            "reason": "",
            "worst_cases": [],
            "diff": -0.04,
            "diff_ci": [-0.09, 0.01],
        }
    )
    page = render_html(typed(results))
    assert page.count('class="chart diff-chart"') == 2  # its gate-table row and the baseline-differences table
    assert page.count('class="chart gate-chart"') == len(results["gates"]) - 1
    assert "Differences from the baseline" in page


def test_doc_is_a_level_not_a_stage_in_the_recall_curves() -> None:
    metrics = {
        "retrieval.recall@5": 0.7,
        "retrieval.doc.recall@5": 0.9,
        "retrieval.vector.recall@5": 0.6,
        "retrieval.vector.doc.recall@5": 0.8,
    }
    assert recall_curves(metrics) == {"vector": [(5, 0.6)]}
    doc_only = {"retrieval.doc.recall@5": 0.9, "retrieval.doc.recall@10": 0.95, "retrieval.bm25.doc.recall@5": 0.8}
    assert recall_curves(doc_only) == {"bm25 (doc)": [(5, 0.8)]}
    assert recall_curves({"retrieval.doc.recall@5": 0.9}) == {"final (doc)": [(5, 0.9)]}


def test_the_chart_names_only_the_systems_stages_and_coincident_curves_are_one_line_named_together() -> None:
    # issue 40 part 2 item 8: a `final` the system never declared, and lines hiding each other
    metrics = {
        "retrieval.recall@5": 0.8,  # = context's
        "retrieval.recall@10": 0.9,
        "retrieval.bm25.recall@5": 0.6,
        "retrieval.bm25.recall@10": 0.7,
        "retrieval.hybrid.recall@5": 0.8,
        "retrieval.hybrid.recall@10": 0.9,
        "retrieval.context.recall@5": 0.8,
        "retrieval.context.recall@10": 0.9,
    }
    curves = recall_curves(metrics)
    assert curves == {"bm25": [(5, 0.6), (10, 0.7)], "context = hybrid": [(5, 0.8), (10, 0.9)]}
    assert len(list(_tree(recall_svg(curves)).iter(f"{NS}polyline"))) == 2
    assert recall_curves({"retrieval.recall@5": 0.5}) == {"final": [(5, 0.5)]}  # only the final list is known


def test_recall_lines_end_in_their_stage_names_and_the_baseline_is_dashed() -> None:
    curves = {"vector": [(1, 0.4), (5, 0.7)], "fused": [(1, 0.5), (5, 0.71)], "final": [(1, 0.45), (5, 0.7)]}
    root = _tree(recall_svg(curves, {"vector": [(1, 0.5), (5, 0.8)]}))
    dashed = [p for p in root.iter(f"{NS}polyline") if "baseline" in (p.get("class") or "")]
    assert len(dashed) == 1 and dashed[0].get("stroke-dasharray")
    labels = [t for t in root.iter(f"{NS}text") if t.get("class") == "legend"]
    assert sorted((t.text or "") for t in labels) == ["final", "fused", "vector"]
    # each name at the right of its line's end, and no two names closer than the gap
    ends = [float(t.get("x") or 0) for t in labels]
    assert all(x > CURVE_W - LABEL_W for x in ends)
    ys = sorted(float(t.get("y") or 0) for t in labels)
    assert all(b - a >= LABEL_GAP - 1e-6 for a, b in zip(ys, ys[1:]))
