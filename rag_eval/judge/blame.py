"""Whose fault a failing judge case is: one line per finding, in pipeline (chain) order.

Pure functions over two things a judge case already has: the verdict's claim-level
checks (``diagnosis.py``) and, per key fact, the trail of its evidence through the
retrieval trace (:func:`fact_trails`). The findings, in chain order:

1. ``retriever: key fact 2 is in no retrieved chunk`` -- no chunk of the context
   entails it and its evidence is in no stage of the trace (or, without a traceable
   source, ``... is in no chunk of the context``);
   ``retriever: key fact 2 was in dense rank 7 but not in fused`` -- a stage dropped it;
2. ``context: key fact 2 was in fused rank 4 but cut before the context`` -- the final
   list had it, the context the generator saw did not;
3. ``generator: key fact 1 is in chunk [3] but not in the answer``;
4. ``noise: claim "…" is wrong and rests on chunk [5] (irrelevant)`` (or ``(relevant)``);
5. ``hallucination: claim "…" is in no chunk and not in the reference``;
6. ``unknown: 1 claim and 0 key facts could not be decided`` -- counted, never blamed.

A key fact counts as stated only when ``covered``. A case is the retriever's when it
has a ``retriever`` or ``context`` finding, the generator's when it has a
``generator``, ``noise`` or ``hallucination`` one (:func:`side_of`); :func:`shares`
gives the run's split of failing cases, and :func:`run_block` the results file's
``run.judge_blame`` (the split, the second calls, the undecided checks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.core.records import Chunk, Trace
from rag_eval.golden.model import KeyFact
from rag_eval.judge.diagnosis import checks_from_details
from rag_eval.metrics.claims import ClaimChecks, chunk_relevance, tri_all, tri_not

KINDS: tuple[str, ...] = ("retriever", "context", "generator", "noise", "hallucination", "unknown")
RETRIEVER_SIDE = frozenset({"retriever", "context"})
GENERATOR_SIDE = frozenset({"generator", "noise", "hallucination"})
SIDES: tuple[str, ...] = ("retriever", "generator", "both", "unexplained")  # the keys of a split's counts
MAX_CLAIM_CHARS = 80  # a claim quoted in a blame line is cut to this many characters


@dataclass(frozen=True)
class FactTrail:
    """Where one key fact's evidence went: ``(stage, best rank or None)`` per trace stage,
    in the trace's order, and whether it is among the chunks the generator saw.
    ``stages`` is empty when the fact's source names no chunk (not traceable)."""

    stages: tuple[tuple[str, int | None], ...]
    in_context: bool | None


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KINDS
    line: str


def _evidence_matches(chunk: Chunk, fact: KeyFact) -> bool | None:
    src = fact.source
    if src is None:
        return None
    if src.chunk_id:
        return chunk.chunk_id == src.chunk_id
    if src.doc_id and chunk.doc_id != src.doc_id:
        return False
    return src.quote in chunk.text if src.quote else bool(src.doc_id)


def fact_trails(key_facts: Sequence[KeyFact], trace: Trace, context: Sequence[Chunk]) -> tuple[FactTrail, ...]:
    """One :class:`FactTrail` per key fact, from the golden item, the trace and the context used."""
    out = []
    for fact in key_facts:
        matches = [_evidence_matches(c, fact) for c in context]
        in_context = None if fact.source is None else any(m for m in matches)
        stages: tuple[tuple[str, int | None], ...] = ()
        if fact.source is not None and fact.source.chunk_id:
            cid = fact.source.chunk_id
            stages = tuple(
                (s.name, min((h.rank for h in s.hits if h.chunk_id == cid), default=None)) for s in trace.stages
            )
        out.append(FactTrail(stages, in_context))
    return tuple(out)


def _quote(claim: str) -> str:
    text = " ".join(claim.split())
    return '"' + (text if len(text) <= MAX_CLAIM_CHARS else text[: MAX_CLAIM_CHARS - 1] + "…") + '"'


def _chunks(marks: Sequence[int]) -> str:
    return ", ".join(f"[{m}]" for m in marks)


def _lost(j: int, trail: FactTrail | None) -> Finding:
    """Why key fact ``j`` (1-based), which no context chunk entails, never reached the context."""
    seen = [(name, rank) for name, rank in (trail.stages if trail else ()) if rank is not None]
    if trail is None or not trail.stages or trail.in_context:  # untraceable, or the judge overrules the source
        return Finding("retriever", f"retriever: key fact {j} is in no chunk of the context")
    if not seen:
        return Finding("retriever", f"retriever: key fact {j} is in no retrieved chunk")
    names = [name for name, _ in trail.stages]
    last, rank = seen[-1]
    after = names.index(last) + 1
    if after < len(names):
        return Finding("retriever", f"retriever: key fact {j} was in {last} rank {rank} but not in {names[after]}")
    return Finding("context", f"context: key fact {j} was in {last} rank {rank} but cut before the context")


def _fact_findings(checks: ClaimChecks, trails: Sequence[FactTrail]) -> list[Finding]:
    found: list[Finding] = []
    for j, (stated, row) in enumerate(zip(checks.reference_in_answer, checks.reference_in_chunks), 1):
        if stated is not False:
            continue
        marks = [k for k, v in enumerate(row, 1) if v]
        if marks:
            line = f"generator: key fact {j} is in chunk {_chunks(marks)} but not in the answer"
            found.append(Finding("generator", line))
        elif all(v is False for v in row):
            found.append(_lost(j, trails[j - 1] if j <= len(trails) else None))
    return found


def _claim_findings(checks: ClaimChecks, claims: Sequence[Mapping[str, Any]]) -> list[Finding]:
    rel = chunk_relevance(checks)
    found: list[Finding] = []
    for c, correct, row in zip(claims, checks.answer_in_reference, checks.answer_in_chunks):
        if correct is not False:
            continue
        text = _quote(str(c.get("claim", "")))
        on_rel = [k for k, v in enumerate(row, 1) if tri_all(v, rel[k - 1])]
        on_irr = [k for k, v in enumerate(row, 1) if tri_all(v, tri_not(rel[k - 1]))]
        if on_rel or on_irr:
            which = "relevant" if on_rel else "irrelevant"
            line = f"noise: claim {text} is wrong and rests on chunk {_chunks(on_rel or on_irr)} ({which})"
            found.append(Finding("noise", line))
        elif all(v is False for v in row):
            line = f"hallucination: claim {text} is in no chunk and not in the reference"
            found.append(Finding("hallucination", line))
    return found


def _unknown(checks: ClaimChecks) -> list[Finding]:
    claims = sum(1 for a, row in zip(checks.answer_in_reference, checks.answer_in_chunks) if a is None or None in row)
    facts = sum(1 for row in checks.reference_in_chunks if None in row)
    if not claims and not facts:
        return []
    return [
        Finding(
            "unknown",
            f"unknown: {claims} claim{'s' * (claims != 1)} and {facts} key "
            f"fact{'s' * (facts != 1)} could not be decided",
        )
    ]


def findings(verdict: Mapping[str, Any], trails: Sequence[FactTrail] = ()) -> tuple[Finding, ...]:
    """The blame of one case, in chain order; empty for a verdict without claim-level fields.

    ``verdict`` is the native judge's details (its ``judge`` details key, already
    redacted); ``trails`` the :func:`fact_trails` of its key facts (empty: not known).
    """
    checks = checks_from_details(verdict)
    if checks is None:
        return ()
    found = _fact_findings(checks, trails) + _claim_findings(checks, verdict.get("claims", [])) + _unknown(checks)
    return tuple(sorted(found, key=lambda f: KINDS.index(f.kind)))  # stable: index order inside a kind


def side_of(found: Sequence[Finding]) -> str | None:
    """``retriever``, ``generator``, ``both``, or None when nothing is blamed."""
    kinds = {f.kind for f in found}
    retriever, generator = bool(kinds & RETRIEVER_SIDE), bool(kinds & GENERATOR_SIDE)
    if retriever and generator:
        return "both"
    return "retriever" if retriever else "generator" if generator else None


def shares(failing: Sequence[Sequence[Finding]]) -> dict[str, Any]:
    """The run's failing judge cases split by side: counts and shares of ``failing``.

    ``unexplained`` counts failing cases with no retriever- or generator-side finding.
    Shares are absent (not 0) when there is no failing case.
    """
    return split_of([side_of(f) for f in failing])


def split_of(sides: Sequence[str | None]) -> dict[str, Any]:
    """``failing``, ``counts`` and ``shares`` (absent when empty) of failing cases' sides."""
    counts = {k: sides.count(None if k == "unexplained" else k) for k in SIDES}
    out: dict[str, Any] = {"failing": len(sides), "counts": counts}
    if sides:
        out["shares"] = {k: v / len(sides) for k, v in counts.items()}
    return out


RUN_KEY = "judge_blame"  # the block under the results file's ``run``
VERDICT_KEY = "judge"  # a judge case's verdict in its details (``JudgeDetails.judge``)


def run_block(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """``{"judge_blame": {...}}`` for a run with claim-level judge verdicts, else ``{}``.

    Over the judge cases given (the judge tier passes its own) that the native judge
    diagnosed (``details.blame_side`` present):
    ``diagnosed``; ``failing``, ``counts`` and ``shares`` (absent without a failing case)
    of the failing ones by side, as :func:`shares`; ``second_calls``: cases whose claims
    needed a second call; ``unknown_claims`` / ``unknown_facts``: undecided checks summed.
    """
    judged = [c for c in cases if "blame_side" in c.details]
    if not judged:
        return {}
    sides = [c.details.get("blame_side") for c in judged if c.outcome == "fail"]
    block: dict[str, Any] = {"diagnosed": len(judged), **split_of(sides)}
    verdicts = [c.details.get(VERDICT_KEY) or {} for c in judged]
    block["second_calls"] = sum(1 for v in verdicts if "claims_second_call" in v)
    for key in ("unknown_claims", "unknown_facts"):
        block[key] = sum(int((v.get("diagnosis") or {}).get(key, 0)) for v in verdicts)
    return {RUN_KEY: block}


def _pct(n: int, of: int) -> str:
    return f"{n} ({n / of:.0%})" if of else str(n)


def summary_line(block: Any) -> str:
    """The run's ``judge_blame`` block in one line (terminal, report, summary); "" without one.

    ``judge blame: 4 failing of 6 diagnosed — retriever 1 (25%), generator 2 (50%),
    both 0 (0%), unexplained 1 (25%); 1 second call for claims; 1 claim and 0 key facts undecided``
    """
    if not isinstance(block, Mapping) or not isinstance(block.get("counts"), Mapping):
        return ""
    failing, counts = int(block.get("failing", 0)), block["counts"]
    line = f"judge blame: {failing} failing of {int(block.get('diagnosed', 0))} diagnosed"
    if failing:
        line += " — " + ", ".join(f"{k} {_pct(int(counts.get(k, 0)), failing)}" for k in SIDES)
    second, claims, facts = (int(block.get(k, 0)) for k in ("second_calls", "unknown_claims", "unknown_facts"))
    line += f"; {second} second call{'s' * (second != 1)} for claims"
    if claims or facts:
        line += f"; {claims} claim{'s' * (claims != 1)} and {facts} key fact{'s' * (facts != 1)} undecided"
    return line
