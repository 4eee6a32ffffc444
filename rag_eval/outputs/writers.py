"""The output formats behind one registry: each renders a run's typed results.

A format is one module with a writer object (``name``, ``append``, ``render``) and a
``register(...)`` call at import; each built-in one (json, html, markdown, junit) loads
on its first ``get`` (a run without a report never imports the template engine). Every
writer renders the same :class:`RunResults`, already redacted (:func:`redacted`, once,
before any writer sees it), so no format repeats the redaction or reads the results
file's dict back by key.

``write_file`` is the one step that puts a rendered file on disk (atomically, or
appended for ``$GITHUB_STEP_SUMMARY``): a guard on output paths belongs there. The JUnit
writer renders testcases that pytest's own ``--junitxml`` writer puts in its file.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from rag_eval.results.model import RunResults
from rag_eval.util.person_files import append_atomic, write_atomic
from rag_eval.util.redact import Redactor

R_co = TypeVar("R_co", covariant=True)
# the built-in formats and their modules in this package, each imported when first asked for
BUILT_IN: dict[str, str] = {"json": "json_file", "html": "html", "markdown": "markdown", "junit": "junit"}


@dataclass(frozen=True)
class Context:
    """What a writer may need besides the results."""

    artifact_url: str | None = None  # markdown: the link to the full report
    write_error: str | None = None  # junit: the results file could not be written (why)
    calibration: tuple[str, ...] = ()  # html: the lines of a ``calibrate`` record, shown as a section


class Writer(Protocol[R_co]):
    """One output format: ``render`` is pure (results in, the format's content out)."""

    @property
    def name(self) -> str: ...

    @property
    def append(self) -> bool: ...  # a file of this format is appended to, not replaced

    def render(self, results: RunResults, context: Context) -> R_co: ...


_REGISTRY: dict[str, Writer[Any]] = {}


def register(writer: Writer[Any]) -> Writer[Any]:
    """Add a format (its name must be new). The same writer class registering again (its
    module imported anew, as pytester's in-process runs do after restoring ``sys.modules``)
    replaces its earlier instance; another class under a taken name is refused."""
    known = _REGISTRY.get(writer.name)
    if known is not None and known is not writer and not _same_class(known, writer):
        raise ValueError(f"output format {writer.name!r} is already registered ({known!r})")
    _REGISTRY[writer.name] = writer
    return writer


def _same_class(a: object, b: object) -> bool:
    ta, tb = type(a), type(b)
    return (ta.__module__, ta.__qualname__) == (tb.__module__, tb.__qualname__)


def get(name: str) -> Writer[Any]:
    if name not in _REGISTRY and name in BUILT_IN:
        importlib.import_module(f"{__package__}.{BUILT_IN[name]}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown output format {name!r}; registered: {', '.join(_REGISTRY)}") from None


def names() -> tuple[str, ...]:
    for name in BUILT_IN:
        get(name)
    return tuple(_REGISTRY)


def redacted(results: RunResults, redactor: Redactor) -> RunResults:
    """``results`` with every secret of the run replaced, for all writers at once.

    Without a secret nothing is copied (the redacted copy would equal the results)."""
    if not redactor:
        return results
    shown = RunResults.from_dict(redactor.obj(results.to_dict()))
    # a max_drop gate's terms are numbers the file does not carry; its terminal line shows them
    kept = tuple(
        replace(red, baseline=live.baseline, baseline_n=live.baseline_n, max_drop=live.max_drop)
        for red, live in zip(shown.gates, results.gates)
    )
    return replace(shown, gates=kept)


def write_file(path: Path, data: bytes, append: bool = False) -> Path:
    """The one write step of every file format: atomic (a reader sees the old file or the
    new one), or appended when the format says so (old content and new through a
    temporary file: never half an append); returns ``path``. Both go through the one
    write rule, ``rag_eval.util.person_files``."""
    if append:
        return append_atomic(path, data)
    return write_atomic(path, data)  # a failed write leaves no temporary file


def write(name: str, results: RunResults, path: Path, context: Context | None = None) -> Path:
    """Render ``results`` in format ``name`` and write it to ``path``."""
    writer = get(name)
    data = writer.render(results, context or Context())
    return write_file(path, data, writer.append)
