"""The one place the authoring commands check their paths: no output may be an input, and
a file a person edits (drafts, decisions, review pages' exports) is never overwritten.

Kept minimal and in one place so it can switch to the project's shared guard."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class PathClash(ValueError):
    """An output path is an input, or would overwrite a person's file; the message says which and the fix."""


def check_outputs(
    outputs: Iterable[tuple[str, Path]], inputs: Iterable[tuple[str, Path]], *, fresh: Iterable[str] = ()
) -> None:
    """Refuse an output that is one of the inputs; ``fresh``: options whose file must not exist yet."""
    ins = [(name, p.resolve()) for name, p in inputs]
    must_be_new = set(fresh)
    for name, out in outputs:
        resolved = out.resolve()
        for in_name, path in ins:
            if resolved == path:
                raise PathClash(f"{name} {out} is also {in_name}: an output may not be an input; write to another path")
        if name in must_be_new and out.exists():
            raise PathClash(
                f"{name} {out} exists and may hold a person's work: it is never overwritten; give a new path"
            )
