"""The one reader of results files: version check with the fix, schema validation with
messages that name the file and the place, and the schema itself (valid draft 2020-12,
read the same way by jsonschema-rs and by the reference jsonschema)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rag_eval.results.file import (
    RESULTS_VERSION,
    SCHEMA_PATH,
    ResultsFileError,
    case_results,
    check_results,
    json_path,
    load_results,
    schema,
    schema_problems,
)
from tests.rag_eval._results import case, passk, results


@pytest.fixture
def doc() -> dict[str, Any]:
    cases = [
        case("a"),
        case("b", "fail"),
        case("c", "error"),
        case("n", negative=True, metrics={"negative.empty_context": 1.0}, details={"measured_only": True}),
        case("a", tier="deterministic"),
        case("a", tier="judge", metrics={"faithfulness": 1.0}),
        case("b", "error", tier="judge"),
        passk("a", "flaky"),
    ]
    return json.loads(json.dumps(results(cases)))


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "eval-results.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def refusal(tmp_path: Path, data: Any) -> str:
    path = write(tmp_path, data)
    with pytest.raises(ResultsFileError) as info:
        load_results(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    return message


def test_the_schema_is_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema()["properties"]["version"] == {**schema()["properties"]["version"], "const": RESULTS_VERSION}


def test_the_schema_names_no_key_twice() -> None:
    """json.load keeps the last of two equal keys: a second ``$defs`` entry of one name
    silently replaces the first (two branches once both added ``$defs/interval``)."""
    twice: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        twice.extend(k for k in set(keys) if keys.count(k) > 1)
        return dict(items)

    json.loads(SCHEMA_PATH.read_text(encoding="utf-8"), object_pairs_hook=pairs)
    assert twice == []


def test_a_valid_file_loads_as_written(tmp_path: Path, doc: dict[str, Any]) -> None:
    assert load_results(write(tmp_path, doc)) == doc
    assert [c.key for c in case_results(doc)] == [f"{c['tier']}::{c['id']}" for c in doc["cases"]]


def test_an_older_version_names_the_file_both_versions_what_changed_and_the_fix(
    tmp_path: Path, doc: dict[str, Any]
) -> None:
    message = refusal(tmp_path, {**doc, "version": 1})
    assert "results file version 1, this rag_eval reads version 3" in message
    assert "system's own declared stages" in message and "pass_rate" in message  # what changed
    assert "re-run the gate with this rag_eval" in message and "python -m rag_eval report" in message


def test_a_newer_version_says_to_upgrade(tmp_path: Path, doc: dict[str, Any]) -> None:
    message = refusal(tmp_path, {**doc, "version": 4})
    assert "version 4 is newer than this rag_eval, which reads version 3" in message and "upgrade rag_eval" in message


@pytest.mark.parametrize("version", ["2", None, 2.5, True])
def test_a_version_that_is_no_version_number(tmp_path: Path, doc: dict[str, Any], version: Any) -> None:
    assert "is not a version number" in refusal(tmp_path, {**doc, "version": version})


def test_deep_nesting_is_refused_naming_the_file_not_a_recursion_traceback(
    tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 26.12: a hostile results file nested 100,000 deep, in the reader and in ``rag_eval report``."""
    text = json.dumps(doc)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "not a results file (JSON nested too deeply to read)" in refusal(tmp_path, text)
    from rag_eval.cli import main

    assert main(["report", str(tmp_path / "eval-results.json")]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: {tmp_path / 'eval-results.json'}: not a results file (JSON nested too deeply"
    )


def test_not_json_not_an_object_not_a_results_file(tmp_path: Path) -> None:
    assert "not a JSON results file" in refusal(tmp_path, '{"version": 2, "run": ')
    assert "not a results file (a JSON list, expected an object)" in refusal(tmp_path, [])
    assert "not a rag-eval results file (no 'version' and 'cases')" in refusal(tmp_path, {"report": "html"})
    with pytest.raises(ResultsFileError, match="absent.json: cannot read it"):
        load_results(tmp_path / "absent.json")


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = d
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        del node[last]

    return mutate


MALFORMED: list[tuple[Callable[[dict[str, Any]], None], str]] = [
    (_drop("metrics"), '(top level): "metrics" is a required property'),
    (_drop("run.dataset_fingerprint"), 'run: "dataset_fingerprint" is a required property'),
    (lambda d: d["run"].update(shard={"index": 0, "count": 2}), "run.shard.index: 0 is less than the minimum of 1"),
    (lambda d: d.update(verdict="ok"), 'verdict: "ok" is not one of "pass", "fail", "incomplete", "shard"'),
    (
        lambda d: d["cases"][0].update(outcome="passed"),
        'cases[0].outcome: "passed" is not one of "pass", "fail", "error", "skip"',
    ),
    (_drop("cases.0.details.checks"), 'cases[0].details: "checks" is a required property'),  # deterministic::a
    (_drop("cases.4.details.stage_levels"), 'cases[4].details: "stage_levels" is a required property'),  # retrieval::a
    (
        lambda d: d["cases"][4]["details"]["stages"]["final"].append(["c1", "high"]),
        'cases[4].details.stages.final[0][1]: "high" is not of type "number"',
    ),
    (_drop("cases.4.details.gold_ranks"), 'cases[4].details: "gold_ranks" is a required property'),
    (
        lambda d: d["cases"][3]["details"].update(class_="x") or d["cases"][3]["details"].pop("class"),
        'cases[3].details: "class" is a required property',
    ),  # passk::a
    (lambda d: d["gates"][0].update(op=">="), 'gates[0].op: ">=" is not one of "min", "max"'),
    (
        lambda d: d["metrics_n"]["retrieval.recall@5"].update(n=-1),
        "metrics_n.retrieval.recall@5.n: -1 is less than the minimum of 0",
    ),
    (lambda d: d["run"].update(time="yesterday"), 'run.time: "yesterday" is not a "date-time"'),
]


@pytest.mark.parametrize(("mutate", "said"), MALFORMED)
def test_a_malformed_file_is_refused_with_the_place_and_the_reason(
    tmp_path: Path, doc: dict[str, Any], mutate: Callable[[dict[str, Any]], None], said: str
) -> None:
    bad = copy.deepcopy(doc)
    mutate(bad)
    message = refusal(tmp_path, bad)
    assert f"not a valid version-3 results file (rag_eval/results.schema.json): {said}" in message, message
    assert message.endswith("re-run the gate to write it again")
    # the reference implementation refuses it too, at the same place (it checks date-time
    # formats only with the optional rfc3339-validator installed)
    if "date-time" not in said:
        errors = list(
            jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker()).iter_errors(bad)
        )
        assert [json_path(e.absolute_path) for e in errors] == [said.split(": ", 1)[0]]


def test_many_problems_show_three_and_count_the_rest(doc: dict[str, Any]) -> None:
    for c in doc["cases"]:
        c["outcome"] = "ok"
    with pytest.raises(ResultsFileError) as info:
        check_results(doc, "merged.json")
    assert str(info.value).count("is not one of") == 3 and f"(and {len(doc['cases']) - 3} more)" in str(info.value)


def test_problems_come_in_document_order(doc: dict[str, Any]) -> None:
    doc["cases"] = [copy.deepcopy(doc["cases"][0]) for _ in range(12)]
    for i in (10, 2, 1):
        doc["cases"][i]["outcome"] = "x"
    assert [p.split(":")[0] for p in schema_problems(doc)] == [
        "cases[1].outcome",
        "cases[2].outcome",
        "cases[10].outcome",
    ]


def test_fields_added_within_a_version_are_accepted(doc: dict[str, Any]) -> None:
    doc["run"]["new_field"] = {"any": "thing"}
    doc["cases"][0]["details"]["new_detail"] = [1, 2]
    doc["future"] = True
    assert schema_problems(doc) == []


def test_a_dialogue_case_has_its_details_checked(doc: dict[str, Any]) -> None:
    from rag_eval.tiers.dialogue.details import DialogueDetails

    details = DialogueDetails(
        {"dialogue_id": "d1", "turns": [{"turn": 1}]},
        {"outcome": "pass"},
        (),
        3,
        "scripted",
        {"turns": 1, "system_calls": 1, "student_replies": 0},
        {},
    )
    doc["cases"].append({**doc["cases"][0], "tier": "dialogue", "details": details.to_dict()})
    assert schema_problems(doc) == []
    del doc["cases"][-1]["details"]["transcript"]
    assert any("transcript" in p for p in schema_problems(doc))


def test_the_report_tests_synthetic_runs_are_valid_files() -> None:
    from tests.rag_eval._results_factory import make_results, with_baseline

    assert schema_problems(json.loads(json.dumps(with_baseline(make_results(60))))) == []


def test_evidence_pending_is_a_non_negative_count_with_its_command(doc: dict[str, Any]) -> None:
    doc["run"]["evidence_pending"] = {"count": 2, "decided": 0, "command": "python -m rag_eval evidence r.json"}
    check_results(doc, "r.json")
    doc["run"]["evidence_pending"]["count"] = -1
    with pytest.raises(ResultsFileError, match="run.evidence_pending.count"):
        check_results(doc, "r.json")
