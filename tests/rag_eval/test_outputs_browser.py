"""The HTML report in a real headless Chromium, opened from file://: the failed gate's
button filters the case list, a case expands to its failing stage and gold ranks,
filters and search work, a ``<script>`` question stays text, and 5,000 items open.

Needs the ``playwright`` package and a Chromium (``/usr/bin/chromium`` or
``RAG_EVAL_CHROMIUM``); skipped with the reason when either is missing, unless
``RAG_EVAL_REQUIRE_BROWSER=1`` (CI), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rag_eval.outputs.html import PAGE_SIZE, write_html
from rag_eval.outputs.svg import recall_curves
from rag_eval.outputs.view import build_view
from tests.rag_eval._results_factory import (
    ID_JUDGE_ERROR,
    ID_TRUNCATION,
    ID_XSS,
    XSS,
    make_results,
    shared_results,
)
from tests.rag_eval._typed import typed

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("RAG_EVAL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}; RAG_EVAL_REQUIRE_BROWSER=1 requires the browser tests to run")
    pytest.skip(reason)


def _chromium() -> str:
    configured = os.environ.get("RAG_EVAL_CHROMIUM")
    if configured:
        if not Path(configured).exists():
            _unavailable(f"RAG_EVAL_CHROMIUM={configured} does not exist")
        return configured
    for name in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if name and Path(name).exists():
            return name
    _unavailable("no Chromium found at /usr/bin/chromium or on PATH (install it, or set RAG_EVAL_CHROMIUM to its path)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    executable = _chromium()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that fails the test on any JS error or dialog (alert/confirm/prompt)."""
    pg = browser.new_page(viewport={"width": 1440, "height": 900})
    problems: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def on_dialog(dialog: Any) -> None:
        problems.append(f"a dialog fired: {dialog.type} {dialog.message!r}")
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    yield pg
    pg.close()
    assert not problems, problems


@pytest.fixture(scope="module")
def red_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    results = make_results(40)
    assert results["verdict"] == "fail"
    return results, write_html(tmp_path_factory.mktemp("report") / "report.html", typed(results))


def visible_ids(page: Any) -> list[str]:
    return page.locator("#case-table > tbody > tr.case:not([hidden]) button.open").all_inner_texts()


def test_failed_gate_filters_and_a_case_expands_to_its_stage_and_gold_ranks(
    page: Any, red_run: tuple[dict[str, Any], Path], tmp_path: Path
) -> None:
    results, path = red_run
    page.goto(path.as_uri())
    gate = next(
        g for g in build_view(typed(results)).gates if not g.gate.passed and g.gate.metric == "retrieval.recall@5"
    )
    page.locator(f'button.gate-filter[data-gate="{gate.index}"]').click()
    assert sorted(visible_ids(page)) == sorted(gate.case_ids)
    assert page.locator("#f-set-label").inner_text().startswith("gate retrieval.recall@5")

    page.locator("#case-table tr.case", has_text=ID_TRUNCATION).click()
    detail = page.locator("#case-table tr.detail").first
    detail.wait_for()
    text = detail.inner_text()
    raw = next(c for c in results["cases"] if c["id"] == ID_TRUNCATION and c["tier"] == "retrieval")
    reranked_rank = raw["details"]["gold_ranks"][0]["reranked"]
    assert "retrieval: fail at context" in text  # the declared stage name, not a fixed label
    assert "Gold ranks per stage" in text and f"rank {reranked_rank}" in text
    assert detail.locator("th.lost", has_text="context").count() >= 1  # the failing stage is marked
    # [n] markers of the answer link to their sources
    link = detail.locator(".answer a").first
    target = link.get_attribute("href")
    assert target and target.startswith("#src-") and detail.locator(target).count() == 1

    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_tier_outcome_filters_and_search(page: Any, red_run: tuple[dict[str, Any], Path]) -> None:
    results, path = red_run
    page.goto(path.as_uri())
    assert page.locator("#shown").inner_text() == "showing 40 of 40 items"
    assert "二次函数" in page.locator("#case-table tr.case", has_text="syn-00002").inner_text()  # UTF-8 end to end
    page.select_option("#f-tier", "judge")
    page.select_option("#f-outcome", "error")
    assert visible_ids(page) == [ID_JUDGE_ERROR]
    page.click("#f-clear")
    page.fill("#f-search", "syn-0000")
    assert sorted(visible_ids(page)) == [f"syn-{i:05d}" for i in range(10)]
    assert page.locator("#shown").inner_text() == "showing 10 of 10 matching items (40 in all)"
    page.select_option("#f-tier", "retrieval")
    page.select_option("#f-outcome", "fail")
    expected = sorted(
        c["id"]
        for c in results["cases"]
        if c["tier"] == "retrieval" and c["outcome"] == "fail" and c["id"].startswith("syn-0000")
    )
    assert sorted(visible_ids(page)) == expected and expected


def test_a_script_question_is_shown_as_text(page: Any, red_run: tuple[dict[str, Any], Path]) -> None:
    results, path = red_run
    page.goto(path.as_uri())
    page.fill("#f-search", "alert(1)")
    assert visible_ids(page) == [ID_XSS]
    row = page.locator("#case-table tr.case", has_text=ID_XSS)
    assert XSS in row.locator("td.q").inner_text()
    row.click()
    detail = page.locator("#case-table tr.detail").first
    detail.wait_for()
    text = detail.inner_text()
    assert results["items"][ID_XSS]["question"].split(" and ")[0] in text
    assert f"Do not run {XSS}" in text  # the answer, as text
    # nothing from the data became an element; the page's one script is its own
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    assert page.locator("script").count() == 3


def test_a_failing_judge_case_lists_its_blame_as_text(page: Any, red_run: tuple[dict[str, Any], Path]) -> None:
    results, path = red_run
    page.goto(path.as_uri())
    assert page.locator("#judge-blame").inner_text().startswith("judge blame: ")
    page.select_option("#f-tier", "judge")
    page.fill("#f-search", "alert(1)")
    page.locator("#case-table tr.case", has_text=ID_XSS).click()
    detail = page.locator("#case-table tr.detail").first
    detail.wait_for()
    lines = detail.locator("ul.blame li").all_inner_texts()
    case = next(c for c in results["cases"] if c["id"] == ID_XSS and c["tier"] == "judge")
    assert lines == case["details"]["blame"] and XSS in lines[1]  # chain order, model text as text
    assert "Whose fault (generator)" in detail.inner_text()
    assert detail.locator("th", has_text="reference").count() == 1  # the claim-level columns
    assert page.locator("script").count() == 3


def test_a_stage_count_filters_by_earliest_stage(page: Any, red_run: tuple[dict[str, Any], Path]) -> None:
    results, path = red_run
    page.goto(path.as_uri())
    page.locator('button.stage-filter[data-stage="context"][data-tier=""]').click()
    expected = [r.id for r in build_view(typed(results)).rows if r.stage == "context"]
    assert sorted(visible_ids(page)) == sorted(expected) and ID_TRUNCATION in expected


@pytest.mark.slow  # ~15 s on the shared 2-core machine: building and rendering 20,000 cases dominates
def test_a_5000_item_report_opens_and_search_filters(page: Any, tmp_path: Path) -> None:
    path = write_html(tmp_path / "big.html", typed(shared_results(5000)))
    page.goto(path.as_uri(), timeout=120_000)
    assert page.locator("#shown").inner_text() == f"showing {PAGE_SIZE} of 5000 items"
    assert len(visible_ids(page)) == PAGE_SIZE
    page.fill("#f-search", "syn-04999")
    assert visible_ids(page) == ["syn-04999"]
    page.locator("#case-table tr.case", has_text="syn-04999").click()
    assert "syn-04999" in page.locator("#case-table tr.detail").first.inner_text()


def test_the_svg_charts_render_and_the_page_makes_no_request(page: Any, tmp_path: Path) -> None:
    results = make_results(40)
    results["gates"][0]["ci"] = [0.45, 0.75]
    # two stages at k = 10 too (the report reads the typed metrics: metrics_n's rows)
    row = results["metrics_n"]["retrieval.vector.recall@5"]
    for key, value in (
        ("retrieval.recall@10", 0.8),
        ("retrieval.vector.recall@10", 0.7),
        ("retrieval.bm25.recall@10", 0.6),
    ):
        results["metrics"][key] = value
        results["metrics_n"][key] = {**row, "value": value}
    path = write_html(tmp_path / "report.html", typed(results))
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(path.as_uri())
    charts = page.locator("svg.gate-chart")
    assert charts.count() == len(results["gates"])
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
    curve = page.locator("svg.recall-chart polyline")
    assert curve.count() == len(recall_curves(results["metrics"])) >= 2
    box = curve.first.bounding_box()
    assert box and box["width"] > 0
    assert requests == [path.as_uri()]  # the page itself, nothing else
