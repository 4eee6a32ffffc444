"""Install size of the core package vs the full install (demo + deepeval), same run.

    python bench/install_size.py            # builds the wheel, two fresh venvs

Each install runs in a fresh venv from the wheel of this checkout; packages are counted
with `pip list` (pip/setuptools/wheel left out), size is the venv's site-packages on disk,
seconds are wall time of `pip install` (the machine's pip cache is warm after the first
run: the ratio is what this compares, both installs see the same cache).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def install(wheel: Path, extras: str, where: Path) -> dict[str, float]:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    py = where / "bin" / "python"
    target = f"{wheel}[{extras}]" if extras else str(wheel)
    t0 = time.perf_counter()
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", target], check=True)
    seconds = time.perf_counter() - t0
    listing = json.loads(
        subprocess.run(
            [str(py), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
        ).stdout
    )
    packages = [p for p in listing if p["name"].lower() not in ("pip", "setuptools", "wheel")]
    site = next((where / "lib").glob("python3*/site-packages"))
    return {"packages": len(packages), "mb": round(du(site) / 1e6, 1), "seconds": round(seconds, 1)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)], check=True
        )
        wheel = next(out.glob("rag_eval_gate-*.whl"))
        core = install(wheel, "", out / "core")
        full = install(wheel, "demo,deepeval", out / "full")
    result = {
        "core": core,
        "full": full,
        "ratio_packages": round(full["packages"] / core["packages"], 2),
        "ratio_mb": round(full["mb"] / core["mb"], 2),
        "ratio_seconds": round(full["seconds"] / core["seconds"], 2),
    }
    print(json.dumps(result, indent=2))
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "install_size.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
