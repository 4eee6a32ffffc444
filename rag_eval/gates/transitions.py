"""What changed case by case between two runs: the cases that passed on one and fail on
the other, went flaky, appeared or disappeared, keyed by ``tier::id``.

Pure readers of two results dicts (the shape ``rag_eval.results.file.load_results``
validates), below the results package so the regression gates can use them:
``gates.regression``'s ``no_new_failures`` counts the pass→fail list, and
``results.baseline.compare`` puts every list in the report's baseline block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval.core.case import case_key

FAILING: tuple[str, ...] = ("fail", "error")
TRANSITIONS: tuple[str, ...] = ("pass_to_fail", "fail_to_pass", "stable_to_flaky", "new", "removed")
ABSENT = "absent"  # ``was`` of a new case, ``now`` of a removed one


def case_transitions(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Cases whose outcome changed, by ``tier::id``, each list sorted by key.

    A skipped case (e.g. judge without credentials) neither passes nor fails: it makes
    no pass/fail transition, but it is present (neither new nor removed). New and
    removed cases are counted only within tiers both runs ran: a tier selected out now
    (``-m retrieval``) or run for the first time is a difference of selection, said by
    ``tier_differences``, not hundreds of removed or new cases.
    """
    now, was = _cases_by_key(current), _cases_by_key(baseline)
    both = tiers_of(current) & tiers_of(baseline)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in TRANSITIONS}
    for key in sorted(now.keys() | was.keys()):
        c, b = now.get(key), was.get(key)
        if b is None:
            assert c is not None  # every key comes from now or was
            if c["tier"] in both:
                out["new"].append(_transition(key, c, ABSENT, c["outcome"]))
            continue
        if c is None:
            if b["tier"] in both:
                out["removed"].append(_transition(key, b, b["outcome"], ABSENT, stage=False))
            continue
        if b["outcome"] == "pass" and c["outcome"] in FAILING:
            out["pass_to_fail"].append(_transition(key, c, "pass", c["outcome"]))
        elif b["outcome"] in FAILING and c["outcome"] == "pass":
            out["fail_to_pass"].append(_transition(key, c, b["outcome"], "pass"))
        b_class, c_class = _passk_class(b), _passk_class(c)
        if b_class == "stable_pass" and c_class == "flaky":
            out["stable_to_flaky"].append(_transition(key, c, b_class, c_class))
    return out


def tiers_of(results: Mapping[str, Any]) -> set[str]:
    return {str(c["tier"]) for c in results["cases"]}


def _cases_by_key(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {case_key(c): c for c in results["cases"]}


def _passk_class(case: Mapping[str, Any]) -> str | None:
    return case["details"].get("class")


def _transition(key: str, case: Mapping[str, Any], was: str, now: str, stage: bool = True) -> dict[str, Any]:
    """``failed_stage`` is where the case fails now; a removed case has none."""
    return {
        "key": key,
        "id": case["id"],
        "tier": case["tier"],
        "was": was,
        "now": now,
        "failed_stage": case.get("failed_stage") if stage else None,
    }
