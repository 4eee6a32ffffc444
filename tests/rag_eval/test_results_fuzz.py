"""Stored results files, fuzzed (hypothesis), against every command that reads one.

Each example takes valid files (three shards and a baseline of one run, and a complete
run with judged cases), changes one of them at one JSON path (a value of another type or
range, NaN, infinities, 10**400, a removed key) or cuts its text short, and runs the
commands that read it: merge (with the baseline: the loader --rag-baseline uses),
report, summary, power and sample. Every input ends in exit 0 or 1 with valid outputs,
or in a clean exit 2 with every existing output byte for byte as it was: never a
traceback. A fixed seed (derandomize) and a bounded number of examples keep it
reproducible and within the suite's time budget.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rag_eval.cli import main
from rag_eval.results.file import load_results
from tests.rag_eval._results_factory import make_results
from tests.rag_eval.test_results_merge import THRESHOLDS, shard_files, single_run

EXAMPLES = 100
EDGE_NUMBERS = st.sampled_from(
    [50.0, -1, -0.0, 1.0000001, 1e308, -1e308, 10**400, float("nan"), float("inf"), float("-inf"), 2**63, 0.5]
)
LEAVES = st.one_of(
    EDGE_NUMBERS,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FILES = ("s1.json", "s2.json", "s3.json", "base.json", "run.json")


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every JSON path of ``data`` (the root excluded), in document order."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from _paths(value, (*prefix, key))


class Originals(dict[str, Any]):
    """The valid files and their JSON paths; a short repr (hypothesis shows the arguments of a failing example)."""

    def __repr__(self) -> str:
        return "Originals(s1.json, s2.json, s3.json, base.json, run.json)"


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("fuzz")
    thresholds = folder / "thresholds.toml"
    thresholds.write_text(THRESHOLDS, encoding="utf-8")
    s1, s2, s3 = shard_files(thresholds)
    docs = {"s1.json": s1, "s2.json": s2, "s3.json": s3, "base.json": single_run(thresholds)}
    docs["run.json"] = make_results(8)
    return Originals(docs=docs, paths={name: list(_paths(doc)) for name, doc in docs.items()})


def _mutated(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    copy = json.loads(json.dumps(doc))
    target = copy
    for key in path[:-1]:
        target = target[key]
    if delete and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return copy


def _sha(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))}


def _commands(name: str, folder: Path) -> list[tuple[list[str], list[Path]]]:
    """The commands that read ``name`` and the outputs each writes when it succeeds."""
    out = folder / "out"
    if name != "run.json":
        shards = [str(folder / s) for s in FILES[:3]]
        merged = out / "merged.json"
        cmd = ["merge", *shards, "--out", str(merged), "--summary-md", str(out / "sum.md")]
        return [([*cmd, "--baseline", str(folder / "base.json")], [merged, out / "merged.html"])]
    run = str(folder / "run.json")
    return [
        (["report", run, "--out", str(out / "r.html")], [out / "r.html"]),
        (["summary", run, "--out", str(out / "s.md")], [out / "s.md"]),
        (["power", run, "--metric", "retrieval.recall@5", "--drop", "0.1"], []),
        (["sample", run, "--n", "3", "--out", str(out / "lab")], [out / "lab" / "labels-sheet.jsonl"]),
    ]


@settings(
    max_examples=EXAMPLES,
    derandomize=True,  # a fixed seed: the same examples on every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=st.sampled_from((*FILES, "run.json", "run.json")),  # run.json: four commands read it
    where=st.integers(min_value=0, max_value=10**6),
    value=VALUES,
    how=st.sampled_from(["replace", "replace", "delete", "truncate"]),
)
def test_every_stored_file_ends_in_a_valid_output_or_a_clean_exit_2(
    originals: dict[str, Any], name: str, where: int, value: Any, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs, paths = originals["docs"], originals["paths"][name]
    path = paths[where % len(paths)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for file, doc in docs.items():
            (folder / file).write_text(json.dumps(doc), encoding="utf-8")
        text = json.dumps(_mutated(docs[name], path, value, how == "delete"))
        if how == "truncate":
            text = json.dumps(docs[name])[: where % max(1, len(json.dumps(docs[name])))]
        (folder / name).write_text(text, encoding="utf-8")
        out = folder / "out"
        out.mkdir()
        for existing in ("merged.json", "merged.html", "sum.md", "r.html", "s.md"):
            (out / existing).write_text("an existing output\n", encoding="utf-8")
        for command, outputs in _commands(name, folder):
            before = _sha(out)
            code = main(command)  # an exception fails the test: no traceback for any input
            capsys.readouterr()
            assert code in (0, 1, 2), command
            event(f"{command[0]} exit {code}")  # --hypothesis-show-statistics: how the examples ended
            if code == 2:
                assert _sha(out) == before, (command, path, how)
                continue
            for output in outputs:
                assert output.is_file() and output.stat().st_size > 0, (command, output)
            if command[0] == "merge":
                load_results(out / "merged.json")  # what merge wrote is a valid results file
