"""The one reader of results files: load, check the version, validate against the schema.

The format is ``rag_eval/results.schema.json`` (JSON Schema draft 2020-12), described in
docs/pytest.md#the-results-file. Everything that reads a stored results file -- the
report and summary commands, the baseline, shard merges -- goes through
:func:`load_results`, so an old, new, truncated or hand-edited file gets one clear
message naming the file, what is wrong and the fix, instead of a KeyError deep in a
renderer.

Validation uses ``jsonschema-rs`` (a core dependency), so the same file is accepted or
refused the same way on every install, at a cost below that of ``json.loads`` of the
file; the pure-Python ``jsonschema`` took 12-22 times as long as ``json.loads``
(bench/results_validation.py, BENCHMARKS.md). The tests cross-check the schema with
``jsonschema``, the reference implementation.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.core.errors import RagEvalError

RESULTS_VERSION = 3
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "results.schema.json"  # the built-in tiers' assembly: ships
SCHEMA_NAME = "rag_eval/results.schema.json"
# What each version changed, for the message on a file of another version.
CHANGES: Mapping[int, str] = {
    2: "version 2 names stages by the system's own declared stages (failed_stage, details.stages, metric keys) "
    "and leaves cases a tier only measured out of pass_rate",
    3: "version 3 gives every metric its interval (metrics_n: se, ci, ci_method, confidence), every gate its "
    "rule, decision and detectable drop, and regression gates their paired test (docs/thresholds.md); "
    "a version-2 file is refused as a baseline too, since its gates carry none of these: regenerate the "
    "baseline on main with this rag_eval",
}
ERRORS_SHOWN = 3


class ResultsFileError(RagEvalError, ValueError):
    """A results file that cannot be read as this version's format; the message starts with its path."""


class ResultsVersionError(ResultsFileError):
    """A results file of another format version (older or newer than this reader's)."""


def load_results(path: str | Path) -> dict[str, Any]:
    """The results dict of ``path``: JSON, this version, valid against the schema."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultsFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ResultsFileError(
            f"{path}: not a JSON results file ({exc}); pass the file the gate wrote (--rag-results)"
        ) from None
    try:
        # NaN, Infinity, 1e400, 10**400: found where, as written (the marking parse is slower)
        marked = _MAYBE_BAD_NUMBER.search(text) is not None
        data = _loads_marking(text) if marked else json.loads(text)
        if marked:
            bad = number_problems(data)
            if bad:
                raise ResultsFileError(
                    f"{path}: not a valid version-{RESULTS_VERSION} results file: {_listed(bad)}; every number of a "
                    "results file is finite and within float range: the file was edited, re-run the gate to write it"
                )
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{path}: not a JSON results file ({exc}); pass the file the gate wrote (--rag-results)"
        ) from None
    except RecursionError:
        raise ResultsFileError(
            f"{path}: not a results file (JSON nested too deeply to read); pass the file the gate wrote (--rag-results)"
        ) from None
    return check_results(data, str(path))


def check_results(data: Any, source: str = "results") -> dict[str, Any]:
    """``data`` as a results dict, or a ResultsFileError saying why it is not one.

    ``source`` names the file (or the origin of an in-memory dict) in the message."""
    if not isinstance(data, dict):
        raise ResultsFileError(f"{source}: not a results file (a JSON {type(data).__name__}, expected an object)")
    if "version" not in data or not isinstance(data.get("cases"), list):
        raise ResultsFileError(
            f"{source}: not a rag-eval results file (no 'version' and 'cases'); pass the JSON the gate wrote "
            "(--rag-results), not a pytest-json-report or an HTML report"
        )
    check_version(data["version"], source)
    problems = schema_problems(data)
    if problems:
        raise ResultsFileError(
            f"{source}: not a valid version-{RESULTS_VERSION} results file ({SCHEMA_NAME}): {_listed(problems)}; "
            "the file was edited or cut short: re-run the gate to write it again"
        )
    return data


def written_problem(results: Mapping[str, Any], path: str | Path, finite: bool = True) -> str | None:
    """The writer's own check of what it is about to write: None when ``results`` is a
    valid file of this version, else one line naming the file and the first problems.

    ``finite=False``: the writer found NaN or an infinity in it (``json.dumps``), which
    the schema validator would read as null; they are listed by their JSON path. The
    writer keeps such a file beside the path (``<stem>.invalid.json``: no computed result
    lost) and never puts it in the place of an existing results file, so a writer/schema
    mismatch fails the run that made it instead of the next reader."""
    problems = schema_problems(results) if finite else number_problems(results)
    if not problems:
        return None
    return (
        f"not a valid version-{RESULTS_VERSION} results file ({SCHEMA_NAME}): {_listed(problems)}; "
        "`python -m rag_eval report` and --rag-baseline would refuse it (a number out of range in an input "
        "file, or a rag_eval bug: please report it with the file attached)"
    )


def _listed(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:ERRORS_SHOWN])
    return shown + (f" (and {len(problems) - ERRORS_SHOWN} more)" if len(problems) > ERRORS_SHOWN else "")


# A cheap look at the text before the slow walk: a non-finite constant, a long exponent, a long integer.
_MAYBE_BAD_NUMBER = re.compile(r"NaN|Infinity|[eE][+-]?\d{3,}|\d{300,}")


@dataclass(frozen=True)
class _AsWritten:
    """A number of the file that is not a finite float, as it is written there."""

    text: str


def _loads_marking(text: str) -> Any:
    """``json.loads`` with every NaN, infinity and out-of-float-range number replaced by
    its ``_AsWritten`` text (``number_problems`` lists them by path)."""

    def number(token: str) -> Any:
        try:
            value = float(token)
        except OverflowError:
            return _AsWritten(token)
        return value if math.isfinite(value) else _AsWritten(token)

    def integer(token: str) -> Any:
        try:
            float(int(token))
        except (OverflowError, ValueError):
            return _AsWritten(token if len(token) <= 40 else f"{token[:20]}…({len(token)} digits)")
        return int(token)

    return json.loads(text, parse_float=number, parse_int=integer, parse_constant=_AsWritten)


def number_problems(data: Any, path: tuple[Any, ...] = ()) -> list[str]:
    """``path: value`` for every number of ``data`` that is not finite or beyond float range."""
    if isinstance(data, _AsWritten):
        return [f"{json_path(path)}: {data.text} is not a finite number within float range"]
    if isinstance(data, float) and not math.isfinite(data):
        return [f"{json_path(path)}: {data!r} is not a finite number"]
    if isinstance(data, int) and not isinstance(data, bool) and abs(data) > _FLOAT_MAX_INT:
        return [f"{json_path(path)}: an integer of {len(str(abs(data)))} digits is beyond float range"]
    items = data.items() if isinstance(data, Mapping) else enumerate(data) if isinstance(data, list) else ()
    return [problem for key, value in items for problem in number_problems(value, (*path, key))]


_FLOAT_MAX_INT = int(sys.float_info.max)


def check_version(version: Any, source: str) -> None:
    """A version other than this reader's is refused with what to do about it."""
    if version == RESULTS_VERSION and type(version) is int:
        return
    if isinstance(version, int) and not isinstance(version, bool) and version < RESULTS_VERSION:
        changed = "; ".join(CHANGES[v] for v in sorted(CHANGES) if version < v <= RESULTS_VERSION)
        raise ResultsVersionError(
            f"{source}: results file version {version}, this rag_eval reads version {RESULTS_VERSION} ({changed}); "
            f"re-run the gate with this rag_eval to write a version-{RESULTS_VERSION} file, or read this one with the "
            f"rag_eval release that wrote it (`python -m rag_eval report {source}` there)"
        )
    if isinstance(version, int) and not isinstance(version, bool):
        raise ResultsVersionError(
            f"{source}: results file version {version} is newer than this rag_eval, which reads version "
            f"{RESULTS_VERSION}; upgrade rag_eval to the release that wrote it, or re-run the gate with this one"
        )
    raise ResultsVersionError(
        f"{source}: results file version {version!r} is not a version number (this rag_eval reads version "
        f"{RESULTS_VERSION}); re-run the gate to write the file again"
    )


def schema_problems(data: Any) -> list[str]:
    """Every place ``data`` breaks the schema, as ``path: reason`` lines (document order)."""
    errors = sorted(_validator().iter_errors(data), key=lambda e: [_sortable(p) for p in e.instance_path])
    return [f"{json_path(e.instance_path)}: {_reason(e)}" for e in errors]


def _sortable(part: Any) -> tuple[bool, int, str]:
    """cases[2] before cases[10]; names by name."""
    return (isinstance(part, str), part if isinstance(part, int) else 0, str(part))


def json_path(parts: Iterable[Any]) -> str:
    """``cases[3].details.stages`` for the path (cases, 3, details, stages); ``(top level)`` for none."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _reason(error: Any) -> str:
    """The validator's message, shortened (a whole case object quoted in it helps nobody);
    an enum lists every allowed value."""
    options = getattr(error.kind, "options", None)
    if type(error.kind).__name__ == "Enum" and isinstance(options, list):
        allowed = ", ".join(json.dumps(o) for o in options)
        return f"{json.dumps(error.instance, ensure_ascii=False)[:80]} is not one of {allowed}"
    bound = _BOUNDS.get(type(error.kind).__name__)
    limit = getattr(error.kind, "limit", None)
    if bound is not None and isinstance(error.instance, (int, float)) and limit is not None:
        # the validator writes a float in full (1e308 as 309 digits): the value as Python writes it
        return f"{error.instance!r} is {bound} {limit!r}"
    message = str(error.message)
    return message if len(message) <= 200 else message[:199] + "…"


_BOUNDS = {
    "Maximum": "greater than the maximum of",
    "Minimum": "less than the minimum of",
    "ExclusiveMaximum": "greater than or equal to the exclusive maximum of",
    "ExclusiveMinimum": "less than or equal to the exclusive minimum of",
}


def schema() -> dict[str, Any]:
    """The schema of the tiers registered now: the core and each tier's fragment
    (``rag_eval.results.schema``; the built-in tiers' assembly is ``SCHEMA_PATH``)."""
    return _schema(_registered())


def _registered() -> tuple[tuple[str, int], ...]:
    """The registry's state (a tier of a project's own changes the schema)."""
    return tuple((t.name, id(t)) for t in tiers.all_tiers())


@functools.lru_cache(maxsize=4)
def _schema(registered: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    from rag_eval.results.schema import results_schema

    return results_schema()


def _validator() -> Any:
    return _validator_of(_registered())


@functools.lru_cache(maxsize=4)
def _validator_of(registered: tuple[tuple[str, int], ...]) -> Any:
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(_schema(registered), validate_formats=True)


# --------------------------------------------------------------------------- typed access


def case_results(results: Mapping[str, Any]) -> list[CaseResult]:
    """The cases of a results dict as ``CaseResult`` objects, in file order."""
    return [CaseResult.from_dict(c) for c in results.get("cases") or () if isinstance(c, Mapping)]


def run_of(results: Mapping[str, Any]) -> Mapping[str, Any]:
    run = results.get("run")
    return run if isinstance(run, Mapping) else {}


def gates_of(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [g for g in results.get("gates") or () if isinstance(g, Mapping)]
