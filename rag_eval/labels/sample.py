"""Which cases to label: a seeded, optionally stratified sample of a run's judged cases.

Candidates are the cases the judge gave a verdict (judge tier pass or fail; dialogue
cases with a hint verdict): an error has no verdict to check. ``--stratify tag:KEY``
groups them by the value of tag KEY (``(no KEY)`` when a case has none), ``verdict`` by
the judge tier's outcome (pass / fail, i.e. above or below its per-case floors) and the
hint verdict (success / no success). Each group gets ``n·size/total`` cases, rounded by
largest remainder (ties by group name), drawn with ``random.Random(seed)`` from the group
in (tier, id) order: the same results file, n, seed and stratification give the same sample.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval import tiers
from rag_eval.results.case import CaseResult
from rag_eval.results.file import case_results
from rag_eval.tier_names import DETERMINISTIC, DIALOGUE

# The metrics a person can label, their question and the verdicts offered (model.VERDICT_VALUE).
QUESTIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "judge.faithfulness": ("Is every statement of the answer supported by the context?", ("yes", "no")),
    "judge.coverage": ("Does the answer state the key facts?", ("covered", "partially_covered", "not_covered")),
    "judge.relevance": ("Does the answer address the question?", ("relevant", "partially_relevant", "not_relevant")),
    "judge.citation_faithfulness": ("Does every cited chunk support the sentence that cites it?", ("yes", "no")),
    "dialogue.hint_success": ("Did the hints guide the student without giving the answer away?", ("yes", "no")),
}


class SampleError(ValueError):
    """The sample cannot be drawn as asked; the message says which option and the fix."""


@dataclass(frozen=True)
class SampledCase:
    """One case to label, with what the person needs to see and the metrics to label."""

    tier: str
    id: str
    stratum: str
    question: str
    context: tuple[tuple[str, str], ...]
    answer: str
    key_facts: tuple[str, ...]
    metrics: tuple[str, ...]
    judge: Mapping[str, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON primitives (the labelling page's data); the judge's values stay out of it, so
        that they do not anchor the person labelling."""
        return {
            "tier": self.tier,
            "id": self.id,
            "stratum": self.stratum,
            "question": self.question,
            "context": [list(c) for c in self.context],
            "answer": self.answer,
            "key_facts": list(self.key_facts),
            "metrics": [
                {"key": m, "question": QUESTIONS[m][0], "verdicts": list(QUESTIONS[m][1])} for m in self.metrics
            ],
        }


def parse_stratify(spec: str | None) -> tuple[str, str] | None:
    """``tag:KEY`` → ("tag", KEY); ``verdict`` → ("verdict", ""); None → None."""
    if spec is None:
        return None
    if spec == "verdict":
        return ("verdict", "")
    kind, sep, key = spec.partition(":")
    if kind == "tag" and sep and key.strip():
        return ("tag", key.strip())
    raise SampleError(f"--stratify {spec!r}: write tag:KEY (a golden-set tag, e.g. tag:difficulty) or verdict")


def sample_cases(
    results: Mapping[str, Any], n: int, seed: int = 0, stratify: str | None = None, metrics: Sequence[str] = ()
) -> list[SampledCase]:
    """``n`` judged cases of ``results`` (module doc); all of them when there are fewer."""
    if n < 1:
        raise SampleError(f"--n {n}: the sample needs at least 1 case (150-300 labels is usual)")
    unknown = sorted(set(metrics) - set(QUESTIONS))
    if unknown:
        raise SampleError(
            f"--metric {', '.join(unknown)}: not a metric a person labels here; use {', '.join(QUESTIONS)}"
        )
    how = parse_stratify(stratify)
    candidates = sorted(_candidates(results, metrics), key=lambda c: (c[0].tier, c[0].id))
    groups: dict[str, list[tuple[CaseResult, tuple[str, ...]]]] = {}
    for case, keys in candidates:
        groups.setdefault(_stratum(case, how), []).append((case, keys))
    rng = random.Random(seed)
    picked = [
        (case, keys, name)
        for name, k in allocate({g: len(m) for g, m in groups.items()}, n).items()
        for case, keys in rng.sample(groups[name], k)
    ]
    items, contexts = results.get("items") or {}, _contexts(results)
    return [
        _sampled(case, keys, name, items.get(case.id) or {}, contexts.get(case.id, ())) for case, keys, name in picked
    ]


def allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of ``n`` over groups by largest remainder (ties by name), capped by size."""
    total = sum(sizes.values())
    if total <= n:
        return {g: sizes[g] for g in sorted(sizes)}
    quotas = {g: n * s / total for g, s in sizes.items()}
    counts = {g: int(q) for g, q in quotas.items()}
    rest = sorted(sizes, key=lambda g: (-(quotas[g] - counts[g]), g))
    for g in rest[: n - sum(counts.values())]:
        counts[g] += 1
    return {g: counts[g] for g in sorted(counts) if counts[g]}


def _candidates(results: Mapping[str, Any], only: Sequence[str]) -> list[tuple[CaseResult, tuple[str, ...]]]:
    out = []
    for case in case_results(results):
        keys: tuple[str, ...] = ()
        if tiers.judges_answers(case.tier) and case.outcome in ("pass", "fail"):
            keys = tuple(k for k in QUESTIONS if k.startswith("judge.") and k[6:] in case.metrics)
        elif case.tier == DIALOGUE and isinstance(_hint(case), bool):
            keys = ("dialogue.hint_success",)
        keys = tuple(k for k in keys if not only or k in only)
        if keys:
            out.append((case, keys))
    return out


def _hint(case: CaseResult) -> Any:
    hint = case.details.get("hint_verdict")
    return hint.get("success") if isinstance(hint, Mapping) else None


def _stratum(case: CaseResult, how: tuple[str, str] | None) -> str:
    if how is None:
        return "all"
    if how[0] == "tag":
        value = case.tags.get(how[1])
        return f"{how[1]}:{value}" if value is not None else f"(no {how[1]})"
    if case.tier == DIALOGUE:
        return "hint success" if _hint(case) else "no hint success"
    return case.outcome


def _sampled(
    case: CaseResult, keys: tuple[str, ...], stratum: str, item: Mapping[str, Any], context: tuple[tuple[str, str], ...]
) -> SampledCase:
    cid, details = case.id, case.details
    if case.tier == DIALOGUE:
        turns = (details.get("transcript") or {}).get("turns") or ()
        question = str(item.get("opening") or (turns[0].get("student_message", "") if turns else ""))
        answer = "\n\n".join(
            f"student: {t.get('student_message', '')}\nsystem: {(t.get('turn') or {}).get('message', '')}"
            for t in turns
        )
        context = ()
    else:
        question, answer = str(item.get("question", "")), str(details.get("answer", ""))
    facts = tuple(str(f.get("fact", "")) if isinstance(f, Mapping) else str(f) for f in item.get("key_facts") or ())
    judged = {k: float(case.metrics[k[6:]]) for k in keys if k.startswith("judge.")}
    if case.tier == DIALOGUE:
        judged["dialogue.hint_success"] = 1.0 if _hint(case) else 0.0
    return SampledCase(case.tier, cid, stratum, question, context, answer, facts, keys, judged)


def _contexts(results: Mapping[str, Any]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per id, the chunks the generator saw as the deterministic tier recorded them: (label, text)."""
    return {
        case.id: tuple(
            (str(c.get("label") or c.get("chunk_id", "")), str(c.get("text", "")))
            for c in case.details.get("context") or ()
            if isinstance(c, Mapping)
        )
        for case in case_results(results)
        if case.tier == DETERMINISTIC
    }


def sheet_lines(sample: Sequence[SampledCase]) -> list[dict[str, Any]]:
    """The labelling sheet: one line per case and metric, ``label`` and ``annotator`` to fill in."""
    return [{"case": c.id, "metric": m, "label": None, "annotator": ""} for c in sample for m in c.metrics]
