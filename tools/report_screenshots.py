"""Screenshots of the HTML report for docs/report.md, and what the layout tests measure.

    make eval                                   # the demo run: reports/eval-results.json
    python -m tools.report_screenshots          # docs/report-demo.png, docs/report-failing.png

Two reports, both from the demo's results file: the demo as it ran, and a *failing* one —
the same cases re-gated with two thresholds raised above the run's values (``failing``:
``gates.gate.evaluate_gate`` over the demo's own cases, so the failing rows say what a red
build says). Paths under the repository are shown relative to it (no machine path in the
docs). Each is opened in Chromium (Debian's /usr/bin/chromium through playwright, or
``RAG_EVAL_CHROMIUM``) at 1400 × 900 and photographed from the top, one screen tall.

``measure(page)`` is what tests/rag_eval/test_outputs_layout_browser.py asserts: the gates
section's height, the gate rows' tops and heights, text overflowing its cell or SVG, the
page's horizontal scroll, sentences said twice in a reason cell.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from rag_eval.gates.gate import evaluate_gate, gate_of  # noqa: E402
from rag_eval.gates.uncertainty import DEFAULT_CONFIDENCE  # noqa: E402
from rag_eval.outputs.html import write_html  # noqa: E402
from rag_eval.results.file import load_results  # noqa: E402
from rag_eval.results.model import RunResults  # noqa: E402

DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
# the demo's gates made to fail: their thresholds raised this far above the run's values
RAISED: tuple[tuple[str, float], ...] = (("retrieval.recall@5", 0.1), ("deterministic.pass_rate", 0.2))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def failing(results: RunResults, raised: Sequence[tuple[str, float]] = RAISED) -> RunResults:
    """``results`` with the gates named in ``raised`` re-evaluated over the run's own cases at
    a threshold that much above their value (a min gate; a max gate's goes as far below)."""
    by_metric = dict(raised)
    gates = []
    for g in results.gates:
        if g.metric in by_metric and g.value is not None and g.kind == "tier":
            gate = gate_of(g.to_dict())
            step = by_metric[g.metric] if gate.op == "min" else -by_metric[g.metric]
            gate = dataclasses.replace(gate, threshold=round(float(g.value) + step, 2))
            confidence = float(g.evidence.get("confidence") or DEFAULT_CONFIDENCE)
            g = evaluate_gate(gate, results.cases, confidence=confidence)
        gates.append(g)
    passed = all(g.passed for g in gates)
    return dataclasses.replace(results, gates=tuple(gates), verdict="pass" if passed else "fail")


def chromium() -> str | None:
    """Debian's Chromium, ``RAG_EVAL_CHROMIUM``, or one on PATH; None when there is none."""
    for name in (os.environ.get("RAG_EVAL_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if name and Path(name).exists():
            return name
    return None


# Runs in the page: every number the layout tests assert, from the DOM.
MEASURE_JS = """() => {
  const top = (el) => el.getBoundingClientRect().top + window.scrollY;
  const section = document.getElementById("gates");
  const rows = [...document.querySelectorAll("table.gates tr.gate")];
  const overflowing = [];
  for (const td of document.querySelectorAll("table.gates tr.gate > td, dl.meta dd, table.stages td")) {
    const style = getComputedStyle(td);
    if (style.textOverflow === "ellipsis") continue;  // cut on purpose: the whole text is one click away
    if (td.scrollWidth > td.clientWidth + 1) overflowing.push(td.textContent.trim().slice(0, 60));
  }
  for (const text of document.querySelectorAll("svg text")) {
    const svg = text.ownerSVGElement.getBoundingClientRect();
    const box = text.getBoundingClientRect();
    if (box.width === 0) continue;
    const out = box.left < svg.left - 0.5 || box.right > svg.right + 0.5;
    if (out || box.top < svg.top - 0.5 || box.bottom > svg.bottom + 0.5)
      overflowing.push("svg: " + text.textContent.trim().slice(0, 60));
  }
  const twice = [];
  for (const td of document.querySelectorAll("table.gates tr.gate > td.reason")) {
    const sentences = td.textContent.split(/ · |[.;] /).map((s) => s.trim()).filter(Boolean);
    if (new Set(sentences).size !== sentences.length) twice.push(td.textContent);
  }
  return {
    gatesHeight: section ? section.getBoundingClientRect().height : 0,
    rows: rows.map((r) => ({ metric: r.querySelector("td.metric").textContent.trim(),
      failed: r.classList.contains("fail"), top: top(r), height: r.getBoundingClientRect().height })),
    overflowing,
    twice,
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  };
}"""


def measure(page: Any) -> dict[str, Any]:
    """The layout numbers of the page open in ``page`` (see MEASURE_JS)."""
    result: dict[str, Any] = page.evaluate(MEASURE_JS)
    return result


def render_both(results: RunResults, folder: Path) -> dict[str, Path]:
    """The demo report and the failing one, written into ``folder``."""
    return {
        "demo": write_html(folder / "report-demo.html", results),
        "failing": write_html(folder / "report-failing.html", failing(results)),
    }


def shoot(reports: dict[str, Path], out: Path, viewport: dict[str, int] = DESKTOP) -> list[Path]:
    """One screenshot per report, the first screen at ``viewport``."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    if executable is None:
        raise SystemExit("no Chromium at /usr/bin/chromium or on PATH (or set RAG_EVAL_CHROMIUM)")
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        for name, path in reports.items():
            page = browser.new_page(viewport=viewport)
            page.goto(path.as_uri())
            target = out / f"report-{name}.png"
            page.screenshot(path=str(target))
            written.append(target)
            page.close()
        browser.close()
    return written


def relative(results: RunResults) -> RunResults:
    """``results`` with the repository's own path left out of every text (``/…/golden_sets`` → ``golden_sets``)."""
    text = json.dumps(results.to_dict(), ensure_ascii=False).replace(json.dumps(str(REPO) + "/")[1:-1], "")
    return RunResults.from_dict(json.loads(text))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(REPO / "reports" / "eval-results.json"), help="the demo's results")
    parser.add_argument("--out", default=str(REPO / "docs"), help="where the PNGs go (docs/)")
    args = parser.parse_args(argv)
    results = relative(RunResults.from_dict(load_results(args.results)))
    with tempfile.TemporaryDirectory() as tmp:
        for path in shoot(render_both(results, Path(tmp)), Path(args.out)):
            print(f"screenshot: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
