""".github/scripts/post-comment.sh with a stand-in `gh`: it edits our own earlier
comment (by github-actions[bot], starting with the marker), creates one otherwise, and
never touches other comments."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.ci._fake_gh import run_with_fake_gh

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".github" / "scripts" / "post-comment.sh"
MARKER = "<!-- rag-eval-summary -->"

# The stand-in answers `gh api repos/.../comments --paginate --jq FILTER` by running the
# filter with jq-like logic in Python over $FAKE_COMMENTS, and logs every call.
FAKE_GH = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_GH_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[:1] == ["api"] and "--method" not in args:
    marker = os.environ["MARKER"]
    for c in json.loads(os.environ["FAKE_COMMENTS"]):
        if c["user"]["login"] == "github-actions[bot]" and c["body"].startswith(marker):
            print(c["id"])
"""


def _run(
    tmp_path: Path, comments: list[dict[str, object]], body: str
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    if shutil.which("python3") is None:
        pytest.skip("needs python3 (the stand-in gh is a Python script)")
    summary = tmp_path / "summary.md"
    summary.write_text(body, encoding="utf-8")
    env = {"REPO": "acme/rag", "PR": "7", "FAKE_COMMENTS": json.dumps(comments), "MARKER": MARKER}
    out, lines = run_with_fake_gh(tmp_path, FAKE_GH, ["bash", str(SCRIPT), str(summary)], env)
    return out, [json.loads(line) for line in lines]


def _comment(cid: int, login: str, body: str) -> dict[str, object]:
    return {"id": cid, "user": {"login": login}, "body": body}


def test_edits_our_newest_marked_comment_only(tmp_path: Path) -> None:
    comments = [
        _comment(1, "github-actions[bot]", f"{MARKER}\nold"),
        _comment(2, "alice", f"{MARKER}\nquoted by a human"),
        _comment(3, "github-actions[bot]", "another workflow's comment"),
        _comment(4, "github-actions[bot]", f"{MARKER}\nnewer"),
    ]
    out, calls = _run(tmp_path, comments, f"{MARKER}\n## gate\n")
    assert out.returncode == 0, out.stderr
    assert calls[-1][:4] == ["api", "--method", "PATCH", "repos/acme/rag/issues/comments/4"]
    assert calls[-1][4:] == ["-F", f"body=@{tmp_path / 'summary.md'}"]
    assert "updated comment 4" in out.stdout


def test_creates_a_comment_when_none_of_ours_exists(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, [_comment(2, "alice", f"{MARKER}\nquoted")], f"{MARKER}\n## gate\n")
    assert out.returncode == 0, out.stderr
    assert calls[-1][:4] == ["api", "--method", "POST", "repos/acme/rag/issues/7/comments"]


def test_refuses_a_body_without_the_marker(tmp_path: Path) -> None:
    out, calls = _run(tmp_path, [], "## not a summary\n")
    assert out.returncode == 1
    assert "does not start with" in out.stderr and calls == []
