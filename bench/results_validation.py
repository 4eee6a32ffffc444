"""What validating a results file against rag_eval/results.schema.json costs, per validator.

    python bench/results_validation.py [--sizes 97,1000,5000] [--slow-up-to 1000]

Question: which validator can the one reader (``rag_eval.results.file``) afford on every
load of a results file (``--rag-baseline`` at start-up, ``merge``, ``report``, ``summary``)?
For each size, a synthetic results file (``tests/rag_eval/_results_factory.make_results``:
four tiers per golden item, the shapes of a real file) is serialised, then timed:

* ``json.loads`` of the file's text: the reference, a cost every reader pays anyway;
* ``jsonschema_rs.Draft202012Validator.iter_errors`` (what the reader uses);
* ``jsonschema.Draft202012Validator.iter_errors``, the pure-Python reference
  implementation (only up to ``--slow-up-to`` items: it takes minutes at 5,000).

Each is reported as a ratio against ``json.loads`` of the same file in the same run,
because the machine is shared (bench/_common.py). Writes ``bench/results/results_validation.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import load_average, md_table, ratio, run_header, write_results  # noqa: E402


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="97,1000,5000")
    parser.add_argument("--slow-up-to", type=int, default=1000, help="largest size the pure-Python validator runs on")
    args = parser.parse_args()
    import jsonschema
    import jsonschema_rs

    from rag_eval.results.file import schema
    from tests.rag_eval._results_factory import make_results

    header = run_header("results_validation", sys.argv[1:])
    fast = jsonschema_rs.Draft202012Validator(schema(), validate_formats=True)
    slow = jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker())
    rows: list[dict[str, Any]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        text = json.dumps(make_results(size), ensure_ascii=False)
        data = json.loads(text)
        row: dict[str, Any] = {"items": size, "cases": len(data["cases"]), "file_bytes": len(text.encode("utf-8"))}
        row["json_loads_s"] = _timed(lambda: json.loads(text))  # noqa: B023 - called only within this iteration
        problems: list[Any] = []
        row["jsonschema_rs_s"] = _timed(lambda: problems.extend(fast.iter_errors(data)))  # noqa: B023 - called only within this iteration
        row["problems"] = len(problems)
        row["jsonschema_s"] = _timed(lambda: list(slow.iter_errors(data))) if size <= args.slow_up_to else None  # noqa: B023 - called only within this iteration
        row["jsonschema_rs_ratio"] = ratio(row["jsonschema_rs_s"], row["json_loads_s"])
        row["jsonschema_ratio"] = ratio(row["jsonschema_s"], row["json_loads_s"]) if row["jsonschema_s"] else None
        row["load_average"] = load_average()
        rows.append(row)
        print(
            f"{size} items: loads {row['json_loads_s']:.3f} s, jsonschema-rs {row['jsonschema_rs_s']:.3f} s, "
            f"jsonschema {row['jsonschema_s'] if row['jsonschema_s'] is None else round(row['jsonschema_s'], 2)} s",
            flush=True,
        )
    table = md_table(
        ["items (cases)", "file MB", "json.loads s", "jsonschema-rs s", "× loads", "jsonschema s", "× loads"],
        [
            [
                f"{r['items']:,} ({r['cases']:,})",
                r["file_bytes"] / 1e6,
                r["json_loads_s"],
                r["jsonschema_rs_s"],
                r["jsonschema_rs_ratio"],
                r["jsonschema_s"] if r["jsonschema_s"] is not None else "not run",
                r["jsonschema_ratio"] if r["jsonschema_ratio"] is not None else "–",
            ]
            for r in rows
        ],
    )
    print(table)
    path = write_results("results_validation", {**header, "rows": rows, "table_md": table})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
