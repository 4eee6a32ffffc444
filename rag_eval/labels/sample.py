"""Which cases to label: a seeded, optionally stratified sample of a run's judged cases.

Candidates are the cases the judge gave a verdict on a metric a person can label
(``Tier.judged_values`` and ``Tier.label_questions``: judge tier pass or fail; dialogue
cases with a hint verdict): an error has no verdict to check. ``--stratify tag:KEY``
groups them by the value of tag KEY (``(no KEY)`` when a case has none), ``verdict`` by
the tier's own grouping (``Tier.label_stratum``: the judge tier's outcome, pass / fail,
i.e. above or below its per-case floors; the hint verdict, success / no success). Each
group gets ``n·size/total`` cases, rounded by largest remainder (ties by group name),
drawn with ``random.Random(seed)`` from the group in (tier, id) order: the same results
file, n, seed and stratification give the same sample.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.results.file import case_results
from rag_eval.tiers import JudgedValues, LabelQuestion


def questions() -> dict[str, LabelQuestion]:
    """The metrics a person can label (``<tier>.<metric>``), their question and the verdicts
    offered (model.VERDICT_VALUE), from every registered tier in registry order."""
    return {f"{t.name}.{m}": q for t in tiers.all_tiers() for m, q in t.label_questions.items()}


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
        asked = questions()
        return {
            "tier": self.tier,
            "id": self.id,
            "stratum": self.stratum,
            "question": self.question,
            "context": [list(c) for c in self.context],
            "answer": self.answer,
            "key_facts": list(self.key_facts),
            "metrics": [
                {"key": m, "question": asked[m].question, "verdicts": list(asked[m].verdicts)} for m in self.metrics
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
    asked = questions()
    unknown = sorted(set(metrics) - set(asked))
    if unknown:
        raise SampleError(f"--metric {', '.join(unknown)}: not a metric a person labels here; use {', '.join(asked)}")
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
        tier = tiers.of(case.tier)
        judged = tier.judged_values(case)
        if judged is None:
            continue
        keys = tuple(f"{tier.name}.{m}" for m in tier.label_questions if m in judged.values)
        keys = tuple(k for k in keys if not only or k in only)
        if keys:
            out.append((case, keys))
    return out


def _stratum(case: CaseResult, how: tuple[str, str] | None) -> str:
    if how is None:
        return "all"
    if how[0] == "tag":
        value = case.tags.get(how[1])
        return f"{how[1]}:{value}" if value is not None else f"(no {how[1]})"
    return tiers.of(case.tier).label_stratum(case)


def _sampled(
    case: CaseResult, keys: tuple[str, ...], stratum: str, item: Mapping[str, Any], context: tuple[tuple[str, str], ...]
) -> SampledCase:
    tier = tiers.of(case.tier)
    view = tier.label_view(case, item)
    facts = tuple(str(f.get("fact", "")) if isinstance(f, Mapping) else str(f) for f in item.get("key_facts") or ())
    values = (tier.judged_values(case) or JudgedValues()).values
    judged = {k: values[k.split(".", 1)[1]] for k in keys}
    shown = view.context if view.context is not None else context
    return SampledCase(case.tier, case.id, stratum, view.question, shown, view.answer, facts, keys, judged)


def _contexts(results: Mapping[str, Any]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Per id, the chunks the generator saw as a tier recorded them (``Tier.label_context``:
    the deterministic tier's): (label, text)."""
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for case in case_results(results):
        context = tiers.of(case.tier).label_context(case)
        if context is not None:
            out[case.id] = context
    return out


def sheet_lines(sample: Sequence[SampledCase]) -> list[dict[str, Any]]:
    """The labelling sheet: one line per case and metric, ``label`` and ``annotator`` to fill in."""
    return [{"case": c.id, "metric": m, "label": None, "annotator": ""} for c in sample for m in c.metrics]
