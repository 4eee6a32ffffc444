"""The labelling page: one self-contained HTML file for a sample, and the files of a sample.

Like the report (``rag_eval.outputs.html``): Jinja2 with autoescape, CSS and JS inlined
from ``report_templates`` (no CDN, opens from ``file://``), the sample's data in a
``<script type="application/json">`` block written by ``json_for_script`` (no question,
chunk or answer can close it), and the page builds every case with
``createElement``/``textContent`` only. The page's export is a labels file
(docs/human-labels.md) that ``rag_eval.labels.load.load_labels`` reads.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import jinja2
from markupsafe import Markup

from rag_eval.atomic import write_atomic
from rag_eval.labels.sample import SampledCase, sheet_lines
from rag_eval.outputs.html import json_for_script

TEMPLATE = "labelling.html.j2"
SHEET = "labels-sheet.jsonl"
PAGE = "labelling.html"


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The pages' Jinja2 environment (autoescape, strict, the ``script_json`` filter); the review page uses it too."""
    # report_templates installs as rag_eval.report_templates; a source checkout has it at the top
    package = (
        "rag_eval.report_templates" if importlib.util.find_spec("rag_eval.report_templates") else "report_templates"
    )
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "."),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["script_json"] = lambda data: Markup(json_for_script(data))
    return env


def render_page(sample: Sequence[SampledCase], source: str) -> str:
    """The page for ``sample`` drawn from the results file ``source``."""
    data = {"source": source, "cases": [c.to_dict() for c in sample]}
    return (
        environment()
        .get_template(TEMPLATE)
        .render(data=data, n_cases=len(sample), n_labels=sum(len(c.metrics) for c in sample), source=source)
    )


def write_sample(sample: Sequence[SampledCase], out: Path, source: str) -> tuple[Path, Path]:
    """The labelling sheet (JSONL) and page (HTML) of ``sample`` in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    sheet, page = out / SHEET, out / PAGE
    lines = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in sheet_lines(sample))
    write_atomic(sheet, lines.encode("utf-8"))
    write_atomic(page, render_page(sample, source).encode("utf-8"))
    return sheet, page
