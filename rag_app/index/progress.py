"""Progress of long index work (embedding every child chunk): done/total, rate, ETA.

The build API takes ``progress``:

* ``None`` (default): what ``RAG_PROGRESS`` says (``on``: as ``True``, ``off``: as
  ``False``), else (unset or ``auto``) a tqdm bar on stderr when stderr is a terminal
  and nothing otherwise (CI logs, pipes, pytest-xdist workers stay clean);
* ``True``: the tqdm bar on stderr even when it is not a terminal; ``False``: nothing;
* a callable ``(done, total) -> None``: called with ``(0, total)`` before the first
  batch and after every batch, so a caller (the evaluation plugin, a GUI) can draw its
  own display. Nothing is written to stderr then.

stdout is never used: ``python -m rag_app ingest`` prints its result there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TextIO, Union

from rag_app.errors import ConfigError

ProgressCallback = Callable[[int, int], None]
Progress = Union[bool, ProgressCallback, None]  # noqa: UP007 - a runtime alias used in isinstance-free annotations; kept as Union for mypy's alias inference

ENV = "RAG_PROGRESS"
ENV_VALUES: dict[str, bool | None] = {"auto": None, "": None, "on": True, "1": True, "off": False, "0": False}
UNIT = "chunk"
MIN_INTERVAL_S = 0.5  # at most two redraws a second: cheap, and readable in a log when forced


def _silent(done: int, total: int) -> None:
    """The reporter when progress is off."""


def from_env(env: Mapping[str, str] | None = None) -> bool | None:
    """``RAG_PROGRESS`` as True (on), False (off) or None (auto); a bad value names the variable."""
    raw = (os.environ if env is None else env).get(ENV, "").strip().lower()
    if raw not in ENV_VALUES:
        raise ConfigError(f"{ENV}={raw!r}: use auto, on or off")
    return ENV_VALUES[raw]


@contextmanager
def progress_reporter(
    progress: Progress, desc: str, total: int, stream: TextIO | None = None
) -> Iterator[ProgressCallback]:
    """A ``(done, total)`` reporter for ``total`` units of work, per ``progress`` (module doc)."""
    if progress is None:
        progress = from_env()
    if callable(progress):
        progress(0, total)
        yield progress
        return
    if progress is False:
        yield _silent
        return
    from tqdm import tqdm  # noqa: PLC0415 - only builds need it

    bar = tqdm(
        total=total,
        desc=desc,
        unit=UNIT,
        file=stream if stream is not None else sys.stderr,
        disable=None if progress is None else False,  # None: tqdm turns itself off without a TTY
        mininterval=MIN_INTERVAL_S,
        dynamic_ncols=True,
    )

    def report(done: int, new_total: int) -> None:
        if new_total != bar.total:
            bar.total = new_total
        bar.update(done - bar.n)

    try:
        yield report
    finally:
        bar.close()
