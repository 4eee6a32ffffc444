"""The comparison as Markdown (a PR comment), an SVG plot and one self-contained HTML page.

Everything taken from the comparison (configuration names, settings, stage names, case
ids) is user-supplied: escaped for HTML and SVG, and kept out of Markdown's table syntax.
A missing value is shown as "—" with its note, never as 0. Every estimate says how many
cases it rests on: in the column's header when every configuration has the same count,
else in each cell.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval.grid.losses import CAUSES

W, H, PAD = 560.0, 340.0, 48.0


def _num(v: Any, digits: int = 3) -> str:
    return "—" if v is None else f"{float(v):.{digits}f}"


def _est(e: Mapping[str, Any], with_n: bool = False) -> str:
    if e.get("value") is None:
        return "—"
    ci = e.get("ci")
    text = f"{_num(e['value'])} [{_num(ci[0], 2)}, {_num(ci[1], 2)}]" if ci else f"{_num(e['value'])} (no interval)"
    return f"{text} n={e.get('n')}" if with_n else text


def _shared_n(estimates: Sequence[Mapping[str, Any]]) -> int | None:
    """The one case count of a column's estimates (those with a value), or None if they differ."""
    counts = {e.get("n") for e in estimates if e.get("value") is not None}
    return counts.pop() if len(counts) == 1 else None


def _column(title: str, estimates: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """A column's header and cells: its n in the header when shared, else in each cell."""
    n = _shared_n(estimates)
    if n is not None or not any(e.get("value") is not None for e in estimates):
        return (f"{title} (n={n})" if n is not None else title), [_est(e) for e in estimates]
    return title, [_est(e, with_n=True) for e in estimates]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _ms(lat: Mapping[str, Any] | None) -> str:
    return "—" if not lat else f"{lat['p50']:.1f} / {lat['p95']:.1f}"


def _final(e: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return e["stages"][-1][key] if e["stages"] else {"value": None}


def markdown(c: Mapping[str, Any]) -> str:
    k = c["k"]
    lines = [
        f"### Configurations compared on the `{_cell(c['split'])}` split (k = {k})",
        "",
        f"Reference: `{_cell(c['reference'])}`. Paired tests against it, Holm over "
        f"{c['holm']['m']} comparison(s) at alpha {c['holm']['alpha']:g}; ★ = on the recall/latency Pareto front.",
        "",
    ]
    configs = c["configurations"]
    columns = [
        _column(f"recall@{k}", [_final(e, "recall") for e in configs]),
        _column(f"precision@{k}", [_final(e, "precision") for e in configs]),
        _column(f"irrelevant@{k}", [_final(e, "irrelevant") for e in configs]),
        _column("false retrieval", [e["false_retrieval"] for e in configs]),
    ]
    titles = " | ".join(title for title, _ in columns)
    lines += [
        f"| configuration | {titles} | case ms p50 / p95 | Δ recall@{k} (p adj.) | lost cases |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, e in enumerate(configs):
        t = _test_of(c, e["name"], f"retrieval.recall@{k}")
        delta = "reference" if e["name"] == c["reference"] else _delta(t)
        lost = sum((c["loss_counts"].get(e["name"]) or {}).values()) if e["name"] in c["loss_counts"] else "—"
        star = " ★" if e["name"] in c["pareto"] else ""
        estimates = " | ".join(cells[i] for _, cells in columns)
        lines.append(
            f"| `{_cell(e['name'])}`{star} | {estimates} | {_ms(e['latency']['case_ms'])} | {delta} | {lost} |"
        )
    lines += _loss_table(c)
    for name, problem in c["problems"].items():
        lines.append(f"- **`{_cell(name)}` has no results:** {_cell(problem)}")
    return "\n".join(lines) + "\n"


def _test_of(c: Mapping[str, Any], name: str, metric: str) -> Mapping[str, Any] | None:
    return next((t for t in c["tests"] if t["configuration"] == name and t["metric"] == metric), None)


def _delta(t: Mapping[str, Any] | None) -> str:
    if t is None or t.get("diff") is None:
        return "—"
    mark = " (different)" if t.get("different") else ""
    diff = 0.0 if abs(t["diff"]) < 5e-4 else t["diff"]  # no "-0.000"
    return f"{diff:+.3f} (p {t['p_adjusted']:.3g}){mark}"


def _loss_table(c: Mapping[str, Any]) -> list[str]:
    if not c["loss_counts"]:
        return []
    out = ["", f"Where each configuration loses what `{_cell(c['reference'])}` keeps (retrieval cases):", ""]
    out.append("| configuration | " + " | ".join(CAUSES) + " |")
    out.append("|---|" + "---|" * len(CAUSES))
    for name, n in c["loss_counts"].items():
        out.append(f"| `{_cell(name)}` | " + " | ".join(str(n[x]) for x in CAUSES) + " |")
    return out


def pareto_svg(c: Mapping[str, Any]) -> str:
    """Final recall@k (with its interval) against the case p50 latency (bar: p50–p95), the
    Pareto front joined by a line; configurations without both values are listed, not drawn."""
    pts = []
    for e in c["configurations"]:
        rec, lat = _final(e, "recall"), e["latency"]["case_ms"]
        if rec.get("value") is not None and lat:
            pts.append((e["name"], float(rec["value"]), rec.get("ci"), float(lat["p50"]), float(lat["p95"])))
    esc = html.escape
    body: list[str] = []
    if pts:
        x_hi = max(p[4] for p in pts) * 1.1 or 1.0
        y_lo = max(0.0, min((p[2] or [p[1]])[0] for p in pts) - 0.05)
        y_hi = min(1.0, max((p[2] or [0, p[1]])[-1] for p in pts) + 0.05)
        y_hi = y_hi if y_hi > y_lo else y_lo + 0.1

        def x(v: float) -> float:
            return PAD + (W - 2 * PAD) * v / x_hi

        def y(v: float) -> float:
            return H - PAD - (H - 2 * PAD) * (v - y_lo) / (y_hi - y_lo)

        front = sorted((p for p in pts if p[0] in c["pareto"]), key=lambda p: p[3])
        if len(front) > 1:
            path = " ".join(f"{x(p[3]):.1f},{y(p[1]):.1f}" for p in front)
            body.append(f'<polyline class="front" points="{path}" fill="none" stroke="#2ca02c" stroke-width="1.5"/>')
        for i, (name, q, ci, p50, p95) in enumerate(pts):
            on = name in c["pareto"]
            body.append(f'<line x1="{x(p50):.1f}" x2="{x(p95):.1f}" y1="{y(q):.1f}" y2="{y(q):.1f}" stroke="#999"/>')
            if ci:
                body.append(
                    f'<line x1="{x(p50):.1f}" x2="{x(p50):.1f}" y1="{y(ci[0]):.1f}" y2="{y(ci[1]):.1f}" stroke="#555"/>'
                )
            fill = "#2ca02c" if on else "#1f77b4"
            body.append(
                f'<circle cx="{x(p50):.1f}" cy="{y(q):.1f}" r="4" fill="{fill}"><title>{esc(name)}: recall '
                f"{q:.3f}, p50 {p50:.1f} ms</title></circle>"
            )
            body.append(f'<text x="{x(p50) + 6:.1f}" y="{y(q) - 6:.1f}" font-size="10">{i + 1}</text>')
        body.append(_axes(x_hi, y_lo, y_hi, c["k"]))
    else:
        body.append(f'<text x="{PAD}" y="{H / 2}">no configuration has both recall and latency to plot</text>')
    legend = "".join(f"<li>{esc(p[0])}</li>" for p in pts)  # an <ol>: numbered as the dots are
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="pareto" width="{W:.0f}" height="{H:.0f}" '
        f'viewBox="0 0 {W:.0f} {H:.0f}" role="img" aria-label="recall against latency">{"".join(body)}</svg>'
    )
    return svg + f'<ol class="pareto-legend">{legend}</ol>'


def _axes(x_hi: float, y_lo: float, y_hi: float, k: int) -> str:
    out = [
        f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#333"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#333"/>',
        f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle" font-size="11">'
        "case time, ms (dot p50, bar to p95)</text>",
        f'<text x="14" y="{H / 2}" transform="rotate(-90 14 {H / 2})" text-anchor="middle" font-size="11">'
        f"recall@{k} (final stage, 95% interval)</text>",
    ]
    for i in range(5):
        vx = x_hi * i / 4
        px = PAD + (W - 2 * PAD) * i / 4
        out.append(f'<text x="{px:.1f}" y="{H - PAD + 14}" text-anchor="middle" font-size="10">{vx:.0f}</text>')
        vy = y_lo + (y_hi - y_lo) * i / 4
        py = H - PAD - (H - 2 * PAD) * i / 4
        out.append(f'<text x="{PAD - 4}" y="{py + 3:.1f}" text-anchor="end" font-size="10">{vy:.2f}</text>')
    return "".join(out)


def page(c: Mapping[str, Any]) -> str:
    """One self-contained HTML file: no script, no network; every value escaped."""
    esc = html.escape
    k = c["k"]
    head = (
        f"<th>configuration</th><th>stage</th><th>recall@{k}</th><th>precision@{k}</th><th>irrelevant@{k}</th>"
        "<th>n (cases)</th><th>stage ms p50 / p95</th>"
    )
    usage = "".join(
        f"<tr><td>{esc(e['name'])}</td><td>{e['tokens']['prompt_tokens']}</td><td>{e['tokens']['completion_tokens']}</td>"
        f"<td>{esc(_num(e['tokens'].get('cost_usd'), 4))}</td></tr>"
        for e in c["configurations"]
        if e.get("tokens")
    )
    spent = (
        "<h2>Tokens and cost</h2><table><tr><th>configuration</th><th>prompt tokens</th><th>completion tokens</th>"
        f"<th>cost (USD)</th></tr>{usage}</table>"
        if usage
        else "<p>No model calls were counted (no answers generated, or none priced): tokens and cost are absent.</p>"
    )
    rows = []
    for e in c["configurations"]:
        for s in e["stages"]:
            lat = (e["latency"]["stage_ms"] or {}).get(s["stage"])
            rows.append(
                f"<tr><td>{esc(e['name'])}</td><td>{esc(s['stage'])}</td><td>{esc(_est(s['recall']))}</td>"
                f"<td>{esc(_est(s['precision']))}</td><td>{esc(_est(s['irrelevant']))}</td>"
                f"<td>{esc(_stage_n(s))}</td><td>{esc(_ms(lat))}</td></tr>"
            )
    tests = "".join(
        f"<tr><td>{esc(t['configuration'])}</td><td>{esc(t['metric'])}</td><td>{esc(_num(t.get('diff')))}</td>"
        f"<td>{esc(_ci(t.get('diff_ci')))}</td><td>{t['paired_n']}</td><td>{t['p_worse']:.3g}</td>"
        f"<td>{t['p_better']:.3g}</td><td>{t['p_adjusted']:.3g}</td><td>{'yes' if t['different'] else 'no'}</td>"
        f"<td>{esc(_num(t.get('mde')))}</td><td>{t['wins']} / {t['losses']} / {t['ties']}</td></tr>"
        for t in c["tests"]
    )
    md = esc(markdown(c))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1"><title>rag-eval grid comparison</title>'
        "<style>body{font:14px system-ui,sans-serif;margin:1.5em;max-width:1100px}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}pre{white-space:pre-wrap;"
        "background:#f6f6f6;padding:8px}.pareto-legend{columns:2;font-size:12px}</style></head><body>"
        f"<h1>Grid comparison: {len(c['configurations'])} configurations, split {esc(c['split'])}</h1>"
        f"<h2>Quality against time</h2>{pareto_svg(c)}"
        f"<h2>Per stage</h2><table><tr>{head}</tr>{''.join(rows)}</table>"
        f"<h2>Against the reference {esc(c['reference'])}</h2><p>{esc(c['holm'].get('sentence', ''))}</p>"
        "<table><tr><th>configuration</th><th>metric</th><th>Δ (B − ref)</th><th>interval</th><th>n</th>"
        "<th>p worse</th><th>p better</th><th>p adj. (Holm)</th><th>different</th><th>detectable Δ</th>"
        f"<th>wins / losses / ties</th></tr>{tests}</table>"
        f"{spent}<h2>Summary (Markdown)</h2><pre>{md}</pre></body></html>"
    )


def _stage_n(s: Mapping[str, Any]) -> str:
    """The cases a stage's three estimates rest on: one count, or each when they differ."""
    counts = [s[key].get("n") for key in ("recall", "precision", "irrelevant")]
    return str(counts[0]) if len(set(counts)) == 1 else " / ".join(str(n) for n in counts)


def _ci(ci: Sequence[float] | None) -> str:
    return "—" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
