"""The native judge's built-in verdict fields and metrics (METRICS.md, Generation),
declared once each in the registry (``rag_eval.judge.registry``).

Fields, in the verdict's key order: ``claims`` (the answer's atomic claims, each supported
by the context or not, with the claim-level checks of ``diagnosis.py``), ``key_facts``
(each numbered key fact covered or not), ``relevance``, ``correctness`` (tp / fp / fn
claim lists, asked only with a reference answer) and ``citations`` (each ``[n]`` of the
answer supported by chunk n or not). Verdicts are categorical enums only (METRICS.md:
never 1-5). A judgement that skips a key fact or cites a chunk that does not exist would
silently shrink a denominator, so it is rejected, not patched.

Metrics: pure, one per METRICS.md formula; ``None`` means "no denominator", and the
metric is then left out rather than reported as 0 or 1. The claim-level metrics of
``rag_eval.metrics.claims`` are registered here too, with their directions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.judge.diagnosis import claim_diagnosis, claim_fields, fact_diagnosis, fact_fields
from rag_eval.judge.registry import (
    STRING,
    Errors,
    Expected,
    Judgement,
    JudgeMetric,
    Shape,
    VerdictField,
    array,
    categorical,
    enum,
    obj,
    read_reason,
    read_verdict,
    register,
    scored,
)
from rag_eval.metrics import claims as claim_metrics

CLAIM_VERDICTS: tuple[str, ...] = ("yes", "no", "unknown")
FACT_VERDICTS: tuple[str, ...] = ("covered", "partially_covered", "not_covered")
RELEVANCE_VERDICTS: tuple[str, ...] = ("relevant", "partially_relevant", "not_relevant")
FACT_SCORE: Mapping[str, float] = {"covered": 1.0, "partially_covered": 0.5, "not_covered": 0.0}
RELEVANCE_SCORE: Mapping[str, float] = {"relevant": 1.0, "partially_relevant": 0.5, "not_relevant": 0.0}
MAX_GRAMMAR_ITEMS = 20  # claims / correctness entries a grammar lets a degenerate model write
_ENTRIES: Mapping[str, Any] = {"type": "array", "items": {"type": "object"}}  # a details list of verdict objects


def _norm_text(value: str) -> str:
    return " ".join(value.split()).casefold()


def _list(value: Any, key: str, errors: Errors, *, optional: bool) -> list[Any]:
    if value is None and optional:
        return []
    if not isinstance(value, list):
        errors.append(f"'{key}' must be a list, got {type(value).__name__}")
        return []
    return value


def _positional(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


# --- claims ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claims:
    """The validated claims and how many repeats were dropped."""

    items: tuple[dict[str, Any], ...]
    dropped: int = 0


def _claims_schema(shape: Shape) -> dict[str, Any]:
    return array(
        obj({"claim": STRING, "verdict": enum(CLAIM_VERDICTS), **claim_fields(shape.n_chunks), "reason": STRING})
    )


def _claims_grammar(shape: Shape) -> dict[str, Any]:
    return {**_claims_schema(shape), "maxItems": MAX_GRAMMAR_ITEMS}


def validate_claims(
    items: list[Any], n_context: int, errors: Errors, seen: Sequence[str] = ()
) -> tuple[list[dict[str, Any]], int]:
    """The validated claims and how many repeats were dropped (also of the ``seen`` texts)."""
    claims: list[dict[str, Any]] = []
    seen_claims = {_norm_text(t) for t in seen}
    duplicates = 0
    for i, c in enumerate(items):
        where = f"claims[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("claim"), str):
            errors.append(f"{where} must be an object with a string 'claim'")
            continue
        norm = _norm_text(c["claim"])
        if norm in seen_claims:  # a degenerate judge repeats itself: one claim counts once
            duplicates += 1
            continue
        seen_claims.add(norm)
        claims.append(
            {
                "claim": c["claim"],
                "verdict": read_verdict(c, where, CLAIM_VERDICTS, errors),
                **claim_diagnosis(c, where, n_context, errors),
                "reason": read_reason(c, where, errors),
            }
        )
    return claims, duplicates


def _read_claims(value: Any, expected: Expected, errors: Errors) -> Claims:
    claims, dropped = validate_claims(_list(value, "claims", errors, optional=False), expected.n_context, errors)
    return Claims(tuple(claims), dropped)


def _claims_details(value: Claims) -> Mapping[str, Any]:
    out: dict[str, Any] = {"claims": [dict(c) for c in value.items]}
    if value.dropped:
        out["duplicate_claims_dropped"] = value.dropped
    return out


CLAIMS = VerdictField(
    "claims",
    """claims: split the ANSWER into atomic factual claims (one checkable statement each). For each claim:
   "verdict": "yes" = supported by the CONTEXT; "no" = contradicted by the CONTEXT or not in it;
   "unknown" = cannot be decided from the CONTEXT (e.g. too vague to check).
   "chunks": the numbers n of every CONTEXT chunk [n] that on its own entails the claim; [] if none does.
   "reference": "yes" = the KEY FACTS or the REFERENCE entail the claim; "no" = they contradict it or do not
   state it; "unknown" = cannot be decided.""",
    _claims_schema,
    _read_claims,
    grammar=_claims_grammar,
    details=_claims_details,
    results_schema={
        "claims": _ENTRIES,
        "duplicate_claims_dropped": {
            "description": "repeated claims dropped (a degenerate judge says one thing many times).",
            "$ref": "#/$defs/nonNegativeInteger",
        },
    },
)


# --- key facts ---------------------------------------------------------------------------------
def _fact(index: dict[str, Any], n_chunks: int | None) -> dict[str, Any]:
    return obj(
        {"index": index, "fact": STRING, "verdict": enum(FACT_VERDICTS), **fact_fields(n_chunks), "reason": STRING}
    )


def _facts_schema(shape: Shape) -> dict[str, Any]:
    index: dict[str, Any] = {"type": "integer"}
    if shape.n_facts:
        index["enum"] = list(range(1, shape.n_facts + 1))
    return array(_fact(index, shape.n_chunks), shape.n_facts, shape.n_facts)


def _facts_grammar(shape: Shape) -> dict[str, Any]:
    """One entry per key fact, entry ``i`` with ``index`` = ``i``: each judged exactly once."""
    n = shape.n_facts or 0
    return _positional([_fact({"type": "integer", "const": i}, shape.n_chunks) for i in range(1, n + 1)])


def _read_facts(value: Any, expected: Expected, errors: Errors) -> tuple[dict[str, Any], ...]:
    """Each input key fact judged exactly once, matched by 1-based index or by its text."""
    key_facts = expected.key_facts
    items = _list(value, "key_facts", errors, optional=not key_facts)
    by_text = {_norm_text(f): i for i, f in enumerate(key_facts, 1)}
    judged: dict[int, dict[str, Any]] = {}
    for j, kf in enumerate(items):
        where = f"key_facts[{j}]"
        if not isinstance(kf, dict):
            errors.append(f"{where} must be an object {{index, fact, verdict, reason}}")
            continue
        idx = kf.get("index")
        if isinstance(idx, str) and idx.strip().isdigit():
            idx = int(idx.strip())
        if not (isinstance(idx, int) and not isinstance(idx, bool) and 1 <= idx <= len(key_facts)):
            idx = by_text.get(_norm_text(kf["fact"])) if isinstance(kf.get("fact"), str) else None
        if idx is None:
            errors.append(f"{where} matches no key fact (index must be 1..{len(key_facts)} or the exact fact text)")
            continue
        if idx in judged:
            errors.append(f"key fact {idx} is judged more than once; judge each key fact exactly once")
            continue
        judged[idx] = {
            "index": idx,
            "fact": key_facts[idx - 1],
            "verdict": read_verdict(kf, where, FACT_VERDICTS, errors),
            **fact_diagnosis(kf, where, expected.n_context, errors),
            "reason": read_reason(kf, where, errors),
        }
    missing = [i for i in range(1, len(key_facts) + 1) if i not in judged]
    if missing:
        errors.append(f"key facts {missing} are not judged; give one key_facts entry for each of 1..{len(key_facts)}")
    return tuple(judged[i] for i in sorted(judged))


def _entry_list(
    name: str,
    prompt: str,
    schema: Callable[[Shape], dict[str, Any]],
    read: Callable[[Any, Expected, Errors], tuple[dict[str, Any], ...]],
    grammar: Callable[[Shape], dict[str, Any]],
) -> VerdictField:
    """A field holding a list of verdict objects (key_facts, citations), kept as a list."""

    def details(value: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        return {name: [dict(x) for x in value]}

    return VerdictField(name, prompt, schema, read, grammar=grammar, details=details, results_schema={name: _ENTRIES})


KEY_FACTS = _entry_list(
    "key_facts",
    """key_facts: judge every numbered KEY FACT exactly once, giving its number as "index" and its text as "fact":
   "verdict": "covered" = the answer states it; "partially_covered" = the answer states part of it or states it
   imprecisely; "not_covered" = absent or contradicted.
   "context": "yes" = some CONTEXT chunk entails the key fact; "no" = none does; "unknown" = cannot be decided.
   "chunks": the numbers n of every CONTEXT chunk [n] that entails the key fact; [] if none does.
   If there are no key facts, return an empty list.""",
    _facts_schema,
    _read_facts,
    _facts_grammar,
)

# --- relevance ---------------------------------------------------------------------------------
RELEVANCE = categorical(
    "relevance",
    """relevance: does the ANSWER address the QUESTION? "relevant" = fully; "partially_relevant" = only partly
   or with much off-topic content; "not_relevant" = does not address it.""",
    RELEVANCE_VERDICTS,
)


# --- correctness (with a reference answer) -------------------------------------------------------
_SIDES = ("tp", "fp", "fn")


def _correctness_schema(shape: Shape) -> dict[str, Any]:
    return obj({key: {"type": "array", "items": STRING} for key in _SIDES})


def _correctness_grammar(shape: Shape) -> dict[str, Any]:
    return obj({key: {"type": "array", "items": STRING, "maxItems": MAX_GRAMMAR_ITEMS} for key in _SIDES})


def _read_correctness(value: Any, expected: Expected, errors: Errors) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        errors.append("'correctness' must be an object {tp, fp, fn} of claim lists (a reference was given)")
        return {}
    out: dict[str, list[str]] = {}
    for key in _SIDES:
        items = value.get(key)
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            errors.append(f"correctness.{key} must be a list of strings")
            items = []
        out[key] = list(items)
    return out


def _correctness_details(value: Mapping[str, Sequence[str]]) -> Mapping[str, Any]:
    return {"correctness": {k: list(v) for k, v in value.items()}}


CORRECTNESS = VerdictField(
    "correctness",
    "correctness: split the ANSWER and the REFERENCE into atomic claims. tp = claims in both; "
    "fp = claims only in the answer; fn = claims only in the reference. Lists of short claim strings.",
    _correctness_schema,
    _read_correctness,
    grammar=_correctness_grammar,
    details=_correctness_details,
    results_schema={
        "correctness": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
    },
    with_reference=True,
)


# --- citations ---------------------------------------------------------------------------------
def _citation(marker: dict[str, Any]) -> dict[str, Any]:
    return obj({"marker": marker, "sentence": STRING, "supported": {"type": "boolean"}, "reason": STRING})


def _citations_schema(shape: Shape) -> dict[str, Any]:
    """At least one entry per marker, each naming one of them (no markers: no entry). How
    many sentences a marker is attached to is the judge's to read: no ``maxItems`` then."""
    marker: dict[str, Any] = {"type": "integer"}
    if shape.markers:
        marker["enum"] = list(shape.markers)
    cited = None if shape.markers is None else len(shape.markers)
    return array(_citation(marker), cited, 0 if cited == 0 else None)


def _citations_grammar(shape: Shape) -> dict[str, Any]:
    """One entry per marker, in order, with ``marker`` = that marker."""
    return _positional([_citation({"type": "integer", "const": m}) for m in shape.markers or ()])


def _read_citations(value: Any, expected: Expected, errors: Errors) -> tuple[dict[str, Any], ...]:
    """Citations must name a context chunk the answer actually cites; every cited valid chunk judged."""
    markers, n_context = expected.markers, expected.n_context
    out: list[dict[str, Any]] = []
    for j, c in enumerate(_list(value, "citations", errors, optional=not markers)):
        where = f"citations[{j}]"
        if not isinstance(c, dict):
            errors.append(f"{where} must be an object {{marker, sentence, supported, reason}}")
            continue
        m = c.get("marker")
        if isinstance(m, str) and (digits := m.strip().strip("[]").strip()).isdigit():
            m = int(digits)
        if not (isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= n_context and m in markers):
            errors.append(
                f"{where}.marker {c.get('marker')!r} is not a [n] in the answer that names one of "
                f"the {n_context} context chunks (answer cites {list(markers)})"
            )
            continue
        sup = c.get("supported")
        if isinstance(sup, str) and sup.strip().lower() in ("true", "false"):
            sup = sup.strip().lower() == "true"
        if not isinstance(sup, bool):
            errors.append(f"{where}.supported must be true or false, got {c.get('supported')!r}")
            continue
        sentence = c.get("sentence")
        out.append(
            {
                "marker": m,
                "sentence": sentence if isinstance(sentence, str) else "",
                "supported": sup,
                "reason": read_reason(c, where, errors),
            }
        )
    judged = {c["marker"] for c in out}
    unjudged = [m for m in markers if 1 <= m <= n_context and m not in judged]
    if unjudged:
        errors.append(f"citations {unjudged} in the answer are not judged; add a citations entry for each")
    return tuple(out)


CITATIONS = _entry_list(
    "citations",
    """citations: for every inline marker [n] in the ANSWER, one entry: "marker" = n, "sentence" = the sentence
   the marker is attached to, "supported" = true only if context chunk [n] supports that sentence.
   If the answer has no markers, return an empty list.""",
    _citations_schema,
    _read_citations,
    _citations_grammar,
)


# --- the metrics (METRICS.md, Generation) --------------------------------------------------------
def faithfulness(verdicts: Sequence[str]) -> float | None:
    """Yes / (Yes + No); None when no claim got a yes or no."""
    yes, no = verdicts.count("yes"), verdicts.count("no")
    return yes / (yes + no) if yes + no else None


def unknown_share(verdicts: Sequence[str]) -> float | None:
    """Unknown / all claims; None when the answer has no claims."""
    return verdicts.count("unknown") / len(verdicts) if verdicts else None


def coverage(verdicts: Sequence[str]) -> float | None:
    """Mean of covered 1 / partially_covered 0.5 / not_covered 0; None without key facts."""
    return sum(FACT_SCORE[v] for v in verdicts) / len(verdicts) if verdicts else None


def relevance(verdict: str) -> float:
    return RELEVANCE_SCORE[verdict]


def factual_f1(tp: int, fp: int, fn: int) -> float | None:
    """TP / (TP + 0.5 (FP + FN)); None for 0/0 (nothing claimed on either side)."""
    denom = tp + 0.5 * (fp + fn)
    return tp / denom if denom else None


def citation_faithfulness(supported: Sequence[bool]) -> float | None:
    """Supported citations / all citations; None without citations."""
    return sum(1 for s in supported if s) / len(supported) if supported else None


def _claim_verdicts(j: Judgement) -> list[str]:
    return [c["verdict"] for c in j.claims]


def _faithfulness(j: Judgement) -> float | None:
    return faithfulness(_claim_verdicts(j))


def _unknown_share(j: Judgement) -> float | None:
    return unknown_share(_claim_verdicts(j))


def _coverage(j: Judgement) -> float | None:
    return coverage([k["verdict"] for k in j.key_facts])


def _factual_f1(j: Judgement) -> float | None:
    c = j.correctness
    return None if c is None else factual_f1(len(c["tp"]), len(c["fp"]), len(c["fn"]))


def _citation_faithfulness(j: Judgement) -> float | None:
    return citation_faithfulness([c["supported"] for c in j.citations])


def _claim_metric(name: str) -> JudgeMetric:
    def value(j: Judgement) -> float | None:
        return j.claim_values.get(name)

    value.__qualname__ = f"claim_metric.{name}"
    return JudgeMetric(name, value, (CLAIMS, KEY_FACTS), claim_metrics.LOWER_IS_BETTER[name])


BUILT_IN: tuple[JudgeMetric, ...] = (
    JudgeMetric("faithfulness", _faithfulness, (CLAIMS,)),
    JudgeMetric("unknown_share", _unknown_share, (CLAIMS,), lower_is_better=True),
    JudgeMetric("coverage", _coverage, (KEY_FACTS,)),
    JudgeMetric("relevance", scored("relevance", RELEVANCE_SCORE), (RELEVANCE,)),
    JudgeMetric("factual_f1", _factual_f1, (CORRECTNESS,)),
    # citations after correctness in the verdict (the prompt asks for correctness last: with_reference)
    JudgeMetric("citation_faithfulness", _citation_faithfulness, (CITATIONS,)),
    *(_claim_metric(name) for name in claim_metrics.KEYS),
)
for _metric in BUILT_IN:
    register(_metric)
