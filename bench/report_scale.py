"""How the HTML failure report scales: render time, file size and time to open.

    python bench/report_scale.py [--sizes 97,1000,5000] [--repeats 3]

Question: does a 5,000-item report stay fast to open? For each size, a synthetic
results dict (``tests/rag_eval/_results_factory.make_results``: every golden item runs
four tiers -- retrieval with 5 ranked stages of up to 20 hits, deterministic with
context, answer, sources and checks, judge with claims/key facts/citations, passk with
5 trials -- so a size of 5,000 items is 19,998 case results: one item's pipeline errors and
skips judge and passk) is

* rendered with ``rag_eval.outputs.html.render_html`` (median of ``--repeats``, after
  one untimed warm-up render of the smallest size);
* written to a temporary file (its size in bytes);
* opened in headless Chromium (``/usr/bin/chromium`` or ``RAG_EVAL_CHROMIUM``) from
  file://, a fresh page each repeat: "load" is ``page.goto`` until the load event,
  "first filter" the click on the failed gate's button until the case count changes,
  "first expand" the click on the first visible case until its details are shown
  (this parses the item's details line on demand). The browser's own navigation
  timings (domInteractive, loadEventEnd) are kept as well.

Sizes are compared by ratio against the first size (97, the demo golden set's size)
measured in the same run, because the machine is shared (see bench/_common.py).
Writes ``bench/results/report_scale.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import load_average, md_table, ratio, run_header, write_results  # noqa: E402
from rag_eval.outputs.html import render_html  # noqa: E402
from tests.rag_eval._results_factory import make_results  # noqa: E402
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


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure_render(results: dict[str, Any], repeats: int) -> tuple[list[float], str]:
    times, html = [], ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        html = render_html(typed(results))
        times.append(time.perf_counter() - t0)
    return times, html


def measure_browser(browser: Any, path: Path, repeats: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        "load_s": [],
        "first_filter_s": [],
        "first_expand_s": [],
        "dom_interactive_ms": [],
        "load_event_end_ms": [],
    }
    for _ in range(repeats):
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))  # noqa: B023 - called only within this iteration
        t0 = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load", timeout=300_000)
        out["load_s"].append(time.perf_counter() - t0)
        nav = page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0]; "
            "return [n.domInteractive, n.loadEventEnd]; }"
        )
        out["dom_interactive_ms"].append(float(nav[0]))
        out["load_event_end_ms"].append(float(nav[1]))
        before = page.inner_text("#shown")
        t0 = time.perf_counter()
        page.locator("tr.fail button.gate-filter").first.click()
        page.wait_for_function("(b) => document.getElementById('shown').textContent !== b", arg=before)
        out["first_filter_s"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        page.locator("#case-table > tbody > tr.case:not([hidden])").first.click()
        page.locator("#case-table tr.detail").first.wait_for(state="visible")
        out["first_expand_s"].append(time.perf_counter() - t0)
        page.close()
        if errors:
            raise RuntimeError(f"page errors in {path}: {errors}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="97,1000,5000", help="golden items per report, comma-separated; the first is the reference"
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    header = run_header("report_scale", sys.argv[1:])
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.exit("report_scale: the playwright package is needed (pip install playwright)")
    chromium = os.environ.get("RAG_EVAL_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        sys.exit(f"report_scale: no Chromium at {chromium}; install it or set RAG_EVAL_CHROMIUM")

    render_html(typed(make_results(sizes[0])))  # warm-up: imports, template compilation
    tmp = Path(tempfile.mkdtemp(prefix="report-scale-"))
    rows: list[dict[str, Any]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for size in sizes:
            t0 = time.perf_counter()
            results = make_results(size)
            build_s = time.perf_counter() - t0
            render_times, html = measure_render(results, args.repeats)
            path = tmp / f"report-{size}.html"
            path.write_text(html, encoding="utf-8")
            browser_times = measure_browser(browser, path, args.repeats)
            rows.append(
                {
                    "items": size,
                    "cases": len(results["cases"]),
                    "results_build_s": build_s,
                    "render_s": _median(render_times),
                    "render_s_all": render_times,
                    "html_bytes": path.stat().st_size,
                    **{k: _median(v) for k, v in browser_times.items()},
                    "browser_all": browser_times,
                    "load_average": load_average(),
                }
            )
            print(
                f"{size} items: render {rows[-1]['render_s']:.2f} s, {rows[-1]['html_bytes'] / 1e6:.1f} MB, "
                f"load {rows[-1]['load_s']:.2f} s",
                flush=True,
            )
        browser.close()
    ref = rows[0]
    for r in rows:
        for key in ("render_s", "html_bytes", "load_s", "first_filter_s", "first_expand_s"):
            r[f"{key}_ratio"] = ratio(float(r[key]), float(ref[key]))
    table = md_table(
        [
            "items (cases)",
            "render s",
            "×ref",
            "HTML MB",
            "×ref",
            "open (load) s",
            "×ref",
            "first filter s",
            "first expand s",
        ],
        [
            [
                f"{r['items']:,} ({r['cases']:,})",
                r["render_s"],
                r["render_s_ratio"],
                r["html_bytes"] / 1e6,
                r["html_bytes_ratio"],
                r["load_s"],
                r["load_s_ratio"],
                r["first_filter_s"],
                r["first_expand_s"],
            ]
            for r in rows
        ],
    )
    print(table)
    path = write_results(
        "report_scale",
        {**header, "repeats": args.repeats, "reference_items": ref["items"], "rows": rows, "table_md": table},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
