"""``pytest --rag-shard I/N`` end to end, and ``python -m rag_eval merge`` over the shard files.

Each test builds the sandbox project of ``_plugin_sandbox`` (9 golden items) and runs
pytest on it with pytester, offline. The central claim: the N shard files, merged,
give exactly the metrics, gates and verdict of one unsharded run.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from rag_eval.cli import main
from rag_eval.results.merge import merge_results, read_shards
from rag_eval.util.shard import shard_of
from tests.rag_eval._plugin_sandbox import GOLDEN, IDS, PASSING_THRESHOLDS, Sandbox

# One gate the sandbox cannot meet, so that the verdicts compared are "fail" with a
# failing gate among passing ones, not a trivial all-pass.
THRESHOLDS = PASSING_THRESHOLDS + '"check.must_contain" = { min = 0.5, min_cases = 100 }\n'


def _shard_files(sandbox: Sandbox, count: int) -> list[str]:
    paths = []
    for index in range(1, count + 1):
        path = sandbox.root / "reports" / f"shard-{index}.json"
        result = sandbox.run("--rag-shard", f"{index}/{count}", "--rag-results", str(path), "--rag-no-report")
        # A shard gates nothing: its exit code says only whether its cases ran.
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        result.stdout.fnmatch_lines(
            [f"shard {index}/{count}: gates are evaluated over all shards by `python -m rag_eval merge`"]
        )
        paths.append(str(path))
    return paths


def _without_duration(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cases without their timings: the gate's ``duration`` and the system's ``stage_ms``."""
    out = []
    for c in cases:
        case = {k: v for k, v in c.items() if k != "duration"}
        if isinstance(case.get("details"), dict) and "stage_ms" in case["details"]:
            case["details"] = {k: v for k, v in case["details"].items() if k != "stage_ms"}
        out.append(case)
    return out


@pytest.mark.parametrize("count", [1, 2, 3])
def test_merged_shards_equal_a_single_run(sandbox: Sandbox, count: int) -> None:
    sandbox.write_thresholds(THRESHOLDS)
    single_run = sandbox.run("--rag-no-report")
    assert single_run.ret == pytest.ExitCode.TESTS_FAILED  # the unreachable gate
    single = sandbox.results()
    assert single["verdict"] == "fail"
    assert [g["passed"] for g in single["gates"]].count(False) == 1

    paths = _shard_files(sandbox, count)
    shards = read_shards(paths)
    merged = merge_results(shards, paths)

    for shard in shards:
        assert (shard["verdict"], shard["gates"]) == ("shard", [])
    assert merged["metrics"] == single["metrics"]
    assert merged["metrics_n"] == single["metrics_n"]
    assert merged["gates"] == single["gates"]  # values, n, errors, passed, worst cases
    assert merged["verdict"] == single["verdict"] == "fail"
    assert _without_duration(merged["cases"]) == _without_duration(single["cases"])
    assert merged["items"] == single["items"]
    for key in (
        "system",
        "outcomes",
        "dataset_fingerprint",
        "golden_sha256",
        "thresholds_sha256",
        "overrides",
        "commit",
    ):
        assert merged["run"][key] == single["run"][key], key
    assert merged["run"]["shard"] is None
    assert [m["shard"] for m in merged["run"]["merged_from"]] == [
        {"index": i, "count": count} for i in range(1, count + 1)
    ]


@pytest.mark.parametrize("count", [1, 2, 3])
def test_every_item_is_in_exactly_the_shard_its_id_hashes_to(sandbox: Sandbox, count: int) -> None:
    paths = _shard_files(sandbox, count)
    owners: dict[str, list[int]] = {}
    for index, shard in enumerate(read_shards(paths), start=1):
        assert shard["run"]["shard"] == {"index": index, "count": count}
        for item_id in {c["id"] for c in shard["cases"]}:
            owners.setdefault(item_id, []).append(index)
        assert set(shard["items"]) == {c["id"] for c in shard["cases"]}  # each shard carries its own golden items
    assert owners == {i: [shard_of(i, count)] for i in IDS}


def _collected_ids(sandbox: Sandbox, shard: str) -> set[str]:
    result = sandbox.run("--collect-only", "-q", "--rag-shard", shard)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return {m.group(1) for m in re.finditer(r"\[([^\]]+)\]", result.stdout.str())}


def test_the_partition_does_not_depend_on_the_order_of_the_golden_file(sandbox: Sandbox) -> None:
    before = {s: _collected_ids(sandbox, f"{s}/3") for s in (1, 2, 3)}
    shuffled = list(GOLDEN)
    random.Random(7).shuffle(shuffled)
    assert [i["id"] for i in shuffled] != list(IDS)
    sandbox.write_golden(shuffled)

    after = {s: _collected_ids(sandbox, f"{s}/3") for s in (1, 2, 3)}

    assert after == before
    assert all(before.values())  # every shard of this set owns at least one item
    assert set().union(*before.values()) == set(IDS)


@pytest.mark.parametrize("text", ["0/2", "3/2", "x", "1/0", "2"])
def test_a_bad_shard_option_is_a_usage_error(sandbox: Sandbox, text: str) -> None:
    result = sandbox.run("--rag-shard", text)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--rag-shard expects I/N with 1 <= I <= N (e.g. --rag-shard 1/3), got '{text}'"])


def test_merge_cli_prints_the_gate_lines_of_a_single_run_and_exits_by_the_gate(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox.write_thresholds(THRESHOLDS)
    single_run = sandbox.run("--rag-no-report")
    single_lines = [line for line in single_run.stdout.lines if re.match(r"(PASS|FAIL) |gate: ", line)]
    paths = _shard_files(sandbox, 3)
    capsys.readouterr()
    out = sandbox.root / "reports" / "merged.json"

    code = main(["merge", *paths, "--out", str(out), "--rag-no-report"])

    printed = capsys.readouterr().out.splitlines()
    assert code == 1 == single_run.ret
    assert [line for line in printed if re.match(r"(PASS|FAIL) |gate: ", line)] == single_lines
    assert "gate: FAILED (5/6 gates passed)" in printed
    assert json.loads(out.read_text(encoding="utf-8"))["verdict"] == "fail"


def test_a_shard_that_owns_no_item_writes_an_empty_shard_file(sandbox: Sandbox) -> None:
    from rag_eval.util.shard import shard_of

    count = 12  # more shards than the sandbox's 9 items: some own nothing
    empty = next(i for i in range(1, count + 1) if all(shard_of(item_id, count) != i for item_id in IDS))
    result = sandbox.run("-m", "retrieval", "--rag-shard", f"{empty}/{count}")
    assert result.ret == pytest.ExitCode.OK  # not 5: an empty shard is a valid part of the run
    data = sandbox.results()
    assert data["cases"] == [] and data["verdict"] == "shard"
    assert data["run"]["shard"] == {"index": empty, "count": count}
