"""rag_eval.pytest_plugin on bad input: one clear message each, and errors are not passes.

Input that makes the whole run meaningless (a broken golden set, a corpus the gold was
not written against, a typo in thresholds.toml or --rag-set) stops the run before any
case runs. A problem with one item, or a pipeline that raises on one question, makes
that one case an ``error``: counted by ``error_rate``, never a pass, never a fail.
"""

from __future__ import annotations

import pytest

from rag_app.corpus import corpus_hash, load_corpus
from tests.rag_eval._plugin_sandbox import (
    GOLDEN,
    IDS,
    Sandbox,
    assert_clean_error,
)

N_ITEMS = len(IDS)  # 9


# --------------------------------------------------------------------------- golden set


def test_malformed_json_line_names_file_and_line(sandbox: Sandbox) -> None:
    sandbox.write_golden(GOLDEN[:2], raw_lines=['{"id": "q-broken", "question": '])
    result = sandbox.run()
    assert_clean_error(result, "*rag-eval: *golden.jsonl:3: not valid JSON*")


def test_missing_required_field_names_the_field(sandbox: Sandbox) -> None:
    sandbox.write_golden([*GOLDEN, {"id": "q-noq", "gold_doc_ids": ["set"]}])
    result = sandbox.run()
    assert_clean_error(result, f"*golden.jsonl:{N_ITEMS + 1}*missing or empty required field 'question'*")


def test_duplicate_id_names_both_lines(sandbox: Sandbox) -> None:
    sandbox.write_golden([*GOLDEN, {"id": "q-set", "question": "另一个问题？", "gold_doc_ids": ["set"]}])
    result = sandbox.run()
    assert_clean_error(result, f"*golden.jsonl:{N_ITEMS + 1}: duplicate id 'q-set' (first at line 1)*")


def test_dataset_without_golden_set(sandbox: Sandbox) -> None:
    sandbox.golden_path.unlink()
    result = sandbox.run()
    assert_clean_error(result, "*rag-eval: --rag-dataset *ds: no golden set found (expected golden.jsonl or qa.jsonl*")


def test_dataset_folder_that_does_not_exist(sandbox: Sandbox) -> None:
    result = sandbox.run("--rag-dataset", str(sandbox.root / "nope"))  # the later --rag-dataset wins
    assert_clean_error(result, "*rag-eval: --rag-dataset *nope: not a folder*")


def test_unknown_gold_doc_is_an_error_case_and_fails_error_rate(sandbox: Sandbox) -> None:
    sandbox.write_golden([*GOLDEN, {"id": "q-ghost", "question": "What is a ghost?", "gold_doc_ids": ["ghost-doc"]}])
    result = sandbox.run("-m", "retrieval", "-rx")

    n = N_ITEMS + 1  # 10 cases, 1 of them an error: error_rate = 1/10
    result.assert_outcomes(passed=N_ITEMS, xfailed=1, deselected=n)  # gate mode: the gate fails the run
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "XFAIL *q-ghost*gold doc id 'ghost-doc' is not in the corpus*",  # -rx: pytest's own summary
            f"retrieval: {N_ITEMS} pass, 1 error*",  # then the gate's, after pytest's stats line
            "    q-ghost (error): *gold doc id 'ghost-doc' is not in the corpus*",
            f"FAIL retrieval.error_rate = 0.1000* (need <= 0; n={n}, 1 error*)*worst: q-ghost",
            "rag-eval gate FAILED: 1 of 4 gates failed (retrieval.error_rate 0.1 > 0, n=10)*",
        ]
    )
    assert result.stdout.lines[-1].startswith("rag-eval gate FAILED")  # the verdict is the last line
    case = sandbox.cases()["q-ghost"]
    assert (case["outcome"], case["failed_stage"]) == ("error", "error")
    assert "'ghost-doc'" in case["message"] and "'q-ghost'" in case["message"]
    assert sandbox.results()["metrics"]["retrieval.error_rate"] == 1 / n


def test_corpus_hash_mismatch_refuses_the_run_naming_both_hashes(sandbox: Sandbox) -> None:
    actual = corpus_hash(load_corpus(sandbox.dataset / "corpus.jsonl"))
    wrong = "0" * 64
    pinned = dict(GOLDEN[0], corpus={"name": "sandbox", "sha256": wrong})
    sandbox.write_golden([pinned, *GOLDEN[1:]])

    result = sandbox.run()

    assert_clean_error(result, f"*'q-set' was written against corpus {wrong[:16]}*has content hash {actual[:16]}*")


def test_matching_corpus_hash_runs(sandbox: Sandbox) -> None:
    actual = corpus_hash(load_corpus(sandbox.dataset / "corpus.jsonl"))
    sandbox.write_golden([dict(item, corpus={"name": "sandbox", "sha256": actual}) for item in GOLDEN])

    result = sandbox.run("-m", "retrieval")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=N_ITEMS, deselected=N_ITEMS)


# --------------------------------------------------------------------------- thresholds.toml


def test_thresholds_unknown_metric_is_a_usage_error(sandbox: Sandbox) -> None:
    sandbox.write_thresholds('[retrieval]\n"recal@5" = { min = 0.8 }\n')
    result = sandbox.run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    path = sandbox.root / "thresholds.toml"
    assert f"ERROR: {path}: unknown metric 'recal@5' in [retrieval]; valid names for retrieval:" in err
    assert "recall@k" in err and "error_rate" in err  # the valid names are listed
    assert not sandbox.results_path.exists()


def test_thresholds_unknown_tier_table_is_a_usage_error(sandbox: Sandbox) -> None:
    sandbox.write_thresholds('[retreival]\n"recall@5" = { min = 0.8 }\n')
    result = sandbox.run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"ERROR: {sandbox.root / 'thresholds.toml'}: unknown table [retreival]; valid tables:" in err
    assert "retrieval" in err.split("valid tables:")[1] and "deterministic" in err.split("valid tables:")[1]


def test_a_top_k_below_one_is_a_usage_error(sandbox: Sandbox) -> None:
    result = sandbox.run("--rag-top-k", "0")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rag-top-k must be at least 1, got 0" in result.stderr.str()
    assert not sandbox.results_path.exists()


def test_missing_explicit_thresholds_file_is_a_usage_error(sandbox: Sandbox) -> None:
    result = sandbox.run("--rag-thresholds", "nope.toml")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --rag-thresholds nope.toml: no such file (resolved to */nope.toml)*"])


def test_without_a_thresholds_file_a_run_whose_every_case_errors_fails(sandbox: Sandbox) -> None:
    """The built-in gates: error_rate = 0 for every tier that ran."""
    (sandbox.root / "thresholds.toml").unlink()  # the ini default, absent: no file, the built-in gates
    sandbox.write_conftest(
        "import pytest\n"
        "@pytest.fixture(autouse=True)\n"
        "def broken_system(monkeypatch):\n"
        "    from rag_eval.session import EvalSession\n"
        "    def fail(self, question):\n"
        "        raise ConnectionError('the system is down')\n"
        "    monkeypatch.setattr(EvalSession, 'retrieve', fail)\n"
    )
    result = sandbox.run("-m", "retrieval")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gates = sandbox.results()["gates"]
    assert [(g["metric"], g["value"], g["passed"]) for g in gates] == [("retrieval.error_rate", 1.0, False)]
    assert sandbox.results()["verdict"] == "fail"
    result.stdout.fnmatch_lines(
        [
            "no thresholds file: built-in gates only*",
            "FAIL retrieval.error_rate = 1.0000*",
            "rag-eval gate FAILED: 1 of 1 gates failed*",
        ]
    )


# --------------------------------------------------------------------------- --rag-set


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("nosuch=1", "ERROR: unknown setting 'nosuch' in --rag-set nosuch=1; valid settings: *chunk_size*"),
        ("chunk_size=big", "ERROR: setting 'chunk_size' in --rag-set chunk_size=big: cannot read 'big' as int*"),
        ("reranker=bogus", "ERROR: pipeline setting override: unknown reranker 'bogus'; valid: none, local, http*"),
        ("reranker", "ERROR: --rag-set expects NAME=VALUE*got 'reranker'*"),
    ],
)
def test_bad_rag_set_is_a_usage_error(sandbox: Sandbox, option: str, message: str) -> None:
    result = sandbox.run("--rag-set", option)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# --------------------------------------------------------------------------- a pipeline that raises

RAISING_CONFTEST = '''
import pytest

from rag_eval.adapters.rag_app import RagAppSystem


@pytest.fixture(scope="session", autouse=True)
def vector_store_down_for_derivatives():
    """The system under test raises on one question; undone after the run."""
    original = RagAppSystem.retrieve

    def retrieve(self, question, top_k=None):
        if "derivative" in question:
            raise RuntimeError("vector store is down")
        return original(self, question, top_k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(RagAppSystem, "retrieve", retrieve)
        yield
'''


def test_pipeline_exception_is_an_error_outcome_not_a_fail(sandbox: Sandbox) -> None:
    sandbox.write_conftest(RAISING_CONFTEST)
    result = sandbox.run("-m", "retrieval", "--rag-case-failures", "strict")

    result.assert_outcomes(passed=N_ITEMS - 1, failed=1, deselected=N_ITEMS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*[[]error[]] q-deriv: RuntimeError: vector store is down*",
            f"retrieval: {N_ITEMS - 1} pass, 1 error*",
            f"FAIL retrieval.error_rate = 0.1111* (need <= 0; n={N_ITEMS}, 1 error*)*worst: q-deriv",
        ]
    )
    results = sandbox.results()
    cases = sandbox.cases()
    assert set(cases) == set(IDS)  # every other case's result is still in the file
    assert (cases["q-deriv"]["outcome"], cases["q-deriv"]["failed_stage"]) == ("error", "error")
    assert cases["q-deriv"]["message"] == "RuntimeError: vector store is down"
    assert "vector store is down" in cases["q-deriv"]["details"]["traceback"]
    assert {c["outcome"] for i, c in cases.items() if i != "q-deriv"} == {"pass"}
    assert results["run"]["outcomes"]["retrieval"] == {"pass": N_ITEMS - 1, "fail": 0, "error": 1, "skip": 0}
    assert results["metrics"]["retrieval.error_rate"] == 1 / N_ITEMS
    assert results["metrics"]["retrieval.pass_rate"] == (7 - 1) / 7  # the 2 negatives are measured apart, never passes
    # The errored case measured nothing, and that is on record next to the metric.
    assert results["metrics_n"]["retrieval.doc.recall@5"]["errors"] == 1
    assert "doc.recall@5" not in cases["q-deriv"]["metrics"]


def test_golden_case_without_a_tier_marker_is_a_collection_error(sandbox: Sandbox) -> None:
    (sandbox.root / "test_untiered.py").write_text("def test_x(golden_case, rag_eval):\n    pass\n")
    result = sandbox.run("test_untiered.py")
    assert_clean_error(result, "*test_untiered.py::test_x: a test using golden_case needs exactly one tier marker*")


def test_a_run_that_names_no_system_stops_and_says_how(sandbox: Sandbox) -> None:
    (sandbox.root / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:deepeval -p no:cacheprovider\n", encoding="utf-8"
    )
    result = sandbox.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*rag-eval pipeline: no system under test: name it with --rag-pipeline*rag_eval_pipeline*"]
    )
