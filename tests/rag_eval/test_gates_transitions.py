"""Transitions: the cases whose outcome changed between a baseline and this run, by
tier::id, each list sorted; new and removed only within tiers both runs ran."""

from __future__ import annotations

from typing import Any

from rag_eval.gates.transitions import case_transitions
from tests.rag_eval._results import case, passk, results


def keys(rows: list[dict[str, Any]]) -> list[str]:
    return [r["key"] for r in rows]


def test_pass_to_fail_and_error_say_which() -> None:
    base = results([case("a"), case("b"), case("c")])
    now = results([case("a"), case("b", "fail", failed_stage="context"), case("c", "error")])
    t = case_transitions(now, base)
    assert t["pass_to_fail"] == [
        {
            "key": "retrieval::b",
            "id": "b",
            "tier": "retrieval",
            "was": "pass",
            "now": "fail",
            "failed_stage": "context",
        },
        {"key": "retrieval::c", "id": "c", "tier": "retrieval", "was": "pass", "now": "error", "failed_stage": "error"},
    ]
    assert t["fail_to_pass"] == t["new"] == t["removed"] == t["stable_to_flaky"] == []


def test_fail_and_error_to_pass() -> None:
    base = results([case("a", "fail"), case("b", "error")])
    now = results([case("a"), case("b")])
    t = case_transitions(now, base)
    assert [(r["key"], r["was"], r["now"], r["failed_stage"]) for r in t["fail_to_pass"]] == [
        ("retrieval::a", "fail", "pass", None),
        ("retrieval::b", "error", "pass", None),
    ]
    assert t["pass_to_fail"] == []


def test_the_same_id_in_two_tiers_is_two_cases() -> None:
    base = results([case("a"), case("a", tier="deterministic")])
    now = results([case("a"), case("a", "fail", tier="deterministic", failed_stage="generation")])
    assert keys(case_transitions(now, base)["pass_to_fail"]) == ["deterministic::a"]


def test_stable_pass_to_flaky() -> None:
    base = results([passk("a", "stable_pass"), passk("b", "stable_pass"), passk("c", "flaky")])
    now = results([passk("a", "flaky"), passk("b", "stable_pass"), passk("c", "stable_fail")])
    t = case_transitions(now, base)
    assert t["stable_to_flaky"] == [
        {
            "key": "passk::a",
            "id": "a",
            "tier": "passk",
            "was": "stable_pass",
            "now": "flaky",
            "failed_stage": "generation",
        }
    ]
    assert keys(t["pass_to_fail"]) == ["passk::a"]  # its outcome changed too


def test_new_and_removed_cases() -> None:
    base = results([case("a"), case("gone", "fail")])
    now = results([case("a"), case("z-new"), case("b-new", "fail")])
    t = case_transitions(now, base)
    assert [(r["key"], r["was"], r["now"]) for r in t["new"]] == [
        ("retrieval::b-new", "absent", "fail"),
        ("retrieval::z-new", "absent", "pass"),
    ]
    assert t["removed"] == [
        {
            "key": "retrieval::gone",
            "id": "gone",
            "tier": "retrieval",
            "was": "fail",
            "now": "absent",
            "failed_stage": None,
        }
    ]


def test_a_skipped_case_makes_no_pass_fail_transition() -> None:
    base = results([case("a", tier="judge")], thresholds={})
    now = results([case("a", "skip", tier="judge")], thresholds={})
    t = case_transitions(now, base)
    assert all(rows == [] for rows in t.values())


def test_lists_are_sorted_whatever_the_case_order() -> None:
    ids = ["m", "c", "x", "a"]
    base = {"cases": [case(i).to_dict() for i in ids]}
    now = {"cases": [case(i, "fail").to_dict() for i in reversed(ids)]}
    assert keys(case_transitions(now, base)["pass_to_fail"]) == [
        "retrieval::a",
        "retrieval::c",
        "retrieval::m",
        "retrieval::x",
    ]
