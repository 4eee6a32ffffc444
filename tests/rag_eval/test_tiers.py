"""rag_eval.tiers: the registry, and a sixth tier defined in a project's conftest that is
collected, gated, written, validated and shown in the report with no other module changed."""

from __future__ import annotations

import pytest

from rag_eval import tiers
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import EvidenceGroup, EvidenceRef, GoldenItem
from rag_eval.results.file import load_results
from rag_eval.tiers import Tier
from tests.rag_eval._plugin_sandbox import IDS, Sandbox


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


SIXTH_TIER = '''
from rag_eval import tiers
from rag_eval.results.case import CaseResult
from rag_eval.tiers import RATE_KEYS, CaseOption, Tier, as_golden


class QuestionLength(Tier):
    """A sixth tier, defined here and nowhere else: the question's length in characters."""

    name = "qlen"
    marker = "qlen tier: the question's length (a tier of this project's own)"
    case_options = (CaseOption("limit", "int", (), 100),)
    valid_names = "question_chars, " + ", ".join(RATE_KEYS)

    def metric_ok(self, key):
        return key in RATE_KEYS or key == "question_chars"

    def run(self, session, item):
        golden = as_golden(item)
        chars = len(golden.question)
        limit = session.tier_options(self)["limit"]
        return CaseResult(
            id=golden.id, tier=self.name, outcome="pass" if chars <= limit else "fail",
            failed_stage=None if chars <= limit else "question",
            message=f"{chars} characters (limit {limit})", metrics={"question_chars": float(chars)},
            tags=dict(golden.tags), split=golden.split, negative=golden.is_negative,
            details={"limit": limit},
        )


tiers.register(QuestionLength())


def pytest_unconfigure(config):
    tiers.unregister("qlen")  # the registry outlives this in-process run
'''

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


def test_a_sixth_tier_from_a_conftest_is_collected_gated_written_validated_and_reported(sixth: Sandbox) -> None:
    sixth.write_thresholds(
        "[qlen]\nquestion_chars = { max = 60 }\npass_rate = { min = 0.5 }\nerror_rate = { max = 0.0 }\n"
        "[qlen.case]\nlimit = 40\n"
    )
    result = sixth.run("-m", "qlen", "-rA")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["qlen: * pass*", "*rag-eval gate PASSED: 3 of 3 gates passed*"])
    results = load_results(sixth.results_path)  # the schema validates it
    cases = {c["id"]: c for c in results["cases"] if c["tier"] == "qlen"}
    assert set(cases) == set(IDS)  # every golden item: the tier takes them all
    long = [i for i, c in cases.items() if c["metrics"]["question_chars"] > 40]
    assert long and all(cases[i]["outcome"] == "fail" for i in long)  # [qlen.case] limit = 40 reached the tier
    assert {g["metric"] for g in results["gates"] if g["tier"] == "qlen"} == {
        "qlen.question_chars",
        "qlen.pass_rate",
        "qlen.error_rate",
    }
    html = sixth.results_path.with_suffix(".html").read_text(encoding="utf-8")
    assert "qlen" in html and "question_chars" in html


def test_a_sixth_tier_gate_fails_the_run_and_a_typo_names_its_valid_metrics(sixth: Sandbox) -> None:
    sixth.write_thresholds("[qlen]\nquestion_chars = { max = 5 }\n")
    failed = sixth.run("-m", "qlen")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.stdout.fnmatch_lines(["*rag-eval gate FAILED*qlen.question_chars*"])
    sixth.write_thresholds("[qlen]\nquestion_char = { max = 5 }\n")
    typo = sixth.run("-m", "qlen")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    typo.stderr.fnmatch_lines(
        ["*unknown metric 'question_char' in [[]qlen[]]; valid names for qlen: question_chars, pass_rate*"]
    )
