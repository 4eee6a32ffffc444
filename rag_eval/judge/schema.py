"""What the native judge must answer, how a reply is read, checked and scored.

Three jobs, kept apart from the HTTP side (``native.py``) so each can be tested with
plain data:

* :func:`response_schema` -- the strict JSON schema sent as ``response_format`` and
  quoted in the prompt. Verdicts are categorical enums only (METRICS.md: never 1-5).
* :func:`parse_reply` (from ``parse.py``, re-exported) -- a tolerant reader for servers
  without structured output: ```json fences, prose around the object, trailing commas.
* :func:`validate` -- turns the parsed object into a :class:`Judgement` or a list of
  errors precise enough to paste into a repair prompt ("key_facts: fact 2 is not
  judged"). A judgement that skips a key fact or cites a chunk that does not exist
  would silently shrink a denominator, so it is rejected, not patched.
* the metric functions -- pure, one per METRICS.md formula; ``None`` means "no
  denominator", and :func:`metrics_from` then omits the key rather than report 0 or 1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.citations import cited_numbers
from rag_eval.judge.diagnosis import checks_from, claim_diagnosis, claim_fields, fact_diagnosis, fact_fields
from rag_eval.judge.parse import parse_reply as parse_reply  # re-exported: the reader of a verdict
from rag_eval.metrics import claims as claim_metrics

CLAIM_VERDICTS: tuple[str, ...] = ("yes", "no", "unknown")
FACT_VERDICTS: tuple[str, ...] = ("covered", "partially_covered", "not_covered")
RELEVANCE_VERDICTS: tuple[str, ...] = ("relevant", "partially_relevant", "not_relevant")
FACT_SCORE: Mapping[str, float] = {"covered": 1.0, "partially_covered": 0.5, "not_covered": 0.0}
RELEVANCE_SCORE: Mapping[str, float] = {"relevant": 1.0, "partially_relevant": 0.5, "not_relevant": 0.0}


def answer_markers(answer: str) -> list[int]:
    """Distinct citation numbers in ``answer``, in order of first appearance.

    The one citation parser of the evaluation (``rag_eval.citations.cited_numbers``):
    brackets inside ``$…$`` maths and intervals such as ``[0,2]`` are not citations, so a
    maths answer's intervals are never sent to the judge as markers to verify.
    """
    return cited_numbers(answer)


# --- the schema ------------------------------------------------------------------------
def _obj(props: Mapping[str, Any]) -> dict[str, Any]:
    # OpenAI strict mode wants every property required and no extra ones.
    return {"type": "object", "properties": dict(props), "required": list(props), "additionalProperties": False}


def _enum(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


_STR: dict[str, Any] = {"type": "string"}


def _array(items: dict[str, Any], min_items: int | None = None, max_items: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": items}
    if min_items is not None:
        out["minItems"] = min_items
    if max_items is not None:
        out["maxItems"] = max_items
    return out


def response_schema(
    has_reference: bool, n_facts: int | None = None, markers: Sequence[int] | None = None, n_chunks: int | None = None
) -> dict[str, Any]:
    """The JSON schema of one verdict; ``correctness`` exists only when a reference does.

    Exact where the counts are known, so that a grammar-constrained server (llama.cpp,
    vLLM guided decoding) produces a valid verdict by construction: with ``n_facts``,
    ``key_facts`` has exactly that many entries and ``index`` is one of ``1..n``; with
    ``markers`` (the distinct ``[n]`` of the answer), ``citations`` has at least one
    entry per marker and ``marker`` is one of them (no markers: no entry). The number of
    *sentences* a marker is attached to is the judge's to read, so there is no
    ``maxItems`` on citations when the answer cites something. With ``n_chunks`` (the
    context's size), every ``chunks`` list holds markers ``1..n_chunks`` only
    (``diagnosis.py``: the claim-level checks).
    """
    fact_index: dict[str, Any] = {"type": "integer"}
    if n_facts:
        fact_index["enum"] = list(range(1, n_facts + 1))
    marker: dict[str, Any] = {"type": "integer"}
    if markers:
        marker["enum"] = list(markers)
    cited = None if markers is None else len(markers)
    props: dict[str, Any] = {
        "claims": _array(
            _obj({"claim": _STR, "verdict": _enum(CLAIM_VERDICTS), **claim_fields(n_chunks), "reason": _STR})
        ),
        "key_facts": _array(
            _obj(
                {
                    "index": fact_index,
                    "fact": _STR,
                    "verdict": _enum(FACT_VERDICTS),
                    **fact_fields(n_chunks),
                    "reason": _STR,
                }
            ),
            n_facts,
            n_facts,
        ),
        "relevance": _obj({"verdict": _enum(RELEVANCE_VERDICTS), "reason": _STR}),
    }
    if has_reference:
        lst = {"type": "array", "items": _STR}
        props["correctness"] = _obj({"tp": lst, "fp": lst, "fn": lst})
    props["citations"] = _array(
        _obj({"marker": marker, "sentence": _STR, "supported": {"type": "boolean"}, "reason": _STR}),
        cited,
        0 if cited == 0 else None,
    )
    return _obj(props)


MAX_GRAMMAR_ITEMS = 20  # claims / correctness entries a grammar lets a degenerate model write


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

    def fact(i: int) -> dict[str, Any]:
        return _obj(
            {
                "index": {"type": "integer", "const": i},
                "fact": _STR,
                "verdict": _enum(FACT_VERDICTS),
                **fact_fields(n_chunks),
                "reason": _STR,
            }
        )

    def citation(m: int) -> dict[str, Any]:
        return _obj(
            {
                "marker": {"type": "integer", "const": m},
                "sentence": _STR,
                "supported": {"type": "boolean"},
                "reason": _STR,
            }
        )

    schema = response_schema(has_reference, n_facts, markers, n_chunks)
    props = schema["properties"]
    props["claims"]["maxItems"] = MAX_GRAMMAR_ITEMS
    props["key_facts"] = _tuple([fact(i) for i in range(1, n_facts + 1)])
    props["citations"] = _tuple([citation(m) for m in markers])
    if has_reference:
        for key in ("tp", "fp", "fn"):
            props["correctness"]["properties"][key]["maxItems"] = MAX_GRAMMAR_ITEMS
    return schema


def _tuple(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "array", "prefixItems": items, "items": False, "minItems": len(items), "maxItems": len(items)}


# --- validation ------------------------------------------------------------------------
@dataclass(frozen=True)
class Judgement:
    """A validated reply: verdicts normalised to their enum spelling, key facts in input order."""

    claims: tuple[dict[str, Any], ...]
    key_facts: tuple[dict[str, Any], ...]
    relevance: dict[str, str]
    correctness: dict[str, list[str]] | None
    citations: tuple[dict[str, Any], ...]
    duplicate_claims: int = 0  # repeated claims dropped (a degenerate judge says one thing N times)
    n_context: int = 0  # chunks the generator saw: the columns of the claim-level checks

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "claims": [dict(c) for c in self.claims],
            "key_facts": [dict(k) for k in self.key_facts],
            "relevance": dict(self.relevance),
            "citations": [dict(c) for c in self.citations],
        }
        if self.duplicate_claims:
            out["duplicate_claims_dropped"] = self.duplicate_claims
        checks, inconsistent = checks_from(self)
        out["diagnosis"] = {
            **claim_metrics.unknown_counts(checks),
            "inconsistent": inconsistent,
            "context_chunks": self.n_context,
        }
        if self.correctness is not None:
            out["correctness"] = {k: list(v) for k, v in self.correctness.items()}
        return out


def _norm_verdict(value: Any) -> str:
    # "Partially covered" / "partially-covered" / " YES " are the same verdict.
    return re.sub(r"[\s\-]+", "_", value.strip().lower()) if isinstance(value, str) else ""


def _norm_text(value: str) -> str:
    return " ".join(value.split()).casefold()


def _verdict(obj: Mapping[str, Any], where: str, allowed: Sequence[str], errors: list[str]) -> str:
    v = _norm_verdict(obj.get("verdict"))
    if v not in allowed:
        errors.append(f"{where}.verdict is {obj.get('verdict')!r}; allowed: {', '.join(allowed)}")
    return v


def _reason(obj: Mapping[str, Any], where: str, errors: list[str]) -> str:
    r = obj.get("reason")
    if not isinstance(r, str):
        errors.append(f"{where}.reason must be a string explaining the verdict")
        return ""
    return r


def _list(data: Mapping[str, Any], key: str, errors: list[str], *, optional: bool) -> list[Any]:
    value = data.get(key)
    if value is None and optional:
        return []
    if not isinstance(value, list):
        errors.append(f"'{key}' must be a list, got {type(value).__name__}")
        return []
    return value


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

    claims, duplicates = validate_claims(_list(data, "claims", errors, optional=False), n_context, errors)

    facts = _validate_facts(_list(data, "key_facts", errors, optional=not key_facts), key_facts, n_context, errors)

    rel = data.get("relevance")
    relevance: dict[str, str] = {"verdict": "", "reason": ""}
    if not isinstance(rel, dict):
        errors.append("'relevance' must be an object {verdict, reason}")
    else:
        relevance = {
            "verdict": _verdict(rel, "relevance", RELEVANCE_VERDICTS, errors),
            "reason": _reason(rel, "relevance", errors),
        }

    correctness: dict[str, list[str]] | None = None
    if has_reference:
        corr = data.get("correctness")
        if not isinstance(corr, dict):
            errors.append("'correctness' must be an object {tp, fp, fn} of claim lists (a reference was given)")
        else:
            correctness = {}
            for key in ("tp", "fp", "fn"):
                items = corr.get(key)
                if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                    errors.append(f"correctness.{key} must be a list of strings")
                    items = []
                correctness[key] = list(items)

    markers = answer_markers(answer)
    citations = _validate_citations(_list(data, "citations", errors, optional=not markers), markers, n_context, errors)

    if errors:
        return None, errors
    return Judgement(tuple(claims), tuple(facts), relevance, correctness, tuple(citations), duplicates, n_context), []


def validate_claims(
    items: list[Any], n_context: int, errors: list[str], seen: Sequence[str] = ()
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
                "verdict": _verdict(c, where, CLAIM_VERDICTS, errors),
                **claim_diagnosis(c, where, n_context, errors),
                "reason": _reason(c, where, errors),
            }
        )
    return claims, duplicates


def _validate_facts(
    items: list[Any], key_facts: Sequence[str], n_context: int, errors: list[str]
) -> list[dict[str, Any]]:
    """Each input key fact judged exactly once, matched by 1-based index or by its text."""
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
            "verdict": _verdict(kf, where, FACT_VERDICTS, errors),
            **fact_diagnosis(kf, where, n_context, errors),
            "reason": _reason(kf, where, errors),
        }
    missing = [i for i in range(1, len(key_facts) + 1) if i not in judged]
    if missing:
        errors.append(f"key facts {missing} are not judged; give one key_facts entry for each of 1..{len(key_facts)}")
    return [judged[i] for i in sorted(judged)]


def _validate_citations(
    items: list[Any], markers: Sequence[int], n_context: int, errors: list[str]
) -> list[dict[str, Any]]:
    """Citations must name a context chunk the answer actually cites; every cited valid chunk judged."""
    out: list[dict[str, Any]] = []
    for j, c in enumerate(items):
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
                f"the {n_context} context chunks (answer cites {markers})"
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
                "reason": _reason(c, where, errors),
            }
        )
    judged = {c["marker"] for c in out}
    unjudged = [m for m in markers if 1 <= m <= n_context and m not in judged]
    if unjudged:
        errors.append(f"citations {unjudged} in the answer are not judged; add a citations entry for each")
    return out


# --- metrics (METRICS.md, Generation) ----------------------------------------------------
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


def metrics_from(j: Judgement) -> dict[str, float]:
    """All metrics of one judgement (with the claim-level ones of ``rag_eval.metrics.claims``);
    a metric without a denominator is left out."""
    claim_v = [c["verdict"] for c in j.claims]
    values: dict[str, float | None] = {
        "faithfulness": faithfulness(claim_v),
        "unknown_share": unknown_share(claim_v),
        "coverage": coverage([k["verdict"] for k in j.key_facts]),
        "relevance": relevance(j.relevance["verdict"]),
        "factual_f1": (
            factual_f1(len(j.correctness["tp"]), len(j.correctness["fp"]), len(j.correctness["fn"]))
            if j.correctness is not None
            else None
        ),
        "citation_faithfulness": citation_faithfulness([c["supported"] for c in j.citations]),
    }
    out = {k: v for k, v in values.items() if v is not None}
    return {**out, **claim_metrics.case_metrics(checks_from(j)[0])}
