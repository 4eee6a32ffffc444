"""The labelling page in a real headless Chromium from file://: label three cases, export,
and the downloaded file loads with the labels loader; model text stays text.

Skipped with the reason without playwright or Chromium, unless RAG_EVAL_REQUIRE_BROWSER=1
(the browser fixtures of test_report_browser.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_eval.labels.load import load_labels
from rag_eval.labels.page import write_sample
from rag_eval.labels.sample import sample_cases
from tests.rag_eval._results_factory import ID_XSS, XSS, make_results
from tests.rag_eval.test_outputs_browser import browser, page  # noqa: F401  (fixtures)


def test_label_three_cases_export_and_load_back(page: Any, tmp_path: Path) -> None:  # noqa: F811
    results = make_results(14)
    sample = sample_cases(results, 100, seed=5, metrics=["judge.faithfulness", "judge.relevance"])
    sample = sorted(sample, key=lambda c: c.id != ID_XSS)  # the <script> case is on the page
    assert sample[0].id == ID_XSS
    html = write_sample(sample, tmp_path / "lab", "reports/r.json").page
    page.goto(html.as_uri())
    assert page.locator("section.case").count() == len(sample)
    xss_case = page.locator(f'section.case[data-case="{ID_XSS}"]')
    assert XSS in xss_case.inner_text()  # shown as text, not run (a dialog would fail the page fixture)
    assert page.locator("section.case img").count() == 0
    first = sample[0]
    assert first.context and first.key_facts and first.question
    shown = xss_case.inner_text()
    assert first.question in shown and first.key_facts[0] in shown and first.context[0][0] in shown
    assert " ".join(first.context[0][1].split())[:30] in " ".join(shown.split())  # the context, as text

    picks = [
        (sample[0].id, "judge.faithfulness", "no"),
        (sample[1].id, "judge.relevance", "partially_relevant"),
        (sample[2].id, "judge.faithfulness", "yes"),
    ]
    for case, metric, verdict in picks:
        page.locator(
            f'section.case[data-case="{case}"] div.metric[data-metric="{metric}"] button[data-verdict="{verdict}"]'
        ).click()
    assert page.locator("#progress").inner_text() == f"3 of {sum(len(c.metrics) for c in sample)} labelled"

    page.locator("#export").click()  # no name yet: said on the page, nothing downloaded
    assert "Write your name first" in page.locator("#status").inner_text()
    page.fill("#annotator", "王老师")
    with page.expect_download() as info:
        page.locator("#export").click()
    target = tmp_path / "human-labels.jsonl"
    info.value.save_as(target)
    assert info.value.suggested_filename == "human-labels.jsonl"

    labels = load_labels(target)
    assert [(lb.case, lb.metric, lb.verdict, lb.annotator) for lb in labels] == [
        (c, m, v, "王老师") for c, m, v in picks
    ]
    assert [lb.value for lb in labels] == [0.0, 0.5, 1.0]
    assert all(json.loads(line)["annotator"] == "王老师" for line in target.read_text(encoding="utf-8").splitlines())
