"""Coverage and width of the judge-corrected intervals: labels only, classic PPI, PPI++.

    python bench/ppi_coverage.py [--reps 20000] [--unlabelled 1000] [--labelled 50 150 300]

For each data kind and judge of tests/support/ppi_sim.py (binary Y with judges that
disagree with people on 5 / 10 / 20 % of cases or are biased upwards; continuous Y with
noisy and biased judges), REPS seeded data sets of n labelled + N unlabelled cases go
through rag_eval.stats.ppi.ppi_rows at λ = 0 (labels only), λ = 1 (PPI, as ARES) and the
tuned λ (PPI++). Coverage of the nominal 95 % interval is counted against the GENERATING
mean, with its own Wilson interval from REPS; the width is the mean over data sets. The
last rows repeat one setting measured against the drawn cases' own mean, to show the
finite-population effect that would hide a too-wide interval. The reference for each
width is labels-only in the same data sets (ratio < 1: the judge helps).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import md_table, run_header, write_results  # noqa: E402
from rag_eval.stats.closed_form import wilson  # noqa: E402
from rag_eval.stats.distributions import two_sided_z  # noqa: E402
from rag_eval.stats.ppi import ppi_rows  # noqa: E402
from tests.support.ppi_sim import simulate  # noqa: E402

METHODS: dict[str, float | None] = {"labels only": 0.0, "PPI": 1.0, "PPI++": None}
CHUNK = 2000  # data sets per batch: bounds memory at ~100 MB


def measure(kind: str, reps: int, n: int, big_n: int, seed: int, against_drawn: bool = False) -> list[dict[str, Any]]:
    """One row per judge: coverage (with its Wilson interval), mean width and mean λ per method."""
    z = two_sided_z(0.95)
    rng = np.random.default_rng(seed)
    acc: dict[str, dict[str, dict[str, float]]] = {}
    done = 0
    while done < reps:
        b = min(CHUNK, reps - done)
        mu, y, judges = simulate(kind, b, n + big_n, rng)
        target = y.mean(axis=1) if against_drawn else np.full(b, mu)
        for name, h in judges.items():
            for method, lam in METHODS.items():
                r = ppi_rows(y[:, :n], h[:, :n], h[:, n:], lam)
                cell = acc.setdefault(name, {}).setdefault(method, {"hit": 0.0, "width": 0.0, "lam": 0.0})
                cell["hit"] += float((np.abs(r.estimate - target) <= z * r.se).sum())
                cell["width"] += float((2 * z * r.se).sum())
                cell["lam"] += float(r.lam.sum())
        done += b
    rows = []
    for name, methods in acc.items():
        row: dict[str, Any] = {
            "kind": kind,
            "judge": name,
            "n": n,
            "N": big_n,
            "reps": reps,
            "target": "drawn cases' mean" if against_drawn else "generating mean",
        }
        for method, cell in methods.items():
            cov = wilson(int(cell["hit"]), reps)
            row[method] = {
                "coverage": cov.estimate,
                "coverage_low": cov.low,
                "coverage_high": cov.high,
                "width": cell["width"] / reps,
                "mean_lambda": cell["lam"] / reps,
            }
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--unlabelled", type=int, default=1000)
    parser.add_argument("--labelled", type=int, nargs="+", default=[50, 150, 300])
    args = parser.parse_args()
    header = run_header("ppi_coverage", sys.argv[1:])
    rows: list[dict[str, Any]] = []
    for kind in ("binary", "continuous"):
        for i, n in enumerate(args.labelled):
            rows += measure(kind, args.reps, n, args.unlabelled, seed=1000 * (kind == "binary") + i)
    rows += measure("binary", args.reps, 150, args.unlabelled, seed=7, against_drawn=True)
    table = []
    for row in rows:
        base = row["labels only"]["width"]
        cells: list[Any] = [row["kind"], row["judge"], str(row["n"]), row["target"]]
        for method in METHODS:
            m = row[method]
            cells.append(f"{m['coverage']:.3f} [{m['coverage_low']:.3f}, {m['coverage_high']:.3f}]")
            cells.append(f"{m['width']:.3f}" + ("" if method == "labels only" else f" ({m['width'] / base:.2f})"))
        cells.append(f"{row['PPI++']['mean_lambda']:.2f}")
        table.append(cells)
    headers = [
        "Y",
        "judge",
        "n",
        "coverage vs",
        "labels-only coverage",
        "width",
        "PPI coverage",
        "width (× labels)",
        "PPI++ coverage",
        "width (× labels)",
        "mean λ̂",
    ]
    markdown = md_table(headers, table)
    path = write_results("ppi_coverage", {**header, "confidence": 0.95, "rows": rows, "markdown": markdown})
    print(markdown)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
