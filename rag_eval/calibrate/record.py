"""The calibration record: written as a small JSON file, read back, said in a few lines.

The same lines go to the terminal (``python -m rag_eval calibrate``) and to the HTML report
(``python -m rag_eval report … --calibration FILE``). Correlations are shown ×100, as the
paper prints them, with their bootstrap interval over instances.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval.calibrate.meta_eval import METRICS
from rag_eval.calibrate.run import FORMAT, VERSION
from rag_eval.core.errors import RagEvalError
from rag_eval.util.person_files import write_atomic


class CalibrationFileError(RagEvalError):
    """A calibration file that cannot be read: names the file and the fix."""


def write_record(path: Path, record: Mapping[str, Any]) -> Path:
    write_atomic(path, (json.dumps(record, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))
    return path


def load_record(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationFileError(
            f"{path}: no such calibration file; write one with `python -m rag_eval calibrate`"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CalibrationFileError(
            f"{path}: not a readable calibration file ({exc}); run `python -m rag_eval calibrate` again"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationFileError(
            f'{path}: not a calibration file (no "format": "{FORMAT}"); pass the file `calibrate --out` wrote'
        )
    if data.get("version") != VERSION:
        raise CalibrationFileError(
            f"{path}: calibration format version {data.get('version')!r}, this rag-eval reads {VERSION}; "
            "rerun calibrate"
        )
    return data


def _x100(value: Any) -> str:
    return f"{100 * value:.2f}" if isinstance(value, (int, float)) and math.isfinite(value) else "–"


def _corr(row: Mapping[str, Any], key: str) -> str:
    """``60.90 [55.1, 66.2]``, or the estimate and why there is no interval."""
    iv = row.get(key) or {}
    est = iv.get("estimate")
    if est is None:
        return f"– ({iv.get('reason') or 'undefined'})"
    if iv.get("low") is None or iv.get("high") is None:
        return f"{_x100(est)} (no interval: {iv.get('reason')})"
    return f"{_x100(est)} [{100 * iv['low']:.1f}, {100 * iv['high']:.1f}]"


def _row(name: str, row: Mapping[str, Any]) -> str:
    if "absent" in row:
        return f"{name} – ({row['absent']})"
    imputed = f", {row['imputed']} missing difference(s) set to the median" if row.get("imputed") else ""
    return f"{name} r {_corr(row, 'pearson')}, ρ {_corr(row, 'spearman')} (n={row.get('n')}{imputed})"


def lines(record: Mapping[str, Any]) -> list[str]:
    """The calibration in plain lines (escape them for the medium: terminal or HTML)."""
    judge, sample, cost = record.get("judge", {}), record.get("sample", {}), record.get("cost", {})
    total = record.get("set", {}).get("instances")
    out = [
        f"calibration of judge {judge.get('model')!s} (native, prompt {judge.get('prompt_version')}, mode "
        f"{judge.get('mode')}) on RAGChecker's human meta-evaluation: {sample.get('judged')} of {total} instances "
        f"judged (seed {sample.get('seed')}; {sample.get('not_run')} not run), {record.get('errors')} response(s) "
        "errored; Pearson r and Spearman ρ ×100 against people, 95% bootstrap intervals over instances"
    ]
    scores = judge.get("scores", {})
    published = record.get("published", {}).get("rows", {})
    for metric in METRICS:
        rows = record.get("agreement", {}).get(metric, {})
        out.append(f"  {metric} (judge {scores.get(metric)}):")
        out.append("    " + _row("your judge", rows.get("judge", {})))
        out.append("    " + _row("RAGChecker, same instances", rows.get("RAGChecker", {})))
        out.append("    " + _row("people vs people, same instances", rows.get("people", {})))
        pub = "; ".join(f"{name} {p[0]:.2f} / {p[1]:.2f}" for name, by in published.items() if (p := by.get(metric)))
        out.append(f"    published, all {total} instances (r / ρ): {pub}")
    note = record.get("published", {}).get("note")
    if note:
        out.append(f"  {note}")
    per = cost.get("per_instance") or {}
    per_text = (
        f"; per judged instance {per['calls']:.1f} calls, {per['prompt_tokens']:.0f} prompt + "
        f"{per['completion_tokens']:.0f} completion tokens"
        if per
        else ""
    )
    usd = f", {cost['cost_usd']:.4f} USD" if cost.get("cost_usd") else ""
    out.append(
        f"  cost: {cost.get('calls', 0) - cost.get('cached_calls', 0)} calls sent, {cost.get('cached_calls', 0)} "
        f"answered from the cache, {cost.get('prompt_tokens', 0):,} prompt + {cost.get('completion_tokens', 0):,} "
        f"completion tokens{usd}{per_text}"
    )
    return out
