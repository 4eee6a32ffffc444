"""The judge tier's metrics a person can label, and what the judge said on one case of it:
``judge.<key>`` for every metric of its verdict, and per unit the claims' verdicts of
faithfulness (claim *i*: yes 1, no 0, unknown kept as its own category) and the key facts'
of coverage (fact *j*: 1 / 0.5 / 0). An errored case has no value: it is an error of every
judged metric."""

from __future__ import annotations

from collections.abc import Mapping

from rag_eval.core.case import CaseResult
from rag_eval.judge.blame import VERDICT_KEY
from rag_eval.judge.schema import FACT_SCORE
from rag_eval.tiers.base import JudgedValues, LabelQuestion

UNKNOWN = "unknown"  # a claim the judge could not decide: a category of its own in unit agreement

QUESTIONS: Mapping[str, LabelQuestion] = {
    "faithfulness": LabelQuestion("Is every statement of the answer supported by the context?", ("yes", "no")),
    "coverage": LabelQuestion("Does the answer state the key facts?", ("covered", "partially_covered", "not_covered")),
    "relevance": LabelQuestion(
        "Does the answer address the question?", ("relevant", "partially_relevant", "not_relevant")
    ),
    "citation_faithfulness": LabelQuestion("Does every cited chunk support the sentence that cites it?", ("yes", "no")),
}


def judged_values(case: CaseResult) -> JudgedValues | None:
    if case.outcome == "error":
        return JudgedValues(failed=True)
    if case.outcome not in ("pass", "fail"):
        return None
    values = {
        key: float(value)
        for key, value in case.metrics.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    units: dict[tuple[str, str, int], float | str] = {}
    verdict = case.details.get(VERDICT_KEY)
    if isinstance(verdict, Mapping):
        for i, claim in enumerate(verdict.get("claims") or (), 1):
            v = claim.get("verdict") if isinstance(claim, Mapping) else None
            units[("faithfulness", "claim", i)] = 1.0 if v == "yes" else 0.0 if v == "no" else UNKNOWN
        for j, fact in enumerate(verdict.get("key_facts") or (), 1):
            # a verdict of another type (a hand-edited file: a list, an object) is no verdict
            if isinstance(fact, Mapping) and isinstance(fact.get("verdict"), str) and fact["verdict"] in FACT_SCORE:
                index = fact.get("index")
                units[("coverage", "fact", index if isinstance(index, int) else j)] = FACT_SCORE[fact["verdict"]]
    return JudgedValues(values, units)
