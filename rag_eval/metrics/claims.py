"""Claim-level diagnosis: whose fault a bad answer is (RAGChecker's definitions).

Four entailment checks per case (METRICS.md of the project's steering docs, "Claim level"), each entry ``True``
(entailed), ``False`` (not entailed: neutral or contradicted) or ``None`` (the judge
could not decide: ``unknown``, never folded into ``False``):

* ``a_i`` -- answer claim ``i`` is entailed by the reference (key facts / reference answer);
* ``g_j`` -- reference claim ``j`` (key fact ``j``) is entailed by the answer;
* ``G_jc`` -- reference claim ``j`` is entailed by context chunk ``c``;
* ``R_ic`` -- answer claim ``i`` is entailed by context chunk ``c``.

A chunk is relevant when it entails at least one reference claim: ``rel_c = max_j G_jc``.
Unknowns follow Kleene's three-valued logic (``max`` is "any", ``∧`` is "and"): a
``True`` decides an ``any`` and a ``False`` decides an ``and`` whatever the unknowns;
otherwise an unknown makes the term unknown, and an item whose term is unknown is left
out of that metric's denominator (and counted by :func:`unknown_counts`). Without
unknowns every formula is exactly RAGChecker's ``ragchecker/computation.py``.

Per case, then the mean over the cases that have the metric. An empty denominator
makes the metric absent (``None``), never 0 -- where RAGChecker writes 0 for an empty
claim list, this module omits the key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

Tri = bool | None  # entailed / not entailed / unknown

# The metric keys (reported under ``judge.``) and whether lower is better.
LOWER_IS_BETTER: Mapping[str, bool] = {
    "answer_precision": False,
    "answer_recall": False,
    "answer_f1": False,
    "claim_recall": False,
    "context_precision": False,
    "context_utilization": False,
    "noise_sensitivity_relevant": True,
    "noise_sensitivity_irrelevant": True,
    "hallucination": True,
    "self_knowledge": False,
    "context_faithfulness": False,
}
KEYS: tuple[str, ...] = tuple(LOWER_IS_BETTER)
OVERALL: tuple[str, ...] = KEYS[:3]
RETRIEVER: tuple[str, ...] = KEYS[3:5]
GENERATOR: tuple[str, ...] = KEYS[5:]
# RAGChecker's name of each metric (its README table, checking_outputs.json).
RAGCHECKER_NAMES: Mapping[str, str] = {
    "answer_precision": "precision",
    "answer_recall": "recall",
    "answer_f1": "f1",
    "claim_recall": "claim_recall",
    "context_precision": "context_precision",
    "context_utilization": "context_utilization",
    "noise_sensitivity_relevant": "noise_sensitivity_in_relevant",
    "noise_sensitivity_irrelevant": "noise_sensitivity_in_irrelevant",
    "hallucination": "hallucination",
    "self_knowledge": "self_knowledge",
    "context_faithfulness": "faithfulness",
}


@dataclass(frozen=True)
class ClaimChecks:
    """The four checks of one case; rows are claims, columns the ``n_chunks`` chunks.

    RAGChecker's names: ``answer_in_reference`` = answer2response,
    ``reference_in_answer`` = response2answer, ``answer_in_chunks`` =
    retrieved2response, ``reference_in_chunks`` = retrieved2answer.
    """

    answer_in_reference: tuple[Tri, ...]  # a_i
    reference_in_answer: tuple[Tri, ...]  # g_j
    answer_in_chunks: tuple[tuple[Tri, ...], ...]  # R_ic
    reference_in_chunks: tuple[tuple[Tri, ...], ...]  # G_jc
    n_chunks: int

    def __post_init__(self) -> None:
        if len(self.answer_in_chunks) != len(self.answer_in_reference):
            raise ValueError("answer_in_chunks needs one row per answer claim")
        if len(self.reference_in_chunks) != len(self.reference_in_answer):
            raise ValueError("reference_in_chunks needs one row per reference claim")
        if any(len(row) != self.n_chunks for row in (*self.answer_in_chunks, *self.reference_in_chunks)):
            raise ValueError(f"every chunk row needs {self.n_chunks} entries (one per chunk)")


# --- three-valued logic ------------------------------------------------------------------
def tri_any(values: Iterable[Tri]) -> Tri:
    """Kleene OR (RAGChecker's ``max``): True if any is True, else unknown if any is, else False."""
    unknown = False
    for v in values:
        if v is True:
            return True
        unknown = unknown or v is None
    return None if unknown else False


def tri_all(*values: Tri) -> Tri:
    """Kleene AND: False if any is False, else unknown if any is, else True."""
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def tri_not(value: Tri) -> Tri:
    return None if value is None else not value


def share(values: Iterable[Tri]) -> float | None:
    """Mean of the decided values (True = 1); None when none is decided."""
    decided = [v for v in values if v is not None]
    return sum(decided) / len(decided) if decided else None


# --- shared intermediate terms ---------------------------------------------------------------
def chunk_relevance(c: ClaimChecks) -> tuple[Tri, ...]:
    """``rel_c = max_j G_jc``; unknown for every chunk when there is no reference claim."""
    if not c.reference_in_answer:
        return (None,) * c.n_chunks
    return tuple(tri_any(row[k] for row in c.reference_in_chunks) for k in range(c.n_chunks))


def recalled(c: ClaimChecks) -> tuple[Tri, ...]:
    """``max_c G_jc`` per reference claim: the claim is in some chunk."""
    return tuple(tri_any(row) for row in c.reference_in_chunks)


def grounded(c: ClaimChecks) -> tuple[Tri, ...]:
    """``max_c R_ic`` per answer claim: the claim rests on some chunk."""
    return tuple(tri_any(row) for row in c.answer_in_chunks)


def on_relevant(c: ClaimChecks, rel: Sequence[Tri]) -> tuple[Tri, ...]:
    """``max_c (R_ic ∧ rel_c)`` per answer claim."""
    return tuple(tri_any(tri_all(r, rel[k]) for k, r in enumerate(row)) for row in c.answer_in_chunks)


def on_irrelevant_only(c: ClaimChecks, rel: Sequence[Tri]) -> tuple[Tri, ...]:
    """``max_c (R_ic ∧ ¬rel_c) ∧ ¬max_c (R_ic ∧ rel_c)``: the two noise terms stay exclusive."""
    relevant = on_relevant(c, rel)
    return tuple(
        tri_all(tri_any(tri_all(r, tri_not(rel[k])) for k, r in enumerate(row)), tri_not(relevant[i]))
        for i, row in enumerate(c.answer_in_chunks)
    )


# --- the metrics ---------------------------------------------------------------------------
def answer_precision(c: ClaimChecks) -> float | None:
    """precision = mean_i a_i (answer claims the reference entails)."""
    return share(c.answer_in_reference)


def answer_recall(c: ClaimChecks) -> float | None:
    """recall = mean_j g_j (reference claims the answer entails)."""
    return share(c.reference_in_answer)


def f1(precision: float | None, recall: float | None) -> float | None:
    """F1 = 2PR / (P + R); 0 when P = R = 0 (as RAGChecker); None when either is absent."""
    if precision is None or recall is None:
        return None
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def claim_recall(c: ClaimChecks) -> float | None:
    """claim recall = mean_j max_c G_jc (reference claims some chunk entails)."""
    return share(recalled(c))


def context_precision(c: ClaimChecks) -> float | None:
    """context precision = mean_c rel_c (chunks entailing at least one reference claim)."""
    return share(chunk_relevance(c))


def context_utilization(c: ClaimChecks) -> float | None:
    """context utilization = Σ_j [max_c G_jc ∧ g_j] / Σ_j max_c G_jc: of the reference
    claims that reached the context, the share the answer states; None when none did.
    A reference claim whose ``max_c G_jc`` is unknown is in neither sum."""
    return share(g for r, g in zip(recalled(c), c.reference_in_answer) if r is True)


def noise_sensitivity_relevant(c: ClaimChecks) -> float | None:
    """NS(relevant) = mean_i [max_c (R_ic ∧ rel_c) ∧ ¬a_i]: wrong claims resting on a relevant chunk."""
    rel = on_relevant(c, chunk_relevance(c))
    return share(tri_all(r, tri_not(a)) for r, a in zip(rel, c.answer_in_reference))


def noise_sensitivity_irrelevant(c: ClaimChecks) -> float | None:
    """NS(irrelevant) = mean_i [max_c (R_ic ∧ ¬rel_c) ∧ ¬max_c (R_ic ∧ rel_c) ∧ ¬a_i]:
    wrong claims resting only on irrelevant chunks (exclusive with NS(relevant))."""
    irr = on_irrelevant_only(c, chunk_relevance(c))
    return share(tri_all(r, tri_not(a)) for r, a in zip(irr, c.answer_in_reference))


def hallucination(c: ClaimChecks) -> float | None:
    """hallucination = mean_i [¬max_c R_ic ∧ ¬a_i]: wrong claims in no chunk."""
    return share(tri_all(tri_not(g), tri_not(a)) for g, a in zip(grounded(c), c.answer_in_reference))


def self_knowledge(c: ClaimChecks) -> float | None:
    """self-knowledge = mean_i [¬max_c R_ic ∧ a_i]: correct claims in no chunk."""
    return share(tri_all(tri_not(g), a) for g, a in zip(grounded(c), c.answer_in_reference))


def context_faithfulness(c: ClaimChecks) -> float | None:
    """faithfulness = mean_i max_c R_ic: answer claims some chunk entails."""
    return share(grounded(c))


# The metrics that read a_i, and those that need reference claims (key facts) at all.
_READ_A = frozenset(
    {
        "answer_precision",
        "answer_f1",
        "noise_sensitivity_relevant",
        "noise_sensitivity_irrelevant",
        "hallucination",
        "self_knowledge",
    }
)
_READ_REFERENCE = frozenset(
    {
        "answer_recall",
        "answer_f1",
        "claim_recall",
        "context_precision",
        "context_utilization",
        "noise_sensitivity_relevant",
        "noise_sensitivity_irrelevant",
    }
)


def case_metrics(c: ClaimChecks) -> dict[str, float]:
    """Every metric of one case; a metric without a denominator is left out.

    Kleene logic can decide a term without ``a_i`` (a claim in no chunk is no noise,
    right or wrong), so a case with no reference to check claims against would still
    get an NS or a hallucination rate over a biased few claims: when no ``a_i`` is
    decided, the metrics reading ``a_i`` are absent, and without reference claims
    the ones reading ``g`` / ``G`` / ``rel`` are.
    """
    p, r = answer_precision(c), answer_recall(c)
    values: dict[str, float | None] = {
        "answer_precision": p,
        "answer_recall": r,
        "answer_f1": f1(p, r),
        "claim_recall": claim_recall(c),
        "context_precision": context_precision(c),
        "context_utilization": context_utilization(c),
        "noise_sensitivity_relevant": noise_sensitivity_relevant(c),
        "noise_sensitivity_irrelevant": noise_sensitivity_irrelevant(c),
        "hallucination": hallucination(c),
        "self_knowledge": self_knowledge(c),
        "context_faithfulness": context_faithfulness(c),
    }
    dropped = (_READ_A if all(a is None for a in c.answer_in_reference) else frozenset()) | (
        _READ_REFERENCE if not c.reference_in_answer else frozenset()
    )
    return {k: v for k, v in values.items() if v is not None and k not in dropped}


def pooled(cases: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean over cases of each metric, over the cases that have it (RAGChecker's pooling)."""
    out: dict[str, float] = {}
    for key in KEYS:
        values = [m[key] for m in cases if key in m]
        if values:
            out[key] = sum(values) / len(values)
    return out


def unknown_counts(c: ClaimChecks) -> dict[str, int]:
    """How many answer claims and reference claims carry at least one undecided check."""
    claims = sum(1 for a, row in zip(c.answer_in_reference, c.answer_in_chunks) if a is None or None in row)
    facts = sum(1 for g, row in zip(c.reference_in_answer, c.reference_in_chunks) if g is None or None in row)
    return {"unknown_claims": claims, "unknown_facts": facts}
