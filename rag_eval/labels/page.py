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
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup

from rag_eval.labels.sample import SampledCase, sheet_lines
from rag_eval.outputs.html import json_for_script
from rag_eval.util.person_files import guard_person_file, write_atomic

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


@dataclass(frozen=True)
class SampleFiles:
    """What ``write_sample`` wrote, and the copy it kept of a sheet holding labels (``--force``)."""

    sheet: Path
    page: Path
    kept: Path | None = None


def write_sample(sample: Sequence[SampledCase], out: Path, source: str, force: bool = False) -> SampleFiles:
    """The labelling sheet (JSONL) and page (HTML) of ``sample`` in ``out``.

    A sheet already in ``out`` that holds a label, an annotator or a note is a person's
    work: ``PersonWorkError`` (naming it and how many lines hold work) unless ``force``,
    and then a timestamped copy of it is kept first (rag_eval.util.person_files)."""
    sheet, page = out / SHEET, out / PAGE
    kept = guard_person_file(sheet, sheet_work, force, what="labelled line(s)")
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in sheet_lines(sample))
    write_atomic(sheet, lines.encode("utf-8"))
    write_atomic(page, render_page(sample, source).encode("utf-8"))
    return SampleFiles(sheet, page, kept)


def sheet_work(path: Path) -> int:
    """How many lines of a labelling sheet hold a person's work: a label, an annotator or a
    note filled in, or a line edited so that it no longer reads as JSON."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    count = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            count += 1
            continue
        if not isinstance(raw, dict) or any(raw.get(k) not in (None, "") for k in ("label", "annotator", "note")):
            count += 1
    return count
