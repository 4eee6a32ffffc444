"""Render a run's results (``RunResults``) as one self-contained HTML failure report.

One file, no network: CSS and JS are inlined from the ``report_templates`` package, so
the report opens from ``file://`` on a laptop offline or as a CI artifact.

Escaping: Jinja2 autoescapes everything the template prints. The per-item details and
the filter index ride in ``<script type="application/json">`` blocks, where HTML
escaping does not apply; :func:`json_for_script` writes ``<``, ``>``, ``&`` and
U+2028/U+2029 as ``\\uXXXX`` instead, so no golden question, chunk or model answer can
close the block early (``</script>``) or start markup. The browser side builds the
expanded view with ``createElement``/``textContent`` only.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from rag_eval import tiers
from rag_eval.outputs.case_data import build_case_data
from rag_eval.outputs.labels import confidence_of, label_rows, left_out_lines
from rag_eval.outputs.svg import is_diff_row, recall_curves, recall_svg, row_svg
from rag_eval.outputs.view import build_view
from rag_eval.outputs.writers import Context, register, write_file
from rag_eval.results.model import RunResults
from rag_eval.util.escape import terminal
from rag_eval.util.heap import paused

TEMPLATE = "report.html.j2"
# Case-list rows laid out at a time ("show more" adds as many): laying out all 5,000
# rows of a table took Chromium ~4 s, hidden rows cost almost nothing.
PAGE_SIZE = 200
# (character, escape) pairs; str.replace per pair is ~30x faster than str.translate here.
_SCRIPT_ESCAPES: tuple[tuple[str, str], ...] = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def json_for_script(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (see the module docstring).

    The escaped characters only ever occur inside JSON strings, where ``\\uXXXX`` means
    the same character, so ``JSON.parse`` gives back the original data.
    """
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:  # NaN/Infinity (valid in Python's JSON, not in JSON.parse): shown as n/a
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    for char, escape in _SCRIPT_ESCAPES:
        if char in text:
            text = text.replace(char, escape)
    return text


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


def case_data_json(data: Mapping[str, Any]) -> str:
    """The details payload as a JSON array, one element per line: the string table
    first, then one item per row. Still one valid JSON document, but the page parses
    only the line of the item being expanded (parsing all 5,000 at once took ~1 s)."""
    head = {k: v for k, v in data.items() if k != "items"}
    lines = [json_for_script(head)] + [json_for_script(item) for item in data["items"]]
    return "[\n" + ",\n".join(lines) + "\n]"


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(_templates_package(), "."),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["script_json"] = lambda data: Markup(json_for_script(data))
    env.filters["case_data_json"] = lambda data: Markup(case_data_json(data))
    env.filters["bdi"] = bdi
    env.filters["breakable"] = breakable
    env.filters["visible"] = lambda text: terminal(str(text), keep_newlines=False)  # for title="" tooltips
    return env


def bdi(text: object) -> Markup:
    """User or model text as an isolated, escaped ``<bdi>``: a right-to-left override or
    embedding inside it cannot reorder the text around it (a table cell, a sentence)."""
    return Markup("<bdi>{}</bdi>").format(str(text))


def breakable(text: object) -> Markup:
    """``bdi`` with a line-break opportunity after each ``.`` and ``_`` (a metric name wraps
    between its parts, not inside a word)."""
    escaped = str(Markup.escape(str(text)))
    return Markup("<bdi>{}</bdi>").format(Markup(escaped.replace(".", ".<wbr>").replace("_", "_<wbr>")))


def render_html(results: RunResults, calibration: Sequence[str] = ()) -> str:
    """The report page for one run's results (redacted already: ``outputs.writers``);
    ``calibration``: the lines of a ``calibrate`` record (``rag_eval.calibrate.record.lines``), shown as text."""
    # the collector paused: the view and payload are millions of acyclic objects at 5,000
    # items, and full collections over them took about half the render time
    with paused():
        view = build_view(results)
        data = build_case_data(results, [r.id for r in view.rows])
        template = _environment().get_template(TEMPLATE)
        index = {**view.filter_index(), "page": PAGE_SIZE}
        return template.render(
            view=view,
            index=index,
            case_data=data,
            page_size=PAGE_SIZE,
            labels=_labels(results.labels),
            charts=_charts(results),
            calibration=list(calibration),
            tier_views=tier_views(),
        )


def tier_views() -> list[Markup]:
    """Each registered tier's report view script (``Tier.report_fragment``), in registry order.
    Code of the tier's own, placed in a ``<script>``: one that could close it is refused."""
    out = []
    for tier in tiers.all_tiers():
        fragment = tier.report_fragment()
        if fragment is None:
            continue
        if "</script" in fragment.lower() or "<!--" in fragment:
            raise ValueError(
                f"tier {tier.name!r}: its report fragment contains '</script' or '<!--', which would end "
                "the report's script early; build such text with strings split in two"
            )
        out.append(Markup(fragment))
    return out


def _labels(block: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The human-labels section's rows (``outputs.labels``), None without labels."""
    if not block:
        return None
    return {"rows": label_rows(block), "left_out": left_out_lines(block), "confidence": confidence_of(block)}


def _charts(results: RunResults) -> dict[str, Any]:
    """The inline SVGs (``outputs.svg``): one per gate row (same order as the gate table),
    the regression rows' differences, and recall@k per stage ("" without recall metrics)."""
    return {
        "gates": [Markup(row_svg(g)) for g in results.gates],
        "regressions": [(g.metric, Markup(row_svg(g))) for g in results.gates if is_diff_row(g)],
        "recall": Markup(
            recall_svg(
                recall_curves({k: m.value for k, m in results.metrics.items()}),
                recall_curves(results.baseline["recall"])
                if results.baseline and "recall" in results.baseline
                else None,
            )
        ),
    }


class HtmlWriter:
    """The ``html`` format: one self-contained page (``outputs.writers``)."""

    name = "html"
    append = False

    def render(self, results: RunResults, context: Context) -> bytes:
        return render_html(results, context.calibration).encode("utf-8")


register(HtmlWriter())


def write_html(path: Path, results: RunResults, calibration: Sequence[str] = ()) -> Path:
    """Render and write (``outputs.writers.write_file``: a reader never sees half a page); returns ``path``."""
    return write_file(Path(path), render_html(results, calibration).encode("utf-8"))


def _templates_package() -> str:
    """``rag_eval.report_templates`` in an installed wheel; the top-level ``report_templates``
    folder of a source checkout (where the package-dir mapping does not apply)."""
    import importlib.util

    return "rag_eval.report_templates" if importlib.util.find_spec("rag_eval.report_templates") else "report_templates"
