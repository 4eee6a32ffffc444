"""Run-wide spending shared by processes: ``{"cost_usd", "tokens"}`` in a JSON file.

With ``ledger_dir`` (one directory per run, shared by all pytest-xdist workers) the
cached client sums its spending here, so a budget is global. Updates hold an exclusive
``flock`` on a side lock file and replace the ledger atomically (write temp +
``os.replace``), so readers never see half a file.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

try:  # POSIX only; the global ledger is optional
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LEDGER_FILE = "judge-ledger.json"


class Ledger:
    """Run-wide spending shared by processes: ``{"cost_usd", "tokens"}`` in a JSON file.

    Updates hold an exclusive ``flock`` on a side lock file and replace the ledger
    atomically (write temp + ``os.replace``), so readers never see half a file.
    """

    def __init__(self, ledger_dir: Path) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            raise OSError("a shared judge ledger needs fcntl (POSIX); drop ledger_dir to budget per process")
        self.dir = Path(ledger_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / LEDGER_FILE
        self._lock_path = self.dir / (LEDGER_FILE + ".lock")

    def _locked(self) -> _FileLock:
        return _FileLock(self._lock_path)

    def _read(self) -> tuple[float, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return 0.0, 0
        except (OSError, ValueError) as exc:
            raise OSError(f"{self.path}: unreadable judge ledger ({exc}); delete it to reset spending") from exc
        return float(data.get("cost_usd", 0.0)), int(data.get("tokens", 0))

    def spent(self) -> tuple[float, int]:
        with self._locked():
            return self._read()

    def add(self, cost: float, tokens: int) -> None:
        with self._locked():
            old_cost, old_tokens = self._read()
            tmp = self.path.with_name(f"{LEDGER_FILE}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"cost_usd": old_cost + cost, "tokens": old_tokens + tokens}), encoding="utf-8")
            os.replace(tmp, self.path)


class _FileLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1

    def __enter__(self) -> _FileLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
