"""rag_eval.tiers: the registry, and a sixth tier defined in one module, a project's conftest,
with everything a built-in tier has (typed details, a run-level rate with its direction, a
judged value, a schema fragment, a report view, a command-line option): it is collected,
gated, written, validated against its schema, labelled with ``python -m rag_eval sample``
and shown in the HTML report in Chromium, with no file of rag_eval changed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

from rag_eval import tiers
from rag_eval.dialogue.model import DialogueItem
from rag_eval.gates.aggregate import lower_is_better, worst_value
from rag_eval.golden.model import EvidenceGroup, EvidenceRef, GoldenItem
from rag_eval.labels.page import PAGE, SHEET
from rag_eval.results.file import schema_problems
from rag_eval.tiers import Tier
from tests.rag_eval._plugin_sandbox import GOLDEN, IDS, Sandbox
from tests.rag_eval.test_outputs_browser import browser, page  # noqa: F401 - the Chromium fixtures


def test_the_five_built_in_tiers_in_collection_order() -> None:
    assert tiers.names() == ("retrieval", "deterministic", "judge", "passk", "dialogue")
    assert [t.name for t in tiers.all_tiers()] == list(tiers.names())
    assert list(tiers.golden_applies()) == ["retrieval", "deterministic", "judge", "passk"]


def test_which_items_a_tier_takes() -> None:
    golden = GoldenItem(id="q", question="q?", evidence=(EvidenceGroup((EvidenceRef(doc_id="doc"),)),))
    negative = GoldenItem(id="n", question="n?")
    dialogue = DialogueItem(id="d", opening="hi", expected_turns=())
    assert negative.is_negative and not golden.is_negative
    assert [t.name for t in tiers.all_tiers() if t.applies(golden)] == ["retrieval", "deterministic", "judge", "passk"]
    assert [t.name for t in tiers.all_tiers() if t.applies(negative)] == ["retrieval", "deterministic", "passk"]
    assert [t.name for t in tiers.all_tiers() if t.applies(dialogue)] == ["passk", "dialogue"]


def test_register_refuses_a_second_tier_of_a_name_and_a_non_identifier() -> None:
    class Other(Tier):
        name = "retrieval"

    with pytest.raises(ValueError, match="tier 'retrieval' is already registered"):
        tiers.register(Other())

    class Bad(Tier):
        name = "two words"

    with pytest.raises(ValueError, match="must be an identifier"):
        tiers.register(Bad())
    with pytest.raises(KeyError, match="unknown tier 'nope'; registered: retrieval, deterministic"):
        tiers.get("nope")


SIXTH_TIER = """
from dataclasses import asdict, dataclass

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.tiers import RATE_KEYS, CaseOption, Contribution, JudgedValues, LabelQuestion, LabelView, Tier, as_golden


@dataclass(frozen=True)
class QlenDetails:
    \"\"\"A qlen case's details: the question's length and the limit it was held to.\"\"\"

    chars: int
    limit: int

    def to_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(int(d["chars"]), int(d["limit"]))


class QuestionLength(Tier):
    \"\"\"A sixth tier, defined here and nowhere else: the question's length in characters.\"\"\"

    name = "qlen"
    marker = "qlen tier: the question's length (a tier of this project's own)"
    case_options = (CaseOption("limit", "int", (), 100),)
    valid_names = "question_chars, over_limit_rate, " + ", ".join(RATE_KEYS)
    details_type = QlenDetails
    label_questions = {"short_enough": LabelQuestion("Can the question be read at a glance?", ("yes", "no"))}

    def metric_ok(self, key):
        return key in RATE_KEYS or key in ("question_chars", "over_limit_rate")

    # the command line: --rag-qlen-limit overrides [qlen.case] limit
    def add_options(self, options):
        options.addoption("--rag-qlen-limit", type=int, default=None, help="the longest question that passes")

    def read_options(self, values):
        return values.getoption("rag_qlen_limit")

    def options(self, config):
        given = super().options(config)
        return {"limit": self.args(config) or given["limit"]}

    # a run-level rate: cases over the limit over cases, pooled; lower is better
    def lower_is_better(self, key):
        return super().lower_is_better(key) or key == "over_limit_rate"

    def pools(self, key):
        return key == "over_limit_rate"

    def pooled_names(self, cases):
        return ["over_limit_rate"] if cases else []

    def contribution(self, case, key):
        details = self.read_details(case)
        return None if details is None else Contribution(float(details.chars > details.limit), 1)

    # what a person can label
    def judged_values(self, case):
        if case.outcome not in ("pass", "fail"):
            return None
        return JudgedValues({"short_enough": 1.0 if case.outcome == "pass" else 0.0})

    def label_view(self, case, item):
        details = self.read_details(case)
        return LabelView(str(item.get("question", "")), f"{details.chars} characters (limit {details.limit})", ())

    # the results schema: what a qlen case's details hold
    def schema_fragment(self):
        return {
            "$defs": {
                "qlenDetails": {
                    "type": "object",
                    "required": ["chars", "limit"],
                    "properties": {"chars": {"type": "integer", "minimum": 0}, "limit": {"type": "integer", "minimum": 1}},
                }
            },
            "details": [
                {
                    "if": {"properties": {"tier": {"const": "qlen"}, "outcome": {"enum": ["pass", "fail"]}},
                           "required": ["tier", "outcome"]},
                    "then": {"properties": {"details": {"$ref": "#/$defs/qlenDetails"}}},
                }
            ],
        }

    # the HTML report: its part of a case's payload, and its view of it
    report_keys = frozenset({"chars", "limit", "system"})

    def report_payload(self, case, strings):
        details = self.read_details(case)
        return {} if details is None else {"qlen": details.to_dict()}

    def report_fragment(self):
        return (
            "ragEvalTierViews.qlen = function (box, t, h) {"
            " h.add(box, h.el('p', 'qlen-view', 'question length ' + t.qlen.chars + ' of ' + t.qlen.limit)); };"
        )

    def run(self, session, item):
        golden = as_golden(item)
        chars = len(golden.question)
        limit = session.tier_options(self)["limit"]
        return CaseResult(
            id=golden.id, tier=self.name, outcome="pass" if chars <= limit else "fail",
            failed_stage=None if chars <= limit else "question",
            message=f"{chars} characters (limit {limit})", metrics={"question_chars": float(chars)},
            tags=dict(golden.tags), split=golden.split, negative=golden.is_negative,
            details=QlenDetails(chars, limit).to_dict(),
        )


tiers.register(QuestionLength())


def pytest_unconfigure(config):
    tiers.unregister("qlen")  # the registry outlives this in-process run
"""

QLEN_TEST = """
import pytest


@pytest.mark.qlen
def test_qlen(golden_case, rag_eval):
    rag_eval.qlen(golden_case)
"""


@pytest.fixture
def sixth(sandbox: Sandbox) -> Sandbox:
    sandbox.write_conftest(SIXTH_TIER)
    (sandbox.root / "test_qlen.py").write_text(QLEN_TEST, encoding="utf-8")
    yield sandbox
    tiers.unregister("qlen")


LIMIT = 30  # --rag-qlen-limit: the command line overrides [qlen.case] limit = 40
OVER = [i["id"] for i in GOLDEN if len(i["question"]) > LIMIT]


@pytest.fixture
def sixth_run(sixth: Sandbox) -> tuple[Sandbox, dict[str, Any]]:
    """One run of the sixth tier, gated on its metric, its case rates and its run-level rate."""
    sixth.write_thresholds(
        "[qlen]\nquestion_chars = { max = 60 }\npass_rate = { min = 0.3 }\nerror_rate = { max = 0.0 }\n"
        "over_limit_rate = { max = 0.9 }\n[qlen.case]\nlimit = 40\n"
    )
    result = sixth.run("-m", "qlen", "-rA", "--rag-qlen-limit", str(LIMIT))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["qlen: * pass*", "*rag-eval gate PASSED: 4 of 4 gates passed*"])
    return sixth, sixth.results()


def test_a_sixth_tier_from_a_conftest_is_collected_gated_written_validated_and_reported(
    sixth_run: tuple[Sandbox, dict[str, Any]],
) -> None:
    sixth, results = sixth_run
    cases = {c["id"]: c for c in results["cases"] if c["tier"] == "qlen"}
    assert set(cases) == set(IDS)  # every golden item: the tier takes them all
    assert OVER and 0 < len(OVER) < len(IDS)  # the sandbox's questions fall on both sides of the limit
    questions = {i["id"]: i["question"] for i in GOLDEN}
    # its own typed details, with the command line's limit
    assert all(c["details"] == {"chars": len(questions[i]), "limit": LIMIT} for i, c in cases.items())
    assert sorted(i for i, c in cases.items() if c["outcome"] == "fail") == sorted(OVER)
    gates = {g["metric"]: g for g in results["gates"] if g["tier"] == "qlen"}
    assert set(gates) == {"qlen.question_chars", "qlen.pass_rate", "qlen.error_rate", "qlen.over_limit_rate"}
    # the run-level rate: pooled over the cases' contributions (one each: over the limit or not)
    rate = results["metrics_n"]["qlen.over_limit_rate"]
    assert (rate["value"], rate["numerator"], rate["denominator"], rate["n"]) == (
        len(OVER) / len(IDS),
        len(OVER),
        len(IDS),
        len(IDS),
    )
    assert gates["qlen.over_limit_rate"]["passed"] and gates["qlen.over_limit_rate"]["value"] == len(OVER) / len(IDS)
    html = sixth.results_path.with_suffix(".html").read_text(encoding="utf-8")
    assert "ragEvalTierViews.qlen" in html and "question_chars" in html


def test_the_sixth_tiers_schema_fragment_validates_its_details(sixth_run: tuple[Sandbox, dict[str, Any]]) -> None:
    sixth, results = sixth_run
    assert "qlen" not in tiers.names()  # the inner run's conftest unregistered it
    assert schema_problems(results) == []  # open details: the built-in schema accepts anything
    broken = json.loads(json.dumps(results))
    index = next(n for n, c in enumerate(broken["cases"]) if c["tier"] == "qlen")
    broken["cases"][index]["details"]["chars"] = "many"
    assert schema_problems(broken) == []
    _register_conftest(sixth)  # as the inner run had it: the schema now holds the tier's fragment
    # its direction: lower is better, so an errored case counts as 1 and a regression is a rise
    assert lower_is_better("over_limit_rate", "qlen") and worst_value("over_limit_rate", "qlen") == 1.0
    assert schema_problems(results) == []
    problems = schema_problems(broken)
    assert len(problems) == 1 and problems[0].startswith(f"cases[{index}].details.chars:"), problems


def test_the_sixth_tiers_judged_value_is_labelled_with_python_m_rag_eval_sample(
    sixth_run: tuple[Sandbox, dict[str, Any]],
) -> None:
    sixth, _ = sixth_run
    out = sixth.root / "labelling"
    done = subprocess.run(
        [sys.executable, "-m", "rag_eval", "--tiers", "conftest", "sample", str(sixth.results_path), "--n", "4"]
        + ["--out", str(out)],
        cwd=sixth.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in (out / SHEET).read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 4 and {line["metric"] for line in lines} == {"qlen.short_enough"}
    assert {line["case"] for line in lines} <= set(IDS)
    shown = (out / PAGE).read_text(encoding="utf-8")
    assert "Can the question be read at a glance?" in shown and f"(limit {LIMIT})" in shown
    unknown = subprocess.run(
        [sys.executable, "-m", "rag_eval", "--tiers", "no_such_module", "sample", str(sixth.results_path)],
        cwd=sixth.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unknown.returncode == 2 and "--tiers no_such_module: cannot import it" in unknown.stderr


def test_the_sixth_tiers_report_view_shows_in_chromium(
    sixth_run: tuple[Sandbox, dict[str, Any]],
    page: Any,  # noqa: F811 - the Chromium page fixture of test_outputs_browser
) -> None:
    sixth, _ = sixth_run
    page.goto(sixth.results_path.with_suffix(".html").as_uri())
    long_id = OVER[0]
    page.locator("#case-table tr.case", has_text=long_id).click()
    view = page.locator("#case-table tr.detail .qlen-view").first
    view.wait_for()
    chars = len(next(i["question"] for i in GOLDEN if i["id"] == long_id))
    assert view.inner_text() == f"question length {chars} of {LIMIT}"


def _register_conftest(sandbox: Sandbox) -> None:
    """Import the sandbox's conftest here, registering its tier in this process (``sixth`` unregisters it)."""
    spec = importlib.util.spec_from_file_location("qlen_conftest", sandbox.root / "conftest.py")
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_a_sixth_tier_gate_fails_the_run_and_a_typo_names_its_valid_metrics(sixth: Sandbox) -> None:
    sixth.write_thresholds("[qlen]\nquestion_chars = { max = 5 }\n")
    failed = sixth.run("-m", "qlen")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.stdout.fnmatch_lines(["*rag-eval gate FAILED*qlen.question_chars*"])
    sixth.write_thresholds("[qlen]\nquestion_char = { max = 5 }\n")
    typo = sixth.run("-m", "qlen")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    typo.stderr.fnmatch_lines(
        [
            "*unknown metric 'question_char' in [[]qlen[]]; valid names for qlen: question_chars, over_limit_rate, pass_rate*"
        ]
    )
