"""rag_eval.plugin.terminal: the tier lines of the gate summary (issue 20.10, 20.11)."""

from __future__ import annotations

from rag_eval.core.case import CaseResult
from rag_eval.plugin.terminal import _tier_lines


def negative(i: int) -> CaseResult:
    return CaseResult(id=f"n{i}", tier="judge", outcome="pass", negative=True, details={"measured_only": True})


def test_one_negative_is_singular_and_two_are_plural() -> None:
    assert [line.text for line in _tier_lines([negative(1)], quiet=False)] == [
        "judge: 1 pass (1 negative measured, not judged)"
    ]
    assert (
        _tier_lines([negative(1), negative(2)], quiet=False)[0].text
        == "judge: 2 pass (2 negatives measured, not judged)"
    )


def test_quiet_keeps_the_count_and_the_first_cause() -> None:
    cases = [
        CaseResult(id=f"q{i}", tier="retrieval", outcome="error", failed_stage="error", message=f"cause {i}")
        for i in range(3)
    ]
    loud = [line.text for line in _tier_lines(cases, quiet=False)]
    quiet = [line.text for line in _tier_lines(cases, quiet=True)]
    assert quiet == loud[:3]
    assert quiet[0] == "retrieval: 3 error"
    assert quiet[2] == "    q0 (error): cause 0"


def test_a_failing_case_without_a_message_says_so_instead_of_ending_in_a_colon() -> None:
    case = CaseResult(id="q1", tier="qlen", outcome="fail", message="")
    assert [line.text for line in _tier_lines([case], quiet=False)][2] == "    q1 (fail): (the tier gave no message)"
