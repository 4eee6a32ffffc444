"""What the native judge must answer, how a reply is read, checked and scored: the
verdict assembled from the registered fields and metrics (``rag_eval.judge.registry``;
the built-in ones: ``rag_eval.judge.fields``).

Kept apart from the HTTP side (``native.py``) so each can be tested with plain data:

* :func:`response_schema` -- the strict JSON schema sent as ``response_format`` and
  quoted in the prompt: each field's schema, in the verdict's key order.
* :func:`parse_reply` (from ``parse.py``, re-exported) -- a tolerant reader for servers
  without structured output: ```json fences, prose around the object, trailing commas.
* :func:`validate` -- turns the parsed object into a :class:`Judgement` or a list of
  errors precise enough to paste into a repair prompt ("key_facts: fact 2 is not
  judged"), each field checking its own value.
* :func:`metrics_from` -- every registered metric of a judgement; a metric without a
  denominator is left out rather than reported as 0 or 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_eval.citations import cited_numbers
from rag_eval.judge.fields import (  # re-exported: the built-in verdicts and metric formulas
    CLAIM_VERDICTS,
    FACT_SCORE,
    FACT_VERDICTS,
    MAX_GRAMMAR_ITEMS,
    RELEVANCE_SCORE,
    RELEVANCE_VERDICTS,
    citation_faithfulness,
    coverage,
    factual_f1,
    faithfulness,
    relevance,
    unknown_share,
    validate_claims,
)
from rag_eval.judge.parse import parse_reply as parse_reply  # re-exported: the reader of a verdict
from rag_eval.judge.registry import Expected, Judgement, Shape, fields, metrics, obj

__all__ = [
    "CLAIM_VERDICTS",
    "FACT_SCORE",
    "FACT_VERDICTS",
    "Judgement",
    "MAX_GRAMMAR_ITEMS",
    "RELEVANCE_SCORE",
    "RELEVANCE_VERDICTS",
    "answer_markers",
    "citation_faithfulness",
    "coverage",
    "factual_f1",
    "faithfulness",
    "grammar_schema",
    "metrics_from",
    "parse_reply",
    "relevance",
    "response_schema",
    "unknown_share",
    "validate",
    "validate_claims",
]  # importing fields registers the built-in ones


def answer_markers(answer: str) -> list[int]:
    """Distinct citation numbers in ``answer``, in order of first appearance.

    The one citation parser of the evaluation (``rag_eval.citations.cited_numbers``):
    brackets inside ``$…$`` maths and intervals such as ``[0,2]`` are not citations, so a
    maths answer's intervals are never sent to the judge as markers to verify.
    """
    return cited_numbers(answer)


def response_schema(
    has_reference: bool, n_facts: int | None = None, markers: Sequence[int] | None = None, n_chunks: int | None = None
) -> dict[str, Any]:
    """The JSON schema of one verdict; a ``with_reference`` field (``correctness``) exists
    only when a reference does.

    Exact where the counts are known, so that a grammar-constrained server (llama.cpp,
    vLLM guided decoding) produces a valid verdict by construction: with ``n_facts``,
    ``key_facts`` has exactly that many entries and ``index`` is one of ``1..n``; with
    ``markers`` (the distinct ``[n]`` of the answer), ``citations`` has at least one
    entry per marker and ``marker`` is one of them (no markers: no entry). With
    ``n_chunks`` (the context's size), every ``chunks`` list holds markers ``1..n_chunks``
    only (``diagnosis.py``: the claim-level checks).
    """
    shape = Shape(has_reference, n_facts, markers, n_chunks)
    return obj({f.name: f.schema(shape) for f in fields(has_reference)})


def grammar_schema(
    has_reference: bool, n_facts: int, markers: Sequence[int], n_chunks: int | None = None
) -> dict[str, Any]:
    """:func:`response_schema` made positional, for servers that decode under a grammar.

    An ``enum`` index still lets a grammar write fact 1 twice and fact 2 never (gemma-3
    did); here ``key_facts`` is a tuple (``prefixItems``) whose entry ``i`` has
    ``index`` = ``i`` (``const``), and ``citations`` one entry per marker, in order, with
    ``marker`` = that marker, so every fact and every marker is judged exactly once by
    construction. ``claims`` and the correctness lists get ``maxItems``
    (:data:`MAX_GRAMMAR_ITEMS`) so a model that repeats itself stops before
    ``max_tokens``. Sent as ``{"type": "json_object", "schema": ...}`` only: OpenAI's
    strict ``json_schema`` mode does not take ``prefixItems``.
    """
    shape = Shape(has_reference, n_facts, markers, n_chunks)
    return obj({f.name: (f.grammar or f.schema)(shape) for f in fields(has_reference)})


def validate(
    data: Any,
    *,
    key_facts: Sequence[str],
    n_context: int,
    answer: str,
    has_reference: bool,
) -> tuple[Judgement | None, list[str]]:
    """Check ``data`` against the schema and the input; return the judgement or the errors."""
    if not isinstance(data, dict):
        return None, [f"the reply must be one JSON object, got {type(data).__name__}"]
    errors: list[str] = []
    expected = Expected(list(key_facts), n_context, answer_markers(answer), has_reference)
    values = {f.name: f.read(data.get(f.name), expected, errors) for f in fields(has_reference)}
    if errors:
        return None, errors
    return Judgement(values, n_context), []


def metrics_from(j: Judgement) -> dict[str, float]:
    """Every registered metric of one judgement whose fields it holds; a metric without a
    denominator is left out."""
    values = {m.name: m.value(j) for m in metrics() if all(f.name in j.values for f in m.fields)}
    return {k: v for k, v in values.items() if v is not None}
