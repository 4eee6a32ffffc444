"""The one rule for every file a command writes: no output is an input, nothing invalid
replaces a file, and a person's work is never overwritten.

Every writer of rag_eval (the results file, the HTML report, the Markdown summary, the
labelling sheet and page, drafts, review decisions, golden files) goes through these
functions, so the rule is kept in one place (docs/report.md, "Files a person
edits"):

``refuse_overlap(outputs, inputs)``
    Before anything is written: an output path that is one of the command's inputs, or
    two outputs that are one file, is an ``OutputIsInputError`` naming both options and
    the path. Paths are compared resolved (symlinks followed, ``..`` removed) and, when
    both exist, by ``os.path.samefile`` (a hard link is the same file too).

``write_atomic(path, data, validate=...)``
    ``data`` goes to a temporary file beside ``path`` and is renamed over it, so a reader
    sees the old file or the new one. ``validate(data)`` returns a problem (a string) or
    None; with a problem nothing is put in the place of ``path`` (an existing file stays
    byte for byte) and ``InvalidOutputError`` says why. ``keep_rejected=True`` keeps the
    rejected bytes at ``<stem>.invalid<suffix>`` beside it (no computed result lost).

``refuse_existing(name, path)``
    An output that must be new (``draft --out``): an existing file (or a symlink) is a
    ``PersonWorkError`` naming the option and the path.

``guard_person_file(path, count_work, force, what=...)``
    Before a command writes a file a person fills in (a labelling sheet, a review file):
    when ``path`` exists and ``count_work(path)`` finds work in it (labels, decisions),
    ``PersonWorkError`` names the file and how much it holds, unless ``force``; with
    ``force`` a timestamped copy (``<stem>.<UTC time><suffix>``) is kept first and its path
    returned.

The errors are ``RagEvalError``s: the command line prints them and exits 2.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from rag_eval.core.errors import RagEvalError
from rag_eval.util.atomic import write_atomic as _write_atomic

PathLike = str | os.PathLike[str]
Named = tuple[str, PathLike | None]  # (what the path is, e.g. "--out", the path; None: not given)


class FileGuardError(RagEvalError):
    """A write refused by the rule of this module; nothing was written."""


class OutputIsInputError(FileGuardError):
    """An output path is an input of the same command, or two outputs are one file."""


class InvalidOutputError(FileGuardError):
    """What a writer produced failed its validation; it did not replace the file."""


class PersonWorkError(FileGuardError):
    """The output holds a person's work and ``--force`` was not given."""


def refuse_overlap(outputs: Iterable[Named], inputs: Iterable[Named]) -> None:
    """``OutputIsInputError`` when an output is an input or another output (see the module)."""
    seen_in = [(name, Path(p)) for name, p in inputs if p is not None]
    seen_out: list[tuple[str, Path]] = []
    for name, raw in outputs:
        if raw is None:
            continue
        path = Path(raw)
        for in_name, in_path in seen_in:
            if same_file(path, in_path):
                raise OutputIsInputError(
                    f"{name} {path} is the input {in_name} {in_path} of the same command: it would be overwritten; "
                    f"write {name} somewhere else (nothing was written)"
                )
        for out_name, out_path in seen_out:
            if same_file(path, out_path):
                raise OutputIsInputError(
                    f"{name} {path} and {out_name} {out_path} are one file: one would overwrite the other; "
                    "give each output its own path (nothing was written)"
                )
        seen_out.append((name, path))


def refuse_existing(name: str, path: PathLike, *, what: str = "a person's work") -> None:
    """``PersonWorkError`` when ``path`` exists: an output that must be new (``draft --out``)
    never replaces a file, which may hold ``what``; nothing was written."""
    target = Path(path)
    if target.exists() or target.is_symlink():
        raise PersonWorkError(
            f"{name} {target} exists and may hold {what}: it is never overwritten; "
            "give a new path (nothing was written)"
        )


def same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` are one file: equal once resolved (symlinks followed), or one inode."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet: then they are not one file
        return False


def write_atomic(
    path: PathLike,
    data: bytes,
    validate: Callable[[bytes], str | None] | None = None,
    *,
    keep_rejected: bool = False,
) -> Path:
    """Validate ``data``, then write it to ``path`` atomically; returns ``path``.

    A failed validation raises ``InvalidOutputError`` and leaves ``path`` as it was; an
    OSError of the write propagates with no temporary file left behind."""
    target = Path(path)
    problem = validate(data) if validate is not None else None
    if problem is not None:
        kept = ""
        if keep_rejected:
            rejected = rejected_path(target)
            try:
                _write_atomic(rejected, data)
                kept = f"; what was produced is kept in {rejected}"
            except OSError as exc:
                kept = f"; it could not be kept either ({exc.strerror or exc})"
        state = "left as it was" if target.exists() else "not written"
        raise InvalidOutputError(f"{target}: {state}: what was produced is invalid: {problem}{kept}")
    _write_atomic(target, data)
    return target


def rejected_path(path: Path) -> Path:
    """Where ``write_atomic(keep_rejected=True)`` keeps output that failed validation."""
    return path.with_name(f"{path.stem}.invalid{path.suffix}")


def append_atomic(path: PathLike, data: str | bytes) -> Path:
    """``data`` (text as UTF-8) appended to ``path`` (e.g. ``$GITHUB_STEP_SUMMARY``) by
    writing the old content and the new to a temporary file and renaming it: never half
    an append."""
    target = Path(path)
    try:
        old = target.read_bytes()
    except FileNotFoundError:
        old = b""
    return write_atomic(target, old + (data.encode("utf-8") if isinstance(data, str) else data))


def guard_person_file(
    path: PathLike,
    count_work: Callable[[Path], int],
    force: bool,
    *,
    what: str = "entries a person made",
    option: str = "--force",
) -> Path | None:
    """Refuse to replace a file holding a person's work, or keep a copy of it first.

    Returns the path of the timestamped copy when one was made (``force`` and work
    found), else None (no file, or nothing a person did in it)."""
    target = Path(path)
    if not target.is_file():
        return None
    count = count_work(target)
    if count <= 0:
        return None
    if not force:
        raise PersonWorkError(
            f"{target} holds {count} {what}: refusing to overwrite it; write to another folder or file, "
            f"or give {option} to replace it (a timestamped copy of it is kept)"
        )
    return backup_copy(target)


def backup_copy(path: Path, now: dt.datetime | None = None) -> Path:
    """A copy of ``path`` at ``<stem>.<UTC time><suffix>`` beside it (a new name, never an
    existing file); returns the copy's path."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.stem}.{stamp}{path.suffix}")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}.{stamp}-{n}{path.suffix}")
        n += 1
    shutil.copy2(path, candidate)
    return candidate
