"""rag_eval.pytest_plugin: the ``golden`` marker tests, and how a run finds its inputs.

The sandbox gets a copy of eval_tests/test_golden.py: on the valid sandbox all five
checks pass; on a broken golden set each failing check names the item at fault.
Then: the golden set is read per run (not per process), --rag-golden-set picks another
file, and pipeline settings come from the rootdir's pyproject.toml wherever pytest
is started.
"""

from __future__ import annotations

import pytest

from tests.rag_eval._plugin_sandbox import GOLDEN, IDS, Sandbox, jsonl

N_ITEMS = len(IDS)  # 9
GOLDEN_CHECKS = 5  # test functions in eval_tests/test_golden.py


@pytest.fixture
def sandbox(sandbox: Sandbox) -> Sandbox:
    """The shared sandbox plus a copy of eval_tests/test_golden.py."""
    sandbox.add_golden_tests()
    return sandbox


def test_golden_checks_pass_on_the_valid_sandbox(sandbox: Sandbox) -> None:
    result = sandbox.run("-m", "golden")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=GOLDEN_CHECKS, deselected=2 * N_ITEMS)
    # No case ran, so there is nothing to gate and no results file.
    assert "rag-eval gate" not in result.stdout.str()
    assert not sandbox.results_path.exists()


def test_golden_checks_name_the_broken_items(sandbox: Sandbox) -> None:
    broken = [
        *GOLDEN,
        # gold that is not in the corpus
        {"id": "q-ghost", "question": "What is a ghost?", "gold_doc_ids": ["ghost-doc"], "split": "tune"},
        # the same document is gold in tune (q-func) and in holdout: a split leak
        {"id": "q-func-2", "question": "函数的值域是什么？", "gold_doc_ids": ["func"], "split": "holdout"},
        # no gold, yet it expects an answer
        {"id": "q-lost", "question": "What is the capital of Atlantis?", "expected_action": "answer", "split": "tune"},
    ]
    sandbox.write_golden(broken)

    result = sandbox.run("-m", "golden")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=3, deselected=2 * len(broken))
    result.stdout.fnmatch_lines(
        [
            "*test_gold_exists_in_index*",
            "*golden.jsonl:10 (id 'q-ghost'): gold doc id 'ghost-doc' is not in the corpus*",
        ]
    )
    result.stdout.fnmatch_lines(["*golden.jsonl:12 (id 'q-lost'): no gold evidence but expected_action is 'answer'*"])
    # (fnmatch would read the brackets as a character class)
    assert "document 'func' is gold in both splits: tune ['q-func'] and holdout ['q-func-2']" in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "FAILED test_golden.py::test_gold_exists_in_index*",
            "FAILED test_golden.py::test_negatives_carry_no_gold*",
            "FAILED test_golden.py::test_no_document_in_both_splits*",
        ],
        consecutive=False,
    )


def test_golden_checks_report_an_unreadable_golden_set_without_a_traceback(sandbox: Sandbox) -> None:
    # Only test_golden.py: the session fixture (not collection) meets the broken file.
    sandbox.write_golden(GOLDEN[:2], raw_lines=["not json"])
    result = sandbox.run("test_golden.py")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=GOLDEN_CHECKS)
    result.stdout.fnmatch_lines(["rag-eval: *golden.jsonl:3: not valid JSON*"])
    assert "pytest_plugin.py:" not in result.stdout.str()


def test_second_run_in_the_same_process_rereads_the_golden_set(sandbox: Sandbox) -> None:
    # Dataset caches belong to one run: an edited golden file is seen by the next run.
    first = sandbox.run("--collect-only", "-q", "-m", "retrieval")
    first.stdout.fnmatch_lines([f"{N_ITEMS}/*"])
    sandbox.write_golden(GOLDEN[:3])
    second = sandbox.run("--collect-only", "-q", "-m", "retrieval")
    second.stdout.fnmatch_lines(
        [
            "test_rag.py::test_retrieval[[]q-set]",
            "test_rag.py::test_retrieval[[]q-func]",
            "test_rag.py::test_retrieval[[]q-seq]",
            "3/*",
        ]
    )


def test_golden_set_option_picks_another_file(sandbox: Sandbox) -> None:
    other = sandbox.root / "other.jsonl"
    other.write_text(jsonl(GOLDEN[4:7]), encoding="utf-8")
    default = sandbox.run("--collect-only", "-q", "-m", "retrieval")
    default.stdout.fnmatch_lines([f"{N_ITEMS}/*"])

    result = sandbox.run("-m", "retrieval", "--rag-golden-set", str(other))

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=3, deselected=3 + GOLDEN_CHECKS)
    assert set(sandbox.cases()) == {i["id"] for i in GOLDEN[4:7]}
    assert sandbox.results()["run"]["golden_set"] == str(other)


def test_pipeline_settings_come_from_the_rootdir_when_run_from_a_subdirectory(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No --rag-set: the pipeline is configured by the project's pyproject.toml only.
    (sandbox.root / "pyproject.toml").write_text(
        '[tool.rag_app]\nembedder = "fake"\nreranker = "none"\ncache_dir = "idx"\n', encoding="utf-8"
    )
    sub = sandbox.root / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)

    result = sandbox.pytester.runpytest(str(sandbox.root), "--rag-dataset", str(sandbox.dataset), "-m", "retrieval")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS + GOLDEN_CHECKS)
    system = sandbox.results()["run"]["system"]
    assert (system["embedder"], system["reranker"]) == ("fake-hash-64", "none")
    # A relative cache_dir from pyproject.toml is relative to the project, not to the cwd.
    assert (sandbox.root / "idx").is_dir()
    assert not (sub / "idx").exists()
