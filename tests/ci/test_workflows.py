"""The GitHub Actions workflows: actionlint-clean, zizmor-clean, and the security rules of docs/ci.md.

actionlint runs from Node.js as WebAssembly (tools/package.json; `make test` installs
it with npm). Where Node.js or the package is missing the lint test is skipped, unless
RAG_EVAL_REQUIRE_ACTIONLINT=1 (set by .ci/run), which turns the skip into a failure.

zizmor (the `[test]` extra) audits the workflows and the composite action offline at
its default policy; any high-severity finding (an action not pinned by commit SHA, a
template injection, ...) fails. Without zizmor installed the test is skipped, unless
RAG_EVAL_REQUIRE_ZIZMOR=1 (set by .ci/run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / "tools" / "node_modules" / "@tktco" / "node-actionlint"
RUNNER = Path(__file__).with_name("actionlint.cjs")
AUDITED = (ROOT / ".github" / "workflows", ROOT / ".github" / "actions")
FULL_SHA_USES = r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$"


def _actionlint(*files: Path) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "build" / "index.js").is_file():
        reason = "actionlint needs Node.js and `npm ci --prefix tools` (make test does it)"
        if os.environ.get("RAG_EVAL_REQUIRE_ACTIONLINT") == "1":
            pytest.fail(reason + "; RAG_EVAL_REQUIRE_ACTIONLINT=1 forbids skipping")
        pytest.skip(reason)
    out = subprocess.run(
        [node, str(RUNNER), str(ACTIONLINT), *map(str, files)], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _zizmor(*paths: Path) -> list[dict[str, Any]]:
    """zizmor's findings (``--format json``) for ``paths``; skipped or failed when it is missing."""
    beside = Path(sys.executable).with_name("zizmor")  # the venv's, installed by the [test] extra
    exe = str(beside) if beside.is_file() else shutil.which("zizmor")
    if exe is None:
        reason = "zizmor is not installed (pip install -e '.[test]'; make test does it)"
        if os.environ.get("RAG_EVAL_REQUIRE_ZIZMOR") == "1":
            pytest.fail(reason + "; RAG_EVAL_REQUIRE_ZIZMOR=1 forbids skipping")
        pytest.skip(reason)
    # --no-exit-codes: exit 0 with findings, so a non-zero exit means zizmor itself failed.
    out = subprocess.run(
        [exe, "--offline", "--format", "json", "--no-exit-codes", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    findings: list[dict[str, Any]] = json.loads(out.stdout)
    return findings


def _high(findings: list[dict[str, Any]]) -> list[str]:
    """``file:line ident: desc`` of every high-severity finding."""
    lines = []
    for f in findings:
        if f["determinations"]["severity"] != "High":
            continue
        where = f["locations"][0]
        path = where["symbolic"]["key"].get("Local", {}).get("verbatim_path", "?")
        row = where["concrete"]["location"]["start_point"]["row"] + 1
        lines.append(f"{path}:{row} {f['ident']}: {f['desc']} ({where['concrete']['feature']})")
    return lines


def _load(path: Path) -> dict[Any, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _triggers(wf: dict[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as True.
    on = wf.get("on", wf.get(True))
    return on if isinstance(on, dict) else {name: None for name in ([on] if isinstance(on, str) else on)}


def test_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "eval-gate.yml"} <= names


def test_actionlint_passes_every_workflow() -> None:
    problems = _actionlint(*WORKFLOWS)
    assert problems == [], "\n".join(f"{p['file']}:{p['line']}:{p['column']} {p['message']}" for p in problems)


def _one_job_workflow(tmp_path: Path, head: str, step: str) -> Path:
    """A workflow file with one job of one step, to show what a checker reports."""
    bad = tmp_path / "bad.yml"
    bad.write_text(f"{head}jobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - {step}\n", encoding="utf-8")
    return bad


def test_actionlint_catches_an_injection(tmp_path: Path) -> None:
    """The linter really lints: a PR title pasted into a script is reported."""
    bad = _one_job_workflow(tmp_path, "on: pull_request\n", "run: echo ${{ github.event.pull_request.title }}")
    problems = _actionlint(bad)
    assert any("potentially untrusted" in p["message"] for p in problems)


def test_zizmor_reports_no_high_finding() -> None:
    assert _high(_zizmor(*AUDITED)) == []


def test_zizmor_catches_an_unpinned_action(tmp_path: Path) -> None:
    """The audit really audits: an action referenced by tag is a high finding."""
    step = "uses: actions/checkout@v4\n        with:\n          persist-credentials: false"
    bad = _one_job_workflow(tmp_path, "on: push\npermissions: {}\n", step)
    assert any("unpinned-uses" in line for line in _high(_zizmor(bad)))


def test_every_action_is_pinned_by_sha_with_its_tag() -> None:
    """``owner/repo@<40 hex> # vX.Y.Z``: the SHA is what runs, the comment says which release."""
    lines = [
        (p, line.split("uses:", 1)[1].strip())
        for p in [*WORKFLOWS, *sorted((ROOT / ".github" / "actions").glob("*/action.yml"))]
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.strip().removeprefix("- ").startswith("uses:")
    ]
    remote = [(p.name, ref) for p, ref in lines if not ref.startswith("./")]
    assert remote, "no remote action found: the pattern above no longer matches the workflows"
    assert [(n, ref) for n, ref in remote if not re.match(FULL_SHA_USES, ref)] == []


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_pull_request_target(path: Path) -> None:
    assert "pull_request_target" not in _triggers(_load(path))


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_default_token_is_read_only(path: Path) -> None:
    wf = _load(path)
    perms = wf.get("permissions")
    assert isinstance(perms, dict) and perms.get("contents") == "read"
    assert all(v in ("read", "none") for v in perms.values()), perms


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_secrets_only_reach_step_env(path: Path) -> None:
    """A secret is never pasted into a script, a `with:` or a job-wide env."""
    wf = _load(path)
    assert "secrets." not in json.dumps(wf.get("env", {}))
    for name, job in wf["jobs"].items():
        assert "secrets." not in json.dumps(job.get("env", {})), name
        for step in job.get("steps", []):
            assert "secrets." not in str(step.get("run", "")), (name, step)
            assert "secrets." not in json.dumps(step.get("with", {})), (name, step)


def test_only_the_comment_job_writes_and_it_runs_no_pr_code() -> None:
    wf = _load(ROOT / ".github" / "workflows" / "eval-gate.yml")
    writers = {n for n, j in wf["jobs"].items() if "write" in json.dumps(j.get("permissions", {}))}
    assert writers == {"comment"}
    comment = wf["jobs"]["comment"]
    checkouts = [s for s in comment["steps"] if "actions/checkout" in str(s.get("uses", ""))]
    # Only the base commit's scripts: never the pull request's code with a write token.
    assert all(
        s["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
        and s["with"]["sparse-checkout"] == ".github/scripts"
        for s in checkouts
    )
    assert "head.repo.full_name == github.repository" in comment["if"]  # forks: read-only token, no comment


def test_gate_compares_with_mains_baseline_and_skips_judge_without_a_key() -> None:
    wf = _load(ROOT / ".github" / "workflows" / "eval-gate.yml")
    triggers = _triggers(wf)
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    gate_steps = {s.get("name"): s for s in wf["jobs"]["gate"]["steps"]}
    assert "--rag-baseline baseline/eval-results.json" in gate_steps["Evaluation gate"]["run"]
    assert (
        gate_steps["Refresh main's baseline"]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    )
    plan = wf["jobs"]["plan"]["steps"][0]
    assert plan["env"]["HAS_JUDGE"] == "${{ secrets.RAG_JUDGE_API_KEY != '' }}"
    assert "judge" not in plan["run"].split("else", 1)[1].split("fi")[0].split("markers=")[1].split('"')[0]


def test_ci_entry_point_runs_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in script
    assert "make test" in (ROOT / "README.md").read_text(encoding="utf-8")
