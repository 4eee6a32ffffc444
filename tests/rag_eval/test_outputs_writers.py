"""The output formats' registry: every built-in format renders the typed results, a new
format is one registered writer, redaction happens once before any writer, and outputs/
reads typed results (a bounded number of ``.get(`` and none on a tier's details)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_eval.outputs import writers
from rag_eval.outputs.junit import JunitParts
from rag_eval.results.model import RunResults
from rag_eval.util.redact import Redactor
from tests.rag_eval._results_factory import make_results
from tests.rag_eval._typed import typed

OUTPUTS = Path(__file__).resolve().parents[2] / "rag_eval" / "outputs"
GET_LIMIT = 30  # issue 32: from 321 `.get(` over outputs/ to fewer than 30


@pytest.fixture(scope="module")
def results() -> RunResults:
    return typed(make_results(24))


def test_the_built_in_formats_are_registered() -> None:
    assert set(writers.names()) >= {"json", "html", "markdown", "junit"}


def test_the_json_format_is_the_results_file(results: RunResults) -> None:
    data = writers.get("json").render(results, writers.Context())
    assert RunResults.from_dict(json.loads(data)) == results


def test_each_file_format_renders_the_same_results(results: RunResults, tmp_path: Path) -> None:
    html = writers.write("html", results, tmp_path / "r.html").read_text(encoding="utf-8")
    summary = writers.write("markdown", results, tmp_path / "s.md").read_text(encoding="utf-8")
    writers.write("markdown", results, tmp_path / "s.md")  # appended: $GITHUB_STEP_SUMMARY
    assert html.startswith("<!DOCTYPE html>") and "retrieval.recall@5" in html
    assert summary.startswith("<!-- rag-eval-summary -->") and "retrieval.recall@5" in summary
    assert (tmp_path / "s.md").read_text(encoding="utf-8") == summary * 2


def test_junit_has_a_testcase_per_gate_and_properties_for_the_failed(results: RunResults) -> None:
    parts = writers.get("junit").render(results, writers.Context(write_error="disk full"))
    assert isinstance(parts, JunitParts)
    failed = [g for g in results.gates if not g.passed]
    assert parts.properties[0] == ("rag_eval_verdict", results.verdict)
    assert len(parts.properties) == 1 + len(failed)
    assert [name for name, _ in parts.testcases] == [g.metric for g in results.gates] + ["results file"]
    assert sum(1 for _, failure in parts.testcases if failure is not None) == len(failed) + 1


@dataclass(frozen=True)
class CountWriter:
    """A sixth format from outside the package: one object, one register call."""

    name: str = "count"
    append: bool = False

    def render(self, results: RunResults, context: writers.Context) -> bytes:
        return f"{len(results.cases)} cases, {len(results.gates)} gates\n".encode()


def test_a_new_format_is_one_registered_writer(results: RunResults, tmp_path: Path) -> None:
    writers.register(CountWriter())
    try:
        out = writers.write("count", results, tmp_path / "count.txt")
        assert out.read_text() == f"{len(results.cases)} cases, {len(results.gates)} gates\n"
        again = CountWriter()  # its module imported anew (pytester restores sys.modules): replaces
        assert writers.register(again) is again and writers.get("count") is again

        class OtherCount(CountWriter):  # another class under a taken name: refused
            pass

        with pytest.raises(ValueError, match="already registered"):
            writers.register(OtherCount())
    finally:
        writers._REGISTRY.pop("count")
    with pytest.raises(KeyError, match="unknown output format 'count'"):
        writers.get("count")


def test_redaction_happens_once_on_the_typed_results(results: RunResults) -> None:
    secret = results.cases[0].id  # any text of the results stands in for a secret a server echoed
    shown = writers.redacted(results, Redactor([secret]))
    assert secret not in json.dumps(shown.to_dict())
    assert secret in json.dumps(results.to_dict())  # the run's own results are not changed
    assert writers.redacted(results, Redactor()) is results  # nothing to redact: nothing copied


def test_outputs_read_typed_results() -> None:
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(OUTPUTS.glob("*.py"))}
    gets = {name: text.count(".get(") for name, text in sources.items()}
    assert sum(gets.values()) < GET_LIMIT, gets
    # a tier's details are the tier's (Tier.report_payload): outputs read only every case's part
    on_details = {
        name: re.findall(r"details\.get\(\s*\"(\w+)\"", text) for name, text in sources.items() if "details" in text
    }
    assert all(not keys for keys in on_details.values()), on_details
