"""Write a file atomically: a reader sees the old file or the new one, never half of
one, and a failed write (a full disk, no permission) leaves no temporary file behind.
The one writer of the results file and the HTML report."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through ``path.tmpPID`` and a rename; an OSError of any step
    propagates after the temporary file is removed (``path`` itself is untouched)."""
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:  # os.write may write less than it was given
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
