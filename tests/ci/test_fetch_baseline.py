""".github/scripts/fetch-baseline.sh with a stand-in `gh` on PATH: it asks for the newest
successful push-to-main run, downloads its baseline artifact, and never fails the job
when there is no baseline (first run, expired artifact) — it says so instead."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.ci._fake_gh import run_with_fake_gh

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".github" / "scripts" / "fetch-baseline.sh"

FAKE_GH = """#!/usr/bin/env bash
echo "$*" >> "$FAKE_GH_LOG"
if [ "$1 $2" = "run list" ]; then
  echo -n "$FAKE_GH_RUN_ID"
  exit 0
fi
if [ "$1 $2" = "run download" ]; then
  [ "$FAKE_GH_DOWNLOAD" = "ok" ] || { echo "no artifact" >&2; exit 1; }
  while [ $# -gt 0 ]; do
    if [ "$1" = "--dir" ]; then mkdir -p "$2"; echo '{"version": 1}' > "$2/eval-results.json"; fi
    shift
  done
  exit 0
fi
exit 2
"""


def _run(tmp_path: Path, run_id: str, download: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    env = {"GITHUB_REPOSITORY": "acme/rag", "FAKE_GH_RUN_ID": run_id, "FAKE_GH_DOWNLOAD": download}
    return run_with_fake_gh(tmp_path, FAKE_GH, ["bash", str(SCRIPT), str(tmp_path / "baseline")], env)


def test_downloads_mains_newest_successful_baseline(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, "4242", "ok")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "baseline" / "eval-results.json").is_file()
    assert calls[0].startswith(
        "run list --repo acme/rag --workflow eval-gate.yml --branch main --event push --status success"
    )
    assert calls[1] == f"run download 4242 --repo acme/rag --name rag-eval-baseline --dir {tmp_path / 'baseline'}"


def test_no_run_on_main_yet_is_a_notice_not_a_failure(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, "", "ok")
    assert out.returncode == 0
    assert "::notice title=rag-eval::No successful run of eval-gate.yml on main yet" in out.stdout
    assert len(calls) == 1 and not (tmp_path / "baseline").exists()


def test_expired_artifact_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    out, _ = _run(tmp_path, "4242", "fail")
    assert out.returncode == 0
    assert "::warning title=rag-eval::Could not download rag-eval-baseline from run 4242" in out.stdout
