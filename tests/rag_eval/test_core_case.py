"""CaseResult's key across files: ``tier::id``, the same from the object and from its dict."""

from __future__ import annotations

from rag_eval.core.case import CaseResult, case_key


def test_a_case_and_its_dict_have_one_key() -> None:
    case = CaseResult(id="q1", tier="retrieval", outcome="pass")
    assert case.key == case_key(case.to_dict()) == "retrieval" + "::" + "q1"
    assert case_key({"tier": "judge", "id": "q1"}) != case.key  # one id in two tiers: two cases
