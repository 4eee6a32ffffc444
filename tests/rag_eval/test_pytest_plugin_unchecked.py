"""The run says what it did not check (issue 40, part 2), through pytest: [regression]
gates without a baseline (item 1), a pipeline without a golden set (item 3), and
--rag-results paths resolved as pytest resolves its own (item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SYSTEM = """
CHUNKS = {"sets#0": "subsets of a set", "sine#0": "period of sine"}

class Keyword:
    def retrieve(self, question, top_k=None):
        words = set(question.split())
        return [{"id": c, "text": t, "score": 1.0} for c, t in CHUNKS.items() if words & set(t.split())]

def make():
    return Keyword()
"""
INI = "[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\npythonpath = .\nrag_eval_pipeline = mysys:make\n"
GOLDEN = [
    {"id": "q1", "question": "how many subsets", "evidence": [{"chunk_id": "sets#0"}]},
    {"id": "q2", "question": "period of sine", "evidence": [{"chunk_id": "sine#0"}]},
]


@pytest.fixture
def repo(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mysys=SYSTEM)
    pytester.makeini(INI)
    (pytester.path / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in GOLDEN), encoding="utf-8")
    return pytester


def results(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_regression_gates_without_a_baseline_are_named_before_the_verdict(repo: pytest.Pytester) -> None:
    (repo.path / "thresholds.toml").write_text(
        '[retrieval]\n"recall@5" = { min = 0.5 }\n\n[regression]\nno_new_failures = true\n"retrieval.recall@5" = { max_drop = 0.02 }\n',
        encoding="utf-8",
    )
    result = repo.runpytest_subprocess(
        "-m", "retrieval", "--rag-golden-set", "golden.jsonl", "--rag-thresholds", "thresholds.toml"
    )
    assert result.ret == 0
    expected = (
        "WARNING: [regression] gates not evaluated: no --rag-baseline was given, so no_new_failures, "
        "max_drop retrieval.recall@5 decided nothing; give --rag-baseline PATH (e.g. main's results file) to gate on them"
    )
    lines = result.stdout.lines
    assert lines.index(expected) < next(i for i, line in enumerate(lines) if line.startswith("rag-eval gate PASSED"))
    run = results(repo.path / "reports" / "eval-results.json")["run"]
    assert run["warnings"] == [expected.removeprefix("WARNING: ")]
    assert "[regression] gates not evaluated" in (repo.path / "reports" / "eval-results.html").read_text(
        encoding="utf-8"
    )


def test_without_regression_gates_nothing_is_said(repo: pytest.Pytester) -> None:
    (repo.path / "thresholds.toml").write_text('[retrieval]\n"recall@5" = { min = 0.5 }\n', encoding="utf-8")
    result = repo.runpytest_subprocess(
        "-m", "retrieval", "--rag-golden-set", "golden.jsonl", "--rag-thresholds", "thresholds.toml"
    )
    assert result.ret == 0 and "[regression]" not in result.stdout.str()
    assert results(repo.path / "reports" / "eval-results.json")["run"]["warnings"] == []


@pytest.mark.parametrize("named", [("--rag-pipeline", "mysys:make"), ()])
def test_a_system_and_no_golden_set_says_what_to_give(repo: pytest.Pytester, named: tuple[str, ...]) -> None:
    result = repo.runpytest_subprocess(*named)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    said = "--rag-pipeline" if named else "rag_eval_pipeline"
    result.stdout.fnmatch_lines(
        [
            f"rag-eval: {said} name a system under test, but no golden set is given, so nothing was evaluated: give --rag-golden-set FILE or --rag-dataset DIR*"
        ]
    )


def test_an_unrelated_test_run_of_a_repository_whose_ini_names_a_system_stays_quiet(repo: pytest.Pytester) -> None:
    repo.makepyfile(test_unrelated="def test_one():\n    assert 1 + 1 == 2\n")
    result = repo.runpytest_subprocess()
    assert result.ret == 0 and "no golden set" not in result.stdout.str()


def test_results_paths_resolve_as_pytest_resolves_its_own_and_print_normalised(
    repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = repo.mkdir("app")
    monkeypatch.chdir(app)
    args = ("-m", "retrieval", "--rag-golden-set", "../golden.jsonl", "--rag-no-report")
    given = repo.runpytest_subprocess(*args, "--rag-results", "../reports/x.json")  # the command line: from app/
    assert (repo.path / "reports" / "x.json").is_file() and not (repo.path / "app" / "reports").exists()
    given.stdout.fnmatch_lines([f"results: {repo.path / 'reports' / 'x.json'}"])
    assert "app/.." not in given.stdout.str()
    repo.makeini(INI + "rag_eval_results = out/ini.json\n")
    from_ini = repo.runpytest_subprocess(*args)  # the ini value: from the ini file's folder
    from_ini.stdout.fnmatch_lines([f"results: {repo.path / 'out' / 'ini.json'}"])
