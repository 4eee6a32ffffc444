"""The demo's own results file round-trips through every reader, and eval-gate.yml's
steps work on it (issue 20, point 0): `make eval`'s exact command, then the workflow's
"Evaluation gate" step with that file as main's baseline (as fetch-baseline.sh leaves
it in baseline/), its "Step summary" step, `python -m rag_eval report`, and the shard
and merge steps. Run in a copy of the repository's project files (symlinks; the demo
index in .rag_cache is reused), so nothing is written into the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "eval-gate.yml"
PROJECT = ("pyproject.toml", "conftest.py", "thresholds.toml", "eval_tests", "golden_sets", ".rag_cache")

pytestmark = pytest.mark.slow


def _steps(job: str) -> dict[str, dict[str, Any]]:
    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return {s.get("name"): s for s in wf["jobs"][job]["steps"]}


def _no_key_markers() -> str:
    plan = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["plan"]["steps"][0]["run"]
    branch = plan.split("else", 1)[1].split("fi")[0]
    return branch.split("markers=")[1].split('"')[0]


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # `python` in the steps is this interpreter's environment (the workflow's setup-python).
    bindir = Path(sys.executable).parent
    full = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "DATASET": "golden_sets/demo_maths",
        **env,
    }
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=full, capture_output=True, text=True, timeout=900
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in PROJECT:
        if (ROOT / name).exists():
            (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


def test_the_no_key_tiers_include_the_dialogue_tier() -> None:
    assert "dialogue" in _no_key_markers().split(" or ")


def test_make_eval_then_the_workflows_baseline_summary_report_and_merge_steps(project: Path) -> None:
    first = _bash("python -m pytest eval_tests -p no:cacheprovider", project)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    results = project / "reports" / "eval-results.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert any("opening" in item for item in data["items"].values())  # dialogue items are in it

    (project / "baseline").mkdir()
    shutil.copy(results, project / "baseline" / "eval-results.json")  # what fetch-baseline.sh downloads
    markers = _no_key_markers()
    gate = _bash(_steps("gate")["Evaluation gate"]["run"], project, MARKERS=markers)
    assert gate.returncode == 0, gate.stdout[-3000:] + gate.stderr[-2000:]
    assert "not a valid version-2 results file" not in gate.stdout + gate.stderr
    compared = json.loads(results.read_text(encoding="utf-8"))
    assert compared["baseline"]["path"] == "baseline/eval-results.json"
    assert {c["tier"] for c in compared["cases"]} >= {"retrieval", "deterministic", "dialogue"}
    assert (project / "reports" / "junit.xml").is_file()

    summary = _bash(
        _steps("gate")["Step summary"]["run"], project, ARTIFACT_URL="", GITHUB_STEP_SUMMARY=str(project / "step.md")
    )
    assert summary.returncode == 0, summary.stderr
    assert (project / "step.md").read_text(encoding="utf-8").strip()
    report = _bash("python -m rag_eval report reports/eval-results.json --out reports/again.html", project)
    assert report.returncode == 0 and (project / "reports" / "again.html").is_file(), report.stderr

    shard = _steps("shard")["Evaluation shard"]["run"]
    for index in (1, 2):
        out = _bash(shard, project, MARKERS="dialogue", SHARD=str(index), SHARDS="2")
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    (project / "shards").mkdir()
    for path in (project / "reports").glob("shard-*.json"):
        shutil.move(str(path), project / "shards" / path.name)  # what download-artifact leaves
    merged = _bash(_steps("merge")["Merge the shards and gate"]["run"], project)
    assert merged.returncode == 0, merged.stdout[-3000:] + merged.stderr[-2000:]
    assert "not a valid version-2 results file" not in merged.stdout + merged.stderr
