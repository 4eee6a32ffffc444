"""The human-labels block of a results file (``labels``: ``LabelReport.to_dict``) as the
terminal, the HTML report and the Markdown summary show it: one row per labelled metric
with n labelled, agreement, κ, bias and the three estimates with intervals and λ, then the
labels left out. Every text here is plain; each output escapes it its own way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.stats.interval import Interval, fmt_interval

LEFT_OUT_SHOWN = 5  # in the terminal; the report and the results file list all


@dataclass(frozen=True)
class LabelRow:
    """One labelled metric, formatted."""

    metric: str
    labelled: str  # "60 of 200 judged"
    agreement: str  # accuracy (binary, categorical) or Spearman ρ and MAE (continuous)
    kappa: str
    bias: str
    judge_only: str
    labels_only: str
    ppi: str
    lam: str


def _num(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None else f"{float(value):.{digits}f}"


def _signed(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):+.2f}"


def _interval(row: Mapping[str, Any]) -> str:
    return fmt_interval(Interval.from_dict(dict(row)))


def label_rows(block: Mapping[str, Any] | None) -> list[LabelRow]:
    """The rows of ``block`` (None: no labels were given)."""
    if not block:
        return []
    out = []
    for m in block["metrics"]:
        if m["kind"] == "continuous":
            agreement = f"Spearman {_num(m['spearman'])}, MAE {_num(m['mae'])}"
        else:
            agreement = f"{_num(m['accuracy'])} accuracy"
        out.append(
            LabelRow(
                metric=str(m["metric"]),
                labelled=f"{m['n_labelled']} of {m['n_judged']} judged",
                agreement=agreement,
                kappa=_num(m["kappa"]),
                bias=_signed(m["bias"]),
                judge_only=_interval(m["judge_only"]),
                labels_only=_interval(m["labels_only"]),
                ppi=_interval(m["ppi"]),
                lam="n/a" if m["lam"] is None else f"{float(m['lam']):.2f}",
            )
        )
    return out


def confidence_of(block: Mapping[str, Any] | None) -> str:
    return f"{float(block['confidence']):.0%}" if block else ""


def left_out_lines(block: Mapping[str, Any] | None, limit: int | None = None) -> list[str]:
    """One line per label left out (``source``: file:line), the first ``limit`` of them."""
    rows: Sequence[Mapping[str, Any]] = block["left_out"] if block else ()
    shown = rows if limit is None else rows[:limit]
    lines = [f"{r['source']}: {r['case']} · {r['metric']}: {r['reason']}" for r in shown]
    if limit is not None and len(rows) > limit:
        lines.append(f"… and {len(rows) - limit} more (all in the results file's labels.left_out)")
    return lines


def terminal_lines(block: Mapping[str, Any] | None) -> list[str]:
    """The terminal's lines: one per labelled metric, then the labels left out."""
    if block is None:
        return []
    rows = label_rows(block)
    conf = confidence_of(block)
    out = [f"human labels: {len(rows)} labelled metric(s), {conf} intervals"]
    out += [
        f"  {r.metric}: {r.labelled}, agreement {r.agreement}, κ {r.kappa}, bias {r.bias}; "
        f"judge-only {r.judge_only}, labels-only {r.labels_only}, PPI++ {r.ppi} (λ {r.lam})"
        for r in rows
    ]
    left = block["left_out"]
    if left:
        out.append(f"  {len(left)} label(s) left out (not used):")
        out += [f"    {line}" for line in left_out_lines(block, LEFT_OUT_SHOWN)]
    return out
