"""The retrieval tier's warnings about gold the run could not have found: ids the system's
lookup does not hold (``details.not_indexed``), and, where it cannot look ids up, gold ids
no stage of any case returned (``details.gold_seen``). Read from the retrieval cases' own
details, by this tier only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_eval.core.case import CaseResult


def gold_warnings(cases: Sequence[CaseResult], shown: int = 10) -> list[str]:
    """Gold the run could not have found: ids the system's lookup does not hold
    (``details.not_indexed``), and, where it cannot look ids up, gold ids that no stage of
    any case returned (``details.gold_seen`` recorded). An id some case returned is never named."""
    out: list[str] = []
    missing: dict[str, list[str]] = {}
    for c in cases:
        for gid in c.details.get("not_indexed") or ():
            missing.setdefault(str(gid), []).append(c.id)
    if missing:
        out.append(
            f"{len(missing)} gold id(s) not indexed by the system (its lookup does not hold them; those cases fail "
            f"at 'not indexed'): {_named(missing, shown)}; fix the ids in the golden set or index the documents"
        )
    recorded = [c for c in cases if c.details.get("gold_seen") is not None]
    if recorded:
        seen = {str(g) for c in recorded for g in c.details["gold_seen"]}
        unseen: dict[str, list[str]] = {}
        for c in recorded:
            gold = (c.details.get("gold") or {}).get("chunks") or ()
            for gid in sorted({g for group in gold for g in group if not str(g).startswith("?")} - seen):
                unseen.setdefault(str(gid), []).append(c.id)
        if unseen:
            out.append(
                f"{len(unseen)} gold chunk id(s) that no stage of any case returned, and the system cannot look ids "
                f"up: {_named(unseen, shown)}; check for typos"
            )
    return out


def _named(ids: Mapping[str, Sequence[str]], shown: int) -> str:
    """'a#0 (case q1), b#1 (cases q2, q3), … and 4 more'."""
    parts = []
    for gid, where in sorted(ids.items())[:shown]:
        cases = sorted(set(where))
        parts.append(
            f"{gid} ({'case' if len(cases) == 1 else 'cases'} {', '.join(cases[:3])}{', …' if len(cases) > 3 else ''})"
        )
    more = len(ids) - shown
    return ", ".join(parts) + (f", … and {more} more" if more > 0 else "")
