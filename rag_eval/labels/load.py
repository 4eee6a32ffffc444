"""Read a human-labels file (JSONL, docs/human-labels.md) into ``Label``s, with file:line errors.

The lines are read by the golden sets' reader (``rag_eval.golden.load.read_items``): a bad
UTF-8 byte, a line that is not JSON, a bad field or a second label of one person for one
case, metric and unit each get their ``file:line`` message, and every error of the file is
reported together, so a filled-in sheet is mended in one pass.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, cast

from rag_eval import tiers
from rag_eval.golden.load import GoldenSetError, read_items
from rag_eval.labels.model import UNIT_METRIC, UNIT_VERDICTS, UNITS, VERDICT_VALUE, Label, Unit

KEYS = frozenset({"case", "metric", "label", "annotator", "claim", "fact", "note"})
_METRIC = re.compile(r"^([a-z_]+)\.(\S+)$")
MAX_NOTE_CHARS = 2_000


class LabelsError(GoldenSetError):
    """A human-labels file that cannot be used; the message names file:line and the fix."""


def load_labels(path: str | Path) -> list[Label]:
    """Every label of ``path``; all errors of the file are collected and raised together."""
    path = Path(path)
    if not path.is_file():
        raise LabelsError(
            f"{path}: human-labels file not found (give a JSONL file with one label per line, docs/human-labels.md)"
        )
    return read_items(path, parse_label, LabelsError, "human-labels file")


def parse_label(raw: Any, where: str) -> Label:
    """One line's label, or a LabelsError naming ``where`` (file:line) and the fix."""
    if not isinstance(raw, dict):
        raise LabelsError(
            f"{where}: each line must be a JSON object like "
            '{"case": ..., "metric": "judge.faithfulness", "label": 1, "annotator": ...}, '
            f"got {type(raw).__name__}"
        )
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise LabelsError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; valid fields: {', '.join(sorted(KEYS))}"
        )
    case = _text(raw, "case", where, "the golden or dialogue id of the case")
    where = f"{where} (case {case!r})"
    metric = _metric(raw, where)
    unit, index = _unit(raw, metric, where)
    value, verdict = _value(raw.get("label"), unit, where)
    annotator = _text(raw, "annotator", where, "the name of the person who labelled it")
    note = raw.get("note", "")
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
        raise LabelsError(f"{where}: note must be a string of at most {MAX_NOTE_CHARS:,} characters")
    return Label(
        case=case,
        metric=metric,
        value=value,
        annotator=annotator.strip(),
        unit=unit,
        index=index,
        verdict=verdict,
        note=note,
        source=where.split(" (case")[0],
    )


def _text(raw: dict[str, Any], key: str, where: str, what: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise LabelsError(f"{where}: missing or empty required field {key!r} (a non-empty string: {what})")
    return value


def _metric(raw: dict[str, Any], where: str) -> str:
    metric = _text(raw, "metric", where, "the judged metric's key, e.g. 'judge.faithfulness'")
    match = _METRIC.match(metric)
    if match is None or match.group(1) not in tiers.judged():
        raise LabelsError(
            f"{where}: metric {metric!r} is not a judged metric's key; write tier.name with tier one of "
            f"{', '.join(tiers.judged())}, e.g. 'judge.faithfulness', 'judge.coverage', 'dialogue.hint_success'"
        )
    return metric


def _unit(raw: dict[str, Any], metric: str, where: str) -> tuple[Unit | None, int | None]:
    given = [u for u in UNITS if u in raw]
    if not given:
        return None, None
    if len(given) > 1:
        raise LabelsError(
            f"{where}: a label is for one claim or one key fact, not both; "
            "write one line per claim and one per key fact"
        )
    unit = given[0]
    index = raw[unit]
    if not isinstance(index, int) or isinstance(index, bool) or index < 1:
        raise LabelsError(
            f"{where}: {unit} must be the 1-based number of the {unit} in the judge's verdict, got {index!r}"
        )
    if metric != UNIT_METRIC[unit]:
        raise LabelsError(f"{where}: a {unit} label belongs to metric {UNIT_METRIC[unit]!r}, not {metric!r}")
    return unit, index


def _value(label: Any, unit: Unit | None, where: str) -> tuple[float, str | None]:
    """The label as a number in [0, 1] and the verdict word it was given as."""
    allowed = UNIT_VERDICTS[unit] if unit is not None else tuple(VERDICT_VALUE)
    if label is None:
        raise LabelsError(
            f"{where}: label is empty; fill it with one of {', '.join(allowed)}"
            + ("" if unit is not None else ", true/false or a number in [0, 1]")
        )
    if isinstance(label, bool):
        return (1.0 if label else 0.0), None
    if isinstance(label, str):
        word = re.sub(r"[\s\-]+", "_", label.strip().lower())
        if word not in allowed:
            raise LabelsError(
                f"{where}: label {label!r} is not a verdict of this scale; use one of {', '.join(allowed)}"
            )
        return VERDICT_VALUE[word], word
    if isinstance(label, (int, float)):
        value = float(label)
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise LabelsError(
                f"{where}: label {label!r} is outside [0, 1]; give the metric's own scale "
                "(1 = supported / covered / relevant, 0 = not)"
            )
        if unit is not None:
            scale = [VERDICT_VALUE[v] for v in UNIT_VERDICTS[unit]]
            if value not in scale:
                raise LabelsError(
                    f"{where}: a {unit} label is one of {', '.join(allowed)} "
                    f"({', '.join(f'{s:g}' for s in scale)}), got {label!r}"
                )
        return value, None
    raise LabelsError(
        f"{where}: label must be a verdict word, true/false or a number in [0, 1], "
        f"got {type(cast(object, label)).__name__}"
    )
