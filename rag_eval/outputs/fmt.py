"""Numbers and metadata as the report prints them (templates get strings, not logic)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def fmt_number(value: Any, digits: int = 4) -> str:
    """0.7771 / 1 / 12 / n/a: fixed decimals without trailing zeros."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a" if value is None else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt_delta(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "–"
    text = fmt_number(abs(value))
    if text == "0":
        return "0"
    return ("+" if value > 0 else "−") + text


def fmt_scalar(value: Any) -> str:
    """Run metadata values: lists joined, mappings as k=v, None as a dash."""
    if value is None or value == "" or value == [] or value == {}:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={fmt_scalar(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_scalar(v) for v in value)
    if isinstance(value, float):
        return fmt_number(value)
    return str(value)


def truncate(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
