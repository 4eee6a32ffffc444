"""Every results file the suite writes validates against rag_eval/results.schema.json: one
gate run per tier through the pytester sandbox, and a merged sharded run. Each file is
read back with the one reader (``load_results``), cross-checked with ``jsonschema``,
the reference implementation of JSON Schema, and round-tripped through ``RunResults``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rag_eval.cli import main
from rag_eval.results.file import RESULTS_VERSION, load_results, schema
from rag_eval.results.model import RunResults
from tests.rag_eval._plugin_sandbox import IDS, NEGATIVE_IDS, POSITIVE_IDS, Sandbox
from tests.support.judge_replies import native_judge_reply
from tests.support.openai_server import ScriptedOpenAIServer


def valid(path: Path) -> dict[str, Any]:
    """The file as the reader returns it, after the reference validator agreed."""
    results = load_results(path)
    jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker()).validate(results)
    assert results["version"] == RESULTS_VERSION == 3
    typed = RunResults.from_dict(results)  # the typed results read back: the same file, the same object
    assert typed.to_dict() == results and RunResults.from_dict(typed.to_dict()) == typed
    return results


def tier_cases(results: dict[str, Any], tier: str) -> list[dict[str, Any]]:
    cases = [c for c in results["cases"] if c["tier"] == tier]
    assert cases, f"no {tier} case in the file"
    return cases


@pytest.fixture
def judge_env(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", "sk-test")
    openai_server.set_default("chat", native_judge_reply)
    return openai_server


def test_retrieval(sandbox: Sandbox) -> None:
    sandbox.write_thresholds('[retrieval]\n"doc.recall@5" = { min = 0.5 }\npass_rate = { min = 0.0 }\n')
    assert sandbox.run("-m", "retrieval", "--rag-no-report").ret == pytest.ExitCode.OK
    results = valid(sandbox.results_path)
    cases = {c["id"]: c for c in tier_cases(results, "retrieval")}
    assert set(cases) == set(IDS)
    for cid in POSITIVE_IDS:
        details = cases[cid]["details"]
        assert details["final_stage"] in details["stages"] and details["stage_levels"] and details["gold_ranks"]
    for cid in NEGATIVE_IDS:  # the sandbox's negatives are measured only (negative = "measure")
        assert cases[cid]["details"]["measured_only"] is True and "gold_ranks" not in cases[cid]["details"]
    assert results["metrics_n"]["retrieval.pass_rate"]["n"] == len(POSITIVE_IDS)


def test_deterministic(sandbox: Sandbox) -> None:
    sandbox.write_thresholds("[deterministic]\nerror_rate = { max = 0.0 }\n")
    assert sandbox.run("-m", "deterministic", "--rag-no-report").ret == pytest.ExitCode.OK
    results = valid(sandbox.results_path)
    for case in tier_cases(results, "deterministic"):
        assert case["details"]["checks"] and isinstance(case["details"]["answer"], str)


def test_judge_with_a_scripted_judge_server(sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path) -> None:
    sandbox.add_judge_tests()
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    result = sandbox.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "cache"), "--rag-no-report")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    results = valid(sandbox.results_path)
    cases = tier_cases(results, "judge")
    assert len(cases) == len(POSITIVE_IDS) == judge_env.calls("chat")
    assert all(c["details"]["judge_calls"] == 1 and c["details"]["engine"] == "native" for c in cases)
    assert results["run"]["usage"]["judge"]["calls"] == len(POSITIVE_IDS)


def test_a_failing_judge_writes_valid_error_cases(
    sandbox: Sandbox, judge_env: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.openai_server import raw

    monkeypatch.setenv("RAG_JUDGE_MAX_RETRIES", "0")  # the error cases are the subject, not the backoff (~45 s)
    judge_env.set_default("chat", lambda request: raw(b'{"claims": [ {'))
    sandbox.add_judge_tests()
    sandbox.write_thresholds("[judge]\nerror_rate = { max = 0.0 }\n")
    assert (
        sandbox.run("-m", "judge", "--rag-judge-cache", str(tmp_path / "cache"), "--rag-no-report").ret
        == pytest.ExitCode.TESTS_FAILED
    )
    cases = tier_cases(valid(sandbox.results_path), "judge")
    assert {c["outcome"] for c in cases} == {"error"}


def test_passk(sandbox: Sandbox) -> None:
    sandbox.add_passk_tests()
    sandbox.write_thresholds("[passk]\nflaky_count = { max = 0 }\n\n[passk.case]\nn = 3\nk = 2\n")
    assert sandbox.run("-m", "passk", "--rag-no-report").ret == pytest.ExitCode.OK
    for case in tier_cases(valid(sandbox.results_path), "passk"):
        assert (case["details"]["n"], case["details"]["k"]) == (3, 2) and case["details"]["class"] in (
            "stable_pass",
            "stable_fail",
        )


def test_a_merged_sharded_run_and_its_shards(sandbox: Sandbox, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for index in (1, 2):
        path = sandbox.root / "reports" / f"shard-{index}.json"
        assert (
            sandbox.run("--rag-shard", f"{index}/2", "--rag-results", str(path), "--rag-no-report").ret
            == pytest.ExitCode.OK
        )
        assert valid(path)["verdict"] == "shard"
        paths.append(str(path))
    merged = sandbox.root / "reports" / "merged.json"
    code = main(["merge", *paths, "--out", str(merged), "--rag-no-report"])
    capsys.readouterr()
    assert code == 0
    results = valid(merged)
    assert results["run"]["shard"] is None and [m["shard"]["index"] for m in results["run"]["merged_from"]] == [1, 2]
    assert {c["tier"] for c in results["cases"]} == {"retrieval", "deterministic"}


def test_a_file_with_a_baseline_compared(sandbox: Sandbox) -> None:
    """The comparison under ``baseline`` and the regression gates validate too."""
    sandbox.write_thresholds(
        '[retrieval]\npass_rate = { min = 0.0 }\n\n[regression]\nno_new_failures = true\n"retrieval.doc.recall@5" = { max_drop = 0.1 }\n'
    )
    assert sandbox.run("-m", "retrieval", "--rag-no-report").ret == pytest.ExitCode.OK
    base = sandbox.root / "base.json"
    base.write_text(sandbox.results_path.read_text(encoding="utf-8"), encoding="utf-8")
    assert sandbox.run("-m", "retrieval", "--rag-no-report", "--rag-baseline", str(base)).ret == pytest.ExitCode.OK
    results = valid(sandbox.results_path)
    assert results["baseline"]["path"] == str(base)
    assert [g["tier"] for g in results["gates"]].count("regression") == 2


def test_the_sample_file_of_the_report_tests_is_current() -> None:
    sample = Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json"
    assert json.loads(sample.read_text(encoding="utf-8"))["version"] == RESULTS_VERSION
    valid(sample)


# --------------------------------------------------------------------------- dialogue items
# A dialogue item is stored under ``items`` with its ``opening`` (no ``question``): every
# run holding dialogue cases wrote a file its own reader refused (issue 20, point 0).


def _dialogue_sandbox(sandbox: Sandbox) -> list[str]:
    """The demo dialogue set beside the sandbox's golden set, the dialogue tests, and the
    faithful scripted tutor (tests/rag_eval/_dialogue_systems.py) as the pipeline."""
    from tests.rag_eval._dialogue_systems import DEMO

    shutil.copy(DEMO, sandbox.dataset / "dialogues.jsonl")
    sandbox.add_dialogue_tests()
    sandbox.add_passk_tests()
    config = sandbox.root / "tutor.toml"
    config.write_text(
        'pipeline = "tests.rag_eval._dialogue_systems:tutor"\n[options]\ntutor = "oracle"\n', encoding="utf-8"
    )
    return ["--rag-pipeline-config", str(config)]


def test_dialogue_tier_items_are_dialogue_items(sandbox: Sandbox) -> None:
    args = _dialogue_sandbox(sandbox)
    sandbox.write_thresholds("[dialogue]\nerror_rate = { max = 0.0 }\n")
    assert sandbox.run("-m", "dialogue", "--rag-no-report", *args).ret == pytest.ExitCode.OK
    results = valid(sandbox.results_path)
    cases = tier_cases(results, "dialogue")
    for case in cases:
        item = results["items"][case["id"]]
        assert "question" not in item and item["opening"] and item["expected_turns"]
    assert main(["report", str(sandbox.results_path), "--out", str(sandbox.root / "r.html")]) == 0


def test_passk_over_dialogues_stores_dialogue_items(sandbox: Sandbox) -> None:
    """passk over dialogue items (the golden items' passk cases skip: the scripted tutor
    has no chat call); the golden kind of every tier is covered by the tests above."""
    args = _dialogue_sandbox(sandbox)
    sandbox.write_thresholds("[passk]\nerror_rate = { max = 0.0 }\n\n[passk.case]\nn = 2\nk = 2\n")
    assert sandbox.run("-m", "passk", "--rag-no-report", *args).ret == pytest.ExitCode.OK
    results = valid(sandbox.results_path)
    measured = [c for c in tier_cases(results, "passk") if c["outcome"] != "skip"]
    assert measured and all("opening" in results["items"][c["id"]] for c in measured)


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ({"id": "d1", "opening": "hi"}, "items.d1"),  # a dialogue item without its expected turns
        ({"id": "g1"}, "items.g1"),  # neither a question nor an opening
    ],
)
def test_an_item_of_neither_kind_is_refused(tmp_path: Path, item: dict[str, Any], problem: str) -> None:
    from rag_eval.results.file import ResultsFileError, check_results

    data = json.loads(
        (Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json").read_text(encoding="utf-8")
    )
    data["items"] = {item["id"]: item}
    with pytest.raises(ResultsFileError, match=problem.replace(".", r"\.")):
        check_results(data, "x.json")


def test_the_writer_never_puts_a_file_the_schema_refuses_in_place_of_the_old_one(tmp_path: Path) -> None:
    """The write path validates before the rename: an invalid results file replaces no
    existing one (checksum), no report is rendered from it, and it is kept beside the
    path for the bug report (``eval-results.invalid.json``)."""
    import hashlib

    from rag_eval.outputs.write import write_outputs
    from rag_eval.results.build import ResultsWriteError
    from rag_eval.results.finalize import Outputs
    from rag_eval.util.redact import Redactor
    from tests.rag_eval.test_results_build import Dumped

    data = json.loads(
        (Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json").read_text(encoding="utf-8")
    )
    data["items"] = {"d1": {"id": "d1", "opening": "hi"}}
    out = tmp_path / "eval-results.json"
    out.write_text('{"an": "earlier run"}', encoding="utf-8")
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    report = tmp_path / "eval-results.html"
    with pytest.raises(ResultsWriteError) as err:
        write_outputs(Dumped(data), Outputs(out, report, redactor=Redactor(())))
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before and not report.exists()
    assert str(err.value).startswith(f"{out}: left as it was: what was produced is invalid: not a valid version-3")
    assert "items.d1" in str(err.value)
    kept = tmp_path / "eval-results.invalid.json"
    assert json.loads(kept.read_text(encoding="utf-8"))["items"] == data["items"]


def test_the_writer_names_a_nan_by_its_path_not_as_null(tmp_path: Path) -> None:
    from rag_eval.outputs.write import write_outputs
    from rag_eval.results.build import ResultsWriteError
    from rag_eval.results.finalize import Outputs
    from rag_eval.util.redact import Redactor
    from tests.rag_eval.test_results_build import Dumped

    data = json.loads(
        (Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json").read_text(encoding="utf-8")
    )
    key = next(iter(data["metrics"]))
    data["metrics"][key] = float("nan")
    with pytest.raises(ResultsWriteError, match=rf"metrics\.{re.escape(key)}: nan is not a finite number") as err:
        write_outputs(Dumped(data), Outputs(tmp_path / "r.json", redactor=Redactor(())))
    assert "null" not in str(err.value)
