"""The claim-level part of the native verdict: its schema fields, their checks, the four checks.

Each answer claim carries, besides today's ``verdict`` (supported by the context?),
``chunks`` -- the ``[n]`` of every context chunk that entails it -- and ``reference``
-- whether the reference (key facts / reference answer) entails it, ``yes`` / ``no`` /
``unknown``. Each key fact carries ``context`` (does any chunk entail it?) and
``chunks`` (which). :func:`checks_from` turns a validated verdict into the four
entailment checks of :class:`rag_eval.metrics.claims.ClaimChecks`:

* ``a_i`` = claim ``reference``: yes → entailed, no → not, unknown → unknown; unknown
  for every claim when the case has neither key facts nor a reference answer.
* ``g_j`` = the key fact's coverage: ``covered`` → entailed, ``partially_covered`` and
  ``not_covered`` → not (RAGChecker's checker says Neutral to a partial statement).
* ``R_ic`` / ``G_jc`` from the ``chunks`` list and the yes/no/unknown it goes with: yes
  with chunks → entailed by exactly those; no with no chunk → by none; anything else
  (unknown, yes without a chunk, no with chunks) → unknown for every chunk, and a
  contradiction is counted as ``inconsistent``. These rules keep every reply a grammar
  can produce valid (no cross-field constraint a grammar cannot express) while never
  reading an undecided check as "not entailed".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval.metrics.claims import ClaimChecks, Tri

if TYPE_CHECKING:
    from rag_eval.judge.registry import Judgement

TRI_VERDICTS: tuple[str, ...] = ("yes", "no", "unknown")
_TRI: Mapping[str, Tri] = {"yes": True, "no": False, "unknown": None}


def chunk_list(n_chunks: int | None) -> dict[str, Any]:
    """Schema of a ``chunks`` list: markers ``1..n`` of the context, at most ``n`` of them."""
    marker: dict[str, Any] = {"type": "integer"}
    out: dict[str, Any] = {"type": "array", "items": marker}
    if n_chunks is not None:
        if n_chunks:
            marker["enum"] = list(range(1, n_chunks + 1))
        out["maxItems"] = n_chunks
    return out


def claim_fields(n_chunks: int | None) -> dict[str, Any]:
    """The properties an answer claim gets (after ``verdict``, before ``reason``)."""
    return {"chunks": chunk_list(n_chunks), "reference": {"type": "string", "enum": list(TRI_VERDICTS)}}


def fact_fields(n_chunks: int | None) -> dict[str, Any]:
    """The properties a key fact gets (after ``verdict``, before ``reason``)."""
    return {"context": {"type": "string", "enum": list(TRI_VERDICTS)}, "chunks": chunk_list(n_chunks)}


def _tri(obj: Mapping[str, Any], key: str, where: str, errors: list[str]) -> str:
    value = obj.get(key)
    v = value.strip().lower() if isinstance(value, str) else ""
    if v not in TRI_VERDICTS:
        errors.append(f"{where}.{key} is {value!r}; allowed: {', '.join(TRI_VERDICTS)}")
    return v


def _chunks(obj: Mapping[str, Any], where: str, n_context: int, errors: list[str]) -> list[int]:
    """The distinct chunk numbers, in order; ``"[3]"`` and ``"3"`` read as 3."""
    value = obj.get("chunks")
    if not isinstance(value, list):
        errors.append(f"{where}.chunks must be a list of context chunk numbers (1..{n_context}), [] for none")
        return []
    out: list[int] = []
    for m in value:
        if isinstance(m, str) and (digits := re.sub(r"[\s\[\]]", "", m)).isdigit():
            m = int(digits)
        if not (isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= n_context):
            errors.append(f"{where}.chunks has {m!r}, which names none of the {n_context} context chunks")
            continue
        if m not in out:
            out.append(m)
    return out


def claim_diagnosis(obj: Mapping[str, Any], where: str, n_context: int, errors: list[str]) -> dict[str, Any]:
    """The validated ``chunks`` and ``reference`` of one answer claim."""
    return {"chunks": _chunks(obj, where, n_context, errors), "reference": _tri(obj, "reference", where, errors)}


def fact_diagnosis(obj: Mapping[str, Any], where: str, n_context: int, errors: list[str]) -> dict[str, Any]:
    """The validated ``context`` and ``chunks`` of one key fact."""
    return {"context": _tri(obj, "context", where, errors), "chunks": _chunks(obj, where, n_context, errors)}


def chunk_row(verdict: str, chunks: Sequence[int], n_chunks: int) -> tuple[tuple[Tri, ...], bool]:
    """One row of ``R`` or ``G`` and whether the yes/no contradicts the chunk list (module doc)."""
    if verdict == "yes" and chunks:
        return tuple(k in chunks for k in range(1, n_chunks + 1)), False
    if verdict == "no" and not chunks:
        return (False,) * n_chunks, False
    return (None,) * n_chunks, verdict != "unknown"


def checks_of(
    claims: Sequence[Mapping[str, Any]], key_facts: Sequence[Mapping[str, Any]], n_context: int, has_reference: bool
) -> tuple[ClaimChecks, int]:
    """The four checks from validated claim and key-fact entries, and how many were inconsistent."""
    answer_rows, fact_rows, inconsistent = [], [], 0
    for c in claims:
        row, bad = chunk_row(c["verdict"], c["chunks"], n_context)
        answer_rows.append(row)
        inconsistent += bad
    for k in key_facts:
        row, bad = chunk_row(k["context"], k["chunks"], n_context)
        fact_rows.append(row)
        inconsistent += bad
    checks = ClaimChecks(
        answer_in_reference=tuple(_TRI[c["reference"]] if has_reference else None for c in claims),
        reference_in_answer=tuple(k["verdict"] == "covered" for k in key_facts),
        answer_in_chunks=tuple(answer_rows),
        reference_in_chunks=tuple(fact_rows),
        n_chunks=n_context,
    )
    return checks, inconsistent


def checks_from(j: Judgement) -> tuple[ClaimChecks, int]:
    """The four checks of a validated verdict (a reference side exists with key facts or a reference)."""
    return checks_of(j.claims, j.key_facts, j.n_context, bool(j.key_facts) or j.correctness is not None)


def checks_from_details(details: Mapping[str, Any]) -> ClaimChecks | None:
    """The four checks from a verdict's ``details`` (what a case result keeps); None for a
    verdict without the claim-level fields (another engine, an older results file)."""
    diagnosis = details.get("diagnosis")
    if not isinstance(diagnosis, Mapping) or not isinstance(diagnosis.get("context_chunks"), int):
        return None
    facts = details.get("key_facts", [])
    has_reference = bool(facts) or "correctness" in details
    return checks_of(details.get("claims", []), facts, diagnosis["context_chunks"], has_reference)[0]
