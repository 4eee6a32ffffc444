"""Judge metrics, each declared once: the verdict field the judge is asked for and the
metric computed from it.

A :class:`VerdictField` is one top-level key of the native judge's JSON verdict: the
numbered instruction of the system message that asks for it, its JSON schema (exact where
the case's counts are known, and its positional form for grammar-constrained servers),
how a reply's value is checked (errors precise enough to paste into a repair prompt) and
what a case's details keep of it, with the schema of that in the results file. A
:class:`JudgeMetric` is a name, a direction, the fields it reads and a pure function of a
validated :class:`Judgement` (``None``: no denominator, the metric is left out, never 0).

The registry (:func:`register`) is the one place a judge metric is known: the request
schema (``schema.response_schema`` / ``grammar_schema``), the prompt
(``prompt.system_message``), the reply's validation (``schema.validate``), the metrics of a
verdict (``schema.metrics_from``), the names and directions thresholds.toml may gate on and
the judge tier's results-schema fragment all come from it. The built-in fields and metrics
are ``rag_eval.judge.fields``; a metric of your own is one field (often
:func:`categorical`) and one ``register(JudgeMetric(...))`` in a conftest or a plugin.

Order: fields are kept in registration order, which is the order of the verdict's keys;
the prompt asks for the fields every case gets first, then those asked only with a
reference answer (``with_reference``), each numbered in that order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag_eval.judge.diagnosis import checks_from
from rag_eval.metrics import claims as claim_metrics


# --- JSON-schema parts ---------------------------------------------------------------------
def obj(props: Mapping[str, Any]) -> dict[str, Any]:
    """An object of exactly ``props`` (OpenAI strict mode: every property required, no other)."""
    return {"type": "object", "properties": dict(props), "required": list(props), "additionalProperties": False}


def enum(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


STRING: Mapping[str, Any] = {"type": "string"}


def array(items: Mapping[str, Any], min_items: int | None = None, max_items: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": dict(items)}
    if min_items is not None:
        out["minItems"] = min_items
    if max_items is not None:
        out["maxItems"] = max_items
    return out


# --- what a field is given ------------------------------------------------------------------
@dataclass(frozen=True)
class Shape:
    """What the request schema of one case knows: ``None`` where a count is not known (the
    schema is then looser); ``markers`` are the answer's ``[n]`` that name a context chunk."""

    has_reference: bool
    n_facts: int | None = None
    markers: Sequence[int] | None = None
    n_chunks: int | None = None


@dataclass(frozen=True)
class Expected:
    """What a reply is checked against: the case's key facts, its context size, the answer's
    distinct citation markers and whether a reference answer was given."""

    key_facts: Sequence[str]
    n_context: int
    markers: Sequence[int]
    has_reference: bool


Errors = list[str]


@dataclass(frozen=True)
class VerdictField:
    """One top-level key of the verdict (module doc).

    ``prompt`` is its instruction without its number (``"relevance: does the ANSWER ..."``);
    ``schema`` its JSON schema for a case; ``grammar`` its positional form (``None``: the same
    as ``schema``); ``read`` the checked value of the reply's ``data.get(name)``, appending
    to ``errors`` what is wrong; ``details`` what a case's details keep of a checked value
    (details keys to values; ``None``: the value under the field's name); ``results_schema``
    the JSON schema of that in the results file (under ``judgeVerdict``).
    """

    name: str
    prompt: str
    schema: Callable[[Shape], dict[str, Any]]
    read: Callable[[Any, Expected, Errors], Any]
    grammar: Callable[[Shape], dict[str, Any]] | None = None
    details: Callable[[Any], Mapping[str, Any]] | None = None
    results_schema: Mapping[str, Any] = field(default_factory=dict)
    with_reference: bool = False

    def details_of(self, value: Any) -> Mapping[str, Any]:
        return {self.name: value} if self.details is None else self.details(value)


@dataclass(frozen=True)
class Judgement:
    """A validated reply: each field's checked value (by field name) and the context size
    the claim-level checks are over. The built-in fields' values are its properties."""

    values: Mapping[str, Any]
    n_context: int = 0

    def value(self, name: str) -> Any:
        """The checked value of field ``name`` (``None``: not asked for this case)."""
        return self.values.get(name)

    @property
    def claims(self) -> tuple[dict[str, Any], ...]:
        claims: tuple[dict[str, Any], ...] = self.values["claims"].items
        return claims

    @property
    def duplicate_claims(self) -> int:
        """Repeated claims dropped (a degenerate judge says one thing N times)."""
        dropped: int = self.values["claims"].dropped
        return dropped

    @property
    def key_facts(self) -> tuple[dict[str, Any], ...]:
        facts: tuple[dict[str, Any], ...] = self.values["key_facts"]
        return facts

    @property
    def relevance(self) -> dict[str, str]:
        rel: dict[str, str] = self.values["relevance"]
        return rel

    @property
    def correctness(self) -> dict[str, list[str]] | None:
        corr: dict[str, list[str]] | None = self.values.get("correctness")
        return corr

    @property
    def citations(self) -> tuple[dict[str, Any], ...]:
        cits: tuple[dict[str, Any], ...] = self.values["citations"]
        return cits

    def with_value(self, name: str, value: Any) -> Judgement:
        return replace(self, values={**self.values, name: value})

    @functools.cached_property
    def claim_values(self) -> dict[str, float]:
        """The claim-level metrics (``rag_eval.metrics.claims``) of the four entailment checks
        (``rag_eval.judge.diagnosis``), computed once for all of them."""
        return claim_metrics.case_metrics(checks_from(self)[0])

    def details(self) -> dict[str, Any]:
        """What a case's details keep: each field's part, then the claim-level diagnosis."""
        out: dict[str, Any] = {}
        for f in fields(self.correctness is not None):
            if f.name in self.values:
                out.update(f.details_of(self.values[f.name]))
        checks, inconsistent = checks_from(self)
        out["diagnosis"] = {
            **claim_metrics.unknown_counts(checks),
            "inconsistent": inconsistent,
            "context_chunks": self.n_context,
        }
        return out


@dataclass(frozen=True)
class JudgeMetric:
    """A judge metric: its name (a ``judge.<name>`` gate), the fields it reads, its value on a
    verdict (``None``: no denominator) and its direction."""

    name: str
    value: Callable[[Judgement], float | None]
    fields: tuple[VerdictField, ...]
    lower_is_better: bool = False


# --- the registry ---------------------------------------------------------------------------
_FIELDS: dict[str, VerdictField] = {}
_METRICS: dict[str, JudgeMetric] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _origin(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def _register_field(f: VerdictField) -> None:
    known = _FIELDS.get(f.name)
    if known is not None and (known.prompt, _origin(known.read)) != (f.prompt, _origin(f.read)):
        raise ValueError(
            f"judge verdict field {f.name!r} is declared already ({_origin(known.read)}); choose another name"
        )
    _FIELDS[f.name] = f


def register(metric: JudgeMetric) -> JudgeMetric:
    """Make ``metric`` and its fields known. A name taken by another declaration is refused;
    the same declaration again (a conftest imported twice in one process) replaces it."""
    for name in (metric.name, *(f.name for f in metric.fields)):
        if not _NAME.match(name):
            raise ValueError(f"judge metric or field name {name!r}: use lower-case letters, digits and '_'")
    known = _METRICS.get(metric.name)
    if known is not None and _origin(known.value) != _origin(metric.value):
        raise ValueError(f"judge metric {metric.name!r} is registered already ({_origin(known.value)})")
    for f in metric.fields:
        _register_field(f)
    _METRICS[metric.name] = metric
    return metric


def _with_built_in() -> None:
    import rag_eval.judge.fields  # noqa: F401 -- its import registers the built-in fields and metrics


def metrics() -> tuple[JudgeMetric, ...]:
    """Every registered judge metric, in registration order (the built-in ones first)."""
    _with_built_in()
    return tuple(_METRICS.values())


def metric_names() -> tuple[str, ...]:
    """The names a ``judge.<name>`` gate (or a ``[judge.case]`` floor) may use."""
    return tuple(m.name for m in metrics())


def fields(has_reference: bool = True) -> tuple[VerdictField, ...]:
    """The verdict's fields in order (without a reference: those every case gets)."""
    _with_built_in()
    return tuple(f for f in _FIELDS.values() if has_reference or not f.with_reference)


def prompt_fields(has_reference: bool) -> tuple[VerdictField, ...]:
    """The fields in the order the prompt asks for them: every case's first (module doc)."""
    asked = fields(has_reference)
    return tuple(f for f in asked if not f.with_reference) + tuple(f for f in asked if f.with_reference)


def lower_is_better(name: str) -> bool:
    """A registered judge metric whose lower values are better; False for any other name."""
    _with_built_in()
    metric = _METRICS.get(name)
    return metric is not None and metric.lower_is_better


# --- a field of one categorical verdict -------------------------------------------------------
def norm_verdict(value: Any) -> str:
    """ "Partially covered" / "partially-covered" / " YES " are the same verdict."""
    return re.sub(r"[\s\-]+", "_", value.strip().lower()) if isinstance(value, str) else ""


def read_verdict(item: Mapping[str, Any], where: str, allowed: Sequence[str], errors: Errors) -> str:
    v = norm_verdict(item.get("verdict"))
    if v not in allowed:
        errors.append(f"{where}.verdict is {item.get('verdict')!r}; allowed: {', '.join(allowed)}")
    return v


def read_reason(item: Mapping[str, Any], where: str, errors: Errors) -> str:
    r = item.get("reason")
    if not isinstance(r, str):
        errors.append(f"{where}.reason must be a string explaining the verdict")
        return ""
    return r


def categorical(name: str, prompt: str, verdicts: Sequence[str], *, with_reference: bool = False) -> VerdictField:
    """A field ``{"verdict": one of verdicts, "reason": "..."}`` (e.g. the built-in relevance)."""
    allowed = tuple(verdicts)

    def schema(shape: Shape) -> dict[str, Any]:
        return obj({"verdict": enum(allowed), "reason": STRING})

    def read(value: Any, expected: Expected, errors: Errors) -> dict[str, str]:
        if not isinstance(value, dict):
            errors.append(f"'{name}' must be an object {{verdict, reason}}")
            return {"verdict": "", "reason": ""}
        return {"verdict": read_verdict(value, name, allowed, errors), "reason": read_reason(value, name, errors)}

    read.__qualname__ = f"categorical.{name}"  # a declaration's origin: its field name
    verdict = {"type": "object", "properties": {"verdict": {"enum": list(allowed)}, "reason": {"type": "string"}}}
    results = {name: verdict}
    return VerdictField(name, prompt, schema, read, results_schema=results, with_reference=with_reference)


def scored(field_name: str, scores: Mapping[str, float]) -> Callable[[Judgement], float | None]:
    """The value of a :func:`categorical` field's verdict by ``scores`` (None when not asked)."""

    def value(j: Judgement) -> float | None:
        verdict = j.value(field_name)
        return None if verdict is None else scores.get(verdict["verdict"])

    value.__qualname__ = f"scored.{field_name}"
    return value
