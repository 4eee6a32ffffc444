"""Inline SVG charts for the HTML report: the noise drawn, not only printed.

Pure functions from typed gate results (``GateResult``) and metrics to SVG strings (no script library, no CDN, no
network): a gate's value with its interval against its threshold (one small SVG per
gate row, together a forest plot), a regression row's difference with its interval
around zero, and recall@k against k, one line per retrieval stage.

A missing interval is said ("no interval"), never drawn as a zero-width bar; a missing
value is said ("no value"), never drawn at 0. Every text (stage names, metric labels,
notes) is HTML-escaped, so a hostile stage name stays text.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.gates.result import GateResult
from rag_eval.outputs.reasons import Statistics

ROW_W, ROW_H, PAD = 160.0, 20.0, 8.0  # a gate row's SVG
CURVE_W, CURVE_H, CURVE_PAD = 640.0, 340.0, 36.0  # the recall@k chart
LABEL_W = 120.0  # the recall chart's right margin: each line's stage name at its end
LABEL_GAP = 12.0  # the least vertical distance between two end labels
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
_RECALL = re.compile(r"^retrieval\.(?:(?P<stage>.+)\.)?recall@(?P<k>\d+)$")
FINAL_STAGE = "final"  # the label of retrieval.recall@k (no stage in the key)


def esc(text: object) -> str:
    """Text safe in SVG element content and attribute values."""
    return html.escape(str(text), quote=True)


@dataclass(frozen=True)
class Scale:
    """A linear map from data values ``[lo, hi]`` to pixels ``[left, right]``."""

    lo: float
    hi: float
    left: float
    right: float

    def x(self, value: float) -> float:
        span = self.hi - self.lo
        return self.left + (value - self.lo) / span * (self.right - self.left) if span else (self.left + self.right) / 2


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def interval(value: Any) -> tuple[float, float] | None:
    """``[lo, hi]`` of a results-file ``ci``/``diff_ci`` field, None when absent or not finite."""
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        lo, hi = _num(value[0]), _num(value[1])
        if lo is not None and hi is not None and lo <= hi:
            return lo, hi
    return None


def domain(values: Sequence[float]) -> tuple[float, float]:
    """[0, 1] when every value is a rate; otherwise the values' range padded by 10%."""
    if all(0.0 <= v <= 1.0 for v in values):
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    return lo - pad, hi + pad


def _f(v: float) -> str:
    return f"{v:.1f}"


def _svg(width: float, height: float, label: str, body: list[str], cls: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" width="{_f(width)}" height="{_f(height)}" '
        f'viewBox="0 0 {_f(width)} {_f(height)}" role="img" aria-label="{esc(label)}"><title>{esc(label)}</title>'
        + "".join(body)
        + "</svg>"
    )


def _bar(scale: Scale, ci: tuple[float, float], y: float, cls: str) -> list[str]:
    x1, x2 = scale.x(ci[0]), scale.x(ci[1])
    return [
        f'<line class="{cls}" x1="{_f(x1)}" y1="{_f(y)}" x2="{_f(x2)}" y2="{_f(y)}"/>',
        f'<line class="{cls}" x1="{_f(x1)}" y1="{_f(y - 4)}" x2="{_f(x1)}" y2="{_f(y + 4)}"/>',
        f'<line class="{cls}" x1="{_f(x2)}" y1="{_f(y - 4)}" x2="{_f(x2)}" y2="{_f(y + 4)}"/>',
    ]


def _mark(scale: Scale, value: float | None, ci: tuple[float, float] | None, note: str, passed: bool) -> list[str]:
    """The dot, its interval bar or the words saying what is missing."""
    y = ROW_H / 2
    if value is None:
        return [f'<text class="note" x="{_f(PAD)}" y="{_f(y + 4)}">no value</text>']
    out = _bar(scale, ci, y, "ci") if ci else []
    dot = "pass" if passed else "fail"
    out.append(f'<circle class="dot {dot}" cx="{_f(scale.x(value))}" cy="{_f(y)}" r="3.5"/>')
    if ci is None:  # said in two words on the far side of the dot; the note is in the title and the reasoning
        words = "no interval" + (f": {note}" if note else "")
        anchor, tx = ("end", ROW_W - 2) if scale.x(value) < ROW_W / 2 else ("start", 2.0)
        out.append(
            f'<text class="note" x="{_f(tx)}" y="{_f(y + 4)}" text-anchor="{anchor}">'
            f"<title>{esc(words)}</title>no interval</text>"
        )
    return out


def gate_svg(g: GateResult) -> str:
    """One tier gate: value (dot), its interval (bar) and the threshold (dashed line)."""
    value, threshold = _num(g.value), _num(g.threshold)
    ci = interval(Statistics.of(g).ci)
    points = [v for v in (value, threshold, *(ci or ())) if v is not None]
    scale = Scale(*domain(points or [0.0]), PAD, ROW_W - PAD)
    body = [f'<line class="axis" x1="{_f(PAD)}" y1="{_f(ROW_H - 2)}" x2="{_f(ROW_W - PAD)}" y2="{_f(ROW_H - 2)}"/>']
    if threshold is not None:
        tx = _f(scale.x(threshold))
        body.append(f'<line class="threshold" x1="{tx}" y1="1" x2="{tx}" y2="{_f(ROW_H - 1)}"/>')
    body += _mark(scale, value, ci, _note(g), g.passed)
    label = f"{g.metric}: value {_text(value)}, interval {_ci_text(ci)}, threshold {_text(threshold)}"
    return _svg(ROW_W, ROW_H, label, body, "chart gate-chart")


def diff_svg(g: GateResult) -> str:
    """One regression row: the difference from the baseline and its interval, around zero."""
    stats = Statistics.of(g)
    diff = _num(stats.diff)
    ci = interval(stats.diff_ci)
    reach = max([abs(v) for v in (diff, *(ci or ())) if v is not None] or [0.0]) * 1.1 or 1.0
    scale = Scale(-reach, reach, PAD, ROW_W - PAD)
    zx = _f(scale.x(0.0))
    body = [
        f'<line class="axis" x1="{_f(PAD)}" y1="{_f(ROW_H - 2)}" x2="{_f(ROW_W - PAD)}" y2="{_f(ROW_H - 2)}"/>',
        f'<line class="zero" x1="{zx}" y1="1" x2="{zx}" y2="{_f(ROW_H - 1)}"/>',
    ]
    body += _mark(scale, diff, ci, _note(g), g.passed)
    label = f"{g.metric}: difference {_text(diff)}, interval {_ci_text(ci)}, around 0"
    return _svg(ROW_W, ROW_H, label, body, "chart diff-chart")


def _note(g: GateResult) -> str:
    return Statistics.of(g).ci_note


def is_diff_row(g: GateResult) -> bool:
    """A regression gate that carries a ``diff`` (its paired difference from the baseline)."""
    return g.kind == "regression" and "diff" in g.evidence


def row_svg(g: GateResult) -> str:
    """The gate table's chart of a row: a regression row with a ``diff`` is drawn around
    zero, every other row against its threshold."""
    return diff_svg(g) if is_diff_row(g) else gate_svg(g)


def recall_curves(metrics: Mapping[str, Any]) -> dict[str, list[tuple[int, float]]]:
    """``{stage: [(k, recall@k), ...]}`` from ``retrieval.<stage>.recall@k`` keys, k
    ascending; values not numbers are left out. The stageless ``retrieval.recall@k``
    copies the final stage's, so it is drawn (as ``final``) only when no stage has keys of
    its own: the chart names only stages the system has. Stages whose curves coincide are
    one line named together (``bm25 = hybrid``): one line on top of another would hide it.

    Chunk-level recall only: ``doc`` is a level, not a stage (``retrieval.doc.recall@k``,
    ``retrieval.<stage>.doc.recall@k``). A run whose gold is at document level only has no
    chunk-level keys; its document-level curves are drawn instead, named ``<stage> (doc)``."""
    levels: dict[str, dict[str, list[tuple[int, float]]]] = {"chunk": {}, "doc": {}}
    for key, raw in metrics.items():
        m = _RECALL.match(str(key))
        value = _num(raw)
        if not m or value is None:
            continue
        parts = (m.group("stage") or "").split(".") if m.group("stage") else []
        level = "doc" if parts and parts[-1] == "doc" else "chunk"
        stage = ".".join(parts[:-1] if level == "doc" else parts)  # "": the stageless key
        levels[level].setdefault(stage, []).append((int(m.group("k")), value))
    curves = levels["chunk"] or levels["doc"]
    stageless = {FINAL_STAGE: curves[""]} if "" in curves else {}
    own = {stage: points for stage, points in curves.items() if stage} or stageless
    suffix = "" if levels["chunk"] else " (doc)"
    by_points: dict[tuple[tuple[int, float], ...], list[str]] = {}
    for stage in sorted(own):
        by_points.setdefault(tuple(sorted(own[stage])), []).append(stage + suffix)
    return {" = ".join(names): list(points) for points, names in by_points.items() if points}


def recall_svg(
    curves: Mapping[str, Sequence[tuple[int, float]]], baseline: Mapping[str, Sequence[tuple[int, float]]] | None = None
) -> str:
    """recall@k against k, one polyline (and dots) per stage with its name at the line's end,
    and the baseline's line of the same stage dashed; "" without data."""
    if not curves:
        return ""
    base = baseline or {}
    ks = sorted({k for points in (*curves.values(), *base.values()) for k, _ in points})
    xs = Scale(float(ks[0]), float(ks[-1]), CURVE_PAD, CURVE_W - LABEL_W)
    # from a tenth below the lowest value to 1: the stages' differences are what there is to read
    lowest = min(v for points in (*curves.values(), *base.values()) for _, v in points)
    ys = Scale(max(0.0, math.floor(lowest * 10) / 10 - 0.1), 1.0, CURVE_H - CURVE_PAD, 12.0)  # y grows downwards
    body = _curve_axes(xs, ys, ks)
    ends: list[tuple[float, str, str]] = []  # (y of the last point, stage, colour)
    for i, (stage, points) in enumerate(sorted(curves.items())):
        color = PALETTE[i % len(PALETTE)]
        if base.get(stage):
            was = " ".join(f"{_f(xs.x(k))},{_f(ys.x(v))}" for k, v in base[stage])
            body.append(
                f'<polyline class="curve baseline" fill="none" stroke="{color}" stroke-width="1.5" '
                f'stroke-dasharray="5 3" points="{was}"><title>{esc(stage)} on the baseline</title></polyline>'
            )
        coords = " ".join(f"{_f(xs.x(k))},{_f(ys.x(v))}" for k, v in points)
        body.append(f'<polyline class="curve" fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>')
        for k, v in points:
            body.append(
                f'<circle cx="{_f(xs.x(k))}" cy="{_f(ys.x(v))}" r="3" fill="{color}">'
                f"<title>{esc(stage)} recall@{k} = {v:.3f}</title></circle>"
            )
        ends.append((ys.x(points[-1][1]), stage, color))
    at = {stage: y for y, stage, _ in ends}
    for y, stage, color in _spread(ends):
        body.append(  # a leader from the line's end to its (moved) name
            f'<line class="leader" x1="{_f(xs.right + 1)}" y1="{_f(at[stage])}" x2="{_f(xs.right + 5)}" '
            f'y2="{_f(y)}" style="stroke: {color}"/>'
        )
        body.append(
            f'<text class="legend" x="{_f(xs.right + 6)}" y="{_f(y + 4)}" style="fill: {color}">'
            f"{esc(_short_label(stage))}<title>{esc(stage)}</title></text>"
        )
    if base:
        body.append(f'<text class="tick" x="{_f(xs.left + 4)}" y="{_f(CURVE_H - 4)}">dashed: the baseline</text>')
    return _svg(CURVE_W, CURVE_H, "recall@k against k per retrieval stage", body, "chart recall-chart")


def _spread(ends: Sequence[tuple[float, str, str]]) -> list[tuple[float, str, str]]:
    """End labels moved apart vertically (at least LABEL_GAP), each as near its line's end as
    that allows: neighbours closer than the gap are pushed apart evenly, a few passes over."""
    ordered = sorted(ends)
    ys = [y for y, _, _ in ordered]
    for _ in range(len(ys) * 4):
        moved = False
        for i in range(len(ys) - 1):
            gap = ys[i + 1] - ys[i]
            if gap < LABEL_GAP - 1e-6:
                push = (LABEL_GAP - gap) / 2
                ys[i], ys[i + 1] = ys[i] - push, ys[i + 1] + push
                moved = True
        if not moved:
            break
    return [(y, stage, color) for y, (_, stage, color) in zip(ys, ordered)]


def _short_label(stage: str) -> str:
    """A stage name that fits the label margin (~18 characters at 10 px); the full name is its title."""
    return stage if len(stage) <= 18 else stage[:17] + "…"


def _curve_axes(xs: Scale, ys: Scale, ks: Sequence[int]) -> list[str]:
    bottom, left = ys.x(ys.lo), xs.left
    out = [
        f'<line class="axis" x1="{_f(left)}" y1="{_f(bottom)}" x2="{_f(xs.right)}" y2="{_f(bottom)}"/>',
        f'<line class="axis" x1="{_f(left)}" y1="{_f(ys.x(1.0))}" x2="{_f(left)}" y2="{_f(bottom)}"/>',
    ]
    for k in ks:
        out.append(f'<text class="tick" x="{_f(xs.x(k))}" y="{_f(bottom + 14)}" text-anchor="middle">{k}</text>')
    for v in (ys.lo, (ys.lo + 1.0) / 2, 1.0):
        out.append(f'<text class="tick" x="{_f(left - 4)}" y="{_f(ys.x(v) + 4)}" text-anchor="end">{v:.2f}</text>')
        out.append(f'<line class="grid" x1="{_f(left)}" y1="{_f(ys.x(v))}" x2="{_f(xs.right)}" y2="{_f(ys.x(v))}"/>')
    out.append(
        f'<text class="tick" x="{_f((left + xs.right) / 2)}" y="{_f(CURVE_H - 4)}" text-anchor="middle">k</text>'
    )
    return out


def _text(v: float | None) -> str:
    return "none" if v is None else f"{v:.3g}"


def _ci_text(ci: tuple[float, float] | None) -> str:
    return "none" if ci is None else f"[{ci[0]:.3g}, {ci[1]:.3g}]"
