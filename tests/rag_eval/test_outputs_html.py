"""The HTML report: escaping (no golden/model text becomes markup or closes a script
block), self-contained (no external resource), the JSON payloads round-trip, atomic
writes, and a 5,000-item report renders."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from rag_eval.outputs.html import PAGE_SIZE, json_for_script, render_html, write_html
from rag_eval.results.file import load_results
from tests.rag_eval._results_factory import ID_XSS, XSS, make_results, shared_results, with_baseline
from tests.rag_eval._typed import typed

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json"


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return with_baseline(make_results(24))


@pytest.fixture(scope="module")
def html(results: dict[str, Any]) -> str:
    return render_html(typed(results))


def script_block(html: str, block_id: str) -> str:
    m = re.search(rf'<script type="application/json" id="{block_id}">(.*?)</script>', html, re.DOTALL)
    assert m, f"no script block {block_id!r}"
    return m.group(1)


# --------------------------------------------------------------------------- escaping


def test_json_for_script_escapes_what_could_end_the_block_and_round_trips() -> None:
    data = {"q": "</script><script>alert(1)</script> & \u2028\u2029 <!-- -->", "n": [1, 2.5, None]}
    text = json_for_script(data)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == data


def test_json_for_script_writes_nan_as_null() -> None:
    assert json.loads(json_for_script({"x": float("nan"), "y": [float("inf"), 1.0]})) == {"x": None, "y": [None, 1.0]}


def test_no_golden_or_model_text_becomes_markup(html: str) -> None:
    assert XSS not in html and "alert(1)</script>" not in html
    assert "<img" not in html and "<b>bold</b>" not in html
    # exactly our three script elements: the two JSON blocks and the page's code
    assert html.count("<script") == 3 and html.count("</script>") == 3
    # the question is in the case list, as text
    assert "What does &lt;script&gt;alert(1)&lt;/script&gt; do?" in html


def test_the_json_blocks_cannot_be_closed_early_and_round_trip(html: str, results: dict[str, Any]) -> None:
    for block in ("case-index", "case-data"):
        assert "<" not in script_block(html, block) and ">" not in script_block(html, block)
    index = json.loads(script_block(html, "case-index"))
    row = next(r for r in index["rows"] if r["id"] == ID_XSS)
    assert row["q"] == results["items"][ID_XSS]["question"]
    data = json.loads(script_block(html, "case-data"))  # one valid JSON document ...
    lines = script_block(html, "case-data").split("\n")  # ... and one element per line
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == len(index["rows"]) + 3
    assert json.loads(lines[1].rstrip(",")) == data[0]
    strings = data[0]["strings"]
    assert any(XSS in s for s in strings)  # the chunk id, chunk text and answer with <script>
    item = data[1 + [r["id"] for r in index["rows"]].index(ID_XSS)]
    answer = next(t for t in item["tiers"] if t["tier"] == "deterministic")["answer"]
    assert strings[answer].startswith(f"Do not run {XSS}")


def test_attributes_and_gate_labels_are_escaped(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    r["gates"][0]["metric"] = 'retrieval.recall@5 [scenario="><b onmouseover=alert(3)>]'
    r["run"]["overrides"] = {"reranker": "<i>x</i>"}
    html = render_html(typed(r))
    assert "<b onmouseover" not in html and "<i>x</i>" not in html
    assert 'data-label="retrieval.recall@5 [scenario=&#34;&gt;&lt;b onmouseover=alert(3)&gt;]"' in html


# --------------------------------------------------------------------------- self-contained


def test_the_page_loads_nothing_from_outside(html: str) -> None:
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert not re.search(r"<link\b", html, re.IGNORECASE)
    assert not re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", html, re.IGNORECASE)
    assert "<style>" in html and html.count("<script>") == 1  # CSS and JS inline


# --------------------------------------------------------------------------- content


def test_the_page_has_every_section(html: str, results: dict[str, Any]) -> None:
    for section in ('id="gates"', 'id="baseline"', 'id="stages"', 'id="cases"', 'id="run"'):
        assert section in html
    assert 'class="badge b-fail">FAIL' in html and "retrieval.recall@5" in html
    assert "newly failing" in html and "pass → fail" in html
    assert "fp-synthetic-01" in html and "extractive-baseline" in html
    assert html.count('<tr class="case') == len(results["items"])


def test_a_real_results_sample_renders() -> None:
    html = render_html(typed(load_results(SAMPLE)))
    assert "FAILED" in html and "这个公式怎么用？" in html  # seven items of a run cannot meet its gates
    assert html.count('<tr class="case') == 7


def test_a_results_file_with_missing_parts_renders(results: dict[str, Any]) -> None:
    r = {**{k: v for k, v in results.items() if k != "baseline"}, "verdict": "incomplete", "gates": [], "items": {}}
    r["cases"] = [c for c in results["cases"] if c["tier"] == "retrieval"]
    html = render_html(typed(r))
    assert "INCOMPLETE" in html and "No gates in this results file." in html
    assert "Changes since baseline" not in html


def test_write_html_is_atomic_and_returns_the_path(tmp_path: Path, results: dict[str, Any]) -> None:
    out = write_html(tmp_path / "sub" / "report.html", typed(results))
    assert out == tmp_path / "sub" / "report.html"
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


@pytest.mark.slow  # ~8 s (building 20,000 synthetic cases is half of it)
def test_a_5000_item_report_renders_with_only_the_first_page_laid_out() -> None:
    results = shared_results(5000)
    html = render_html(typed(results))
    assert html.count('<tr class="case') == 5000
    assert len(re.findall(r'<tr class="case[^"]*" data-i="\d+" hidden>', html)) == 5000 - PAGE_SIZE
    assert f"showing {PAGE_SIZE} of 5000 items" in html
    assert len(json.loads(script_block(html, "case-index"))["rows"]) == 5000


# --------------------------------------------------------------------------- bidi isolation

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: would show the rest of the line reversed


def test_user_and_model_text_is_isolated_so_bidi_controls_reverse_nothing_around_it(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    first = r["cases"][0]
    r["items"][first["id"]]["question"] = f"what is {RLO}x^2 (evil)"
    failed = next(g for g in r["gates"] if not g["passed"])
    failed["reason"] = f"{RLO}deliberately reversed"
    r["run"]["overrides"] = {"reranker": f"{RLO}none"}
    page = render_html(typed(r))
    # every text node that carries the question, a gate reason or a run value is a <bdi>
    assert re.search(rf'<td class="q"><bdi>what is {RLO}x\^2 \(evil\)</bdi></td>', page)
    assert re.search(rf'<td class="reason" title="[^"{RLO}]*"><bdi>{RLO}deliberately reversed', page)  # title: escaped
    assert re.search(rf"<dd[^>]*><bdi>[^<]*{RLO}none</bdi></dd>", page)  # the run header's value
    # outside a <bdi> the control never appears raw in the markup (tooltips show its escape)
    outside = re.sub(r"<bdi>.*?</bdi>", "", page.split('<script type="application/json"')[0], flags=re.S)
    assert RLO not in outside
    # and the elements report.js fills with text are isolated by the stylesheet
    css = re.search(r"<style>(.*?)</style>", page, re.S)
    assert css is not None and re.search(
        r"bdi, td, th, li, dd, dt, p, pre, span[^{]*\{ unicode-bidi: isolate; \}", css.group(1)
    )


def test_report_js_puts_text_only_through_textcontent_and_isolates_loose_strings() -> None:
    js = (Path(__file__).resolve().parents[2] / "report_templates" / "report.js").read_text(encoding="utf-8")
    assert "innerHTML" not in js.split("*/", 1)[1] and "insertAdjacentHTML" not in js and "outerHTML" not in js
    assert 'typeof c === "string" ? el("bdi", null, c) : c' in js  # add(): a string child is a <bdi>
