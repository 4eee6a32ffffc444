"""The one gate-result type: a tier gate of thresholds.toml (or a built-in one) and a
[regression] gate against a baseline are both a ``GateResult``, told apart by ``kind``.

``to_dict`` is the results file's gate row (``$defs/gate`` of rag_eval/results.schema.json)
and ``from_dict`` reads it back; the terminal line (``line``) is the one place the two
kinds differ in what they print.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rag_eval.gates.aggregate import worst_value
from rag_eval.gates.thresholds import RATE_KEYS, Gate
from rag_eval.util.escape import terminal

GateKind = Literal["tier", "regression"]
REGRESSION_TIER = "regression"  # the ``tier`` of a regression gate's row
NO_NEW_FAILURES = "no_new_failures"
SHOWN_IN_LINE = 10  # newly failing cases named on a no_new_failures line
# The statistics of a gate row (docs/thresholds.md, "Intervals, rules and power"), in file order:
# a tier gate's interval, rule and detectable drop; a regression gate's paired test.
EVIDENCE_KEYS: tuple[str, ...] = (
    "confidence",
    "ci",
    "ci_note",
    "ci_method",
    "decide",
    "decision",
    "mde",
    "mde_note",
    "diff",
    "diff_ci",
    "p_value",
    "alpha",
    "holm",
    "b",
    "c",
    "paired_n",
    "one_sided",
    "test",
)


@dataclass(frozen=True)
class GateResult:
    """One gate's outcome.

    ``metric`` is the gate's label (``retrieval.recall@5 [lang=zh]``), ``key`` the metric
    it gates. ``threshold`` is the bound the value had to meet; a regression gate has
    None when the baseline has no value to derive it from. ``worst`` names the cases
    pulling it down (golden ids for a tier gate, case keys for a regression gate).
    ``baseline``, ``baseline_n`` and ``max_drop`` are a max_drop gate's terms: the
    terminal line shows them; the results file does not carry them.
    """

    kind: GateKind
    metric: str
    tier: str
    key: str
    op: str
    threshold: float | None
    value: float | None
    n: int
    errors: int
    passed: bool
    reason: str
    worst: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    min_cases: int = 1
    numerator: float | None = None  # dialogue rates: the sums the value is the ratio of
    denominator: int | None = None
    baseline: float | None = None
    baseline_n: int = 0
    max_drop: float = 0.0
    evidence: Mapping[str, Any] = field(default_factory=dict)  # EVIDENCE_KEYS: JSON values

    @classmethod
    def of(
        cls,
        gate: Gate,
        value: float | None,
        n: int,
        errors: int,
        passed: bool,
        reason: str,
        worst: tuple[str, ...],
        numerator: float | None = None,
        denominator: int | None = None,
        evidence: Mapping[str, Any] | None = None,
    ) -> GateResult:
        """A tier gate's result: the rule ``gate`` evaluated over a run's cases."""
        return cls(
            "tier",
            gate.label,
            gate.tier,
            gate.metric,
            gate.op,
            gate.threshold,
            value,
            n,
            errors,
            passed,
            reason,
            worst,
            dict(gate.tags),
            gate.min_cases,
            numerator,
            denominator,
            evidence=dict(evidence or {}),
        )

    @classmethod
    def regression(
        cls,
        metric: str,
        key: str,
        op: str,
        threshold: float | None,
        value: float | None,
        n: int,
        errors: int,
        passed: bool,
        reason: str,
        worst: tuple[str, ...],
        baseline: float | None = None,
        baseline_n: int = 0,
        max_drop: float = 0.0,
        evidence: Mapping[str, Any] | None = None,
    ) -> GateResult:
        """A [regression] gate's result (this run against a baseline)."""
        return cls(
            "regression",
            metric,
            REGRESSION_TIER,
            key,
            op,
            threshold,
            value,
            n,
            errors,
            passed,
            reason,
            worst,
            baseline=baseline,
            baseline_n=baseline_n,
            max_drop=max_drop,
            evidence=dict(evidence or {}),
        )

    def rule(self) -> Gate:
        """The tier gate's rule (``thresholds.Gate``), as ``gate.pulling_down`` takes it."""
        return Gate(self.tier, self.key, self.op, float(self.threshold or 0.0), self.min_cases, dict(self.tags))

    def to_dict(self) -> dict[str, Any]:
        """The results file's gate row; both kinds have the same keys (a ratio adds two)."""
        ratio = {} if self.denominator is None else {"numerator": self.numerator, "denominator": self.denominator}
        return {
            **ratio,
            "metric": self.metric,
            "tier": self.tier,
            "key": self.key,
            "tags": dict(self.tags),
            "op": self.op,
            "threshold": self.threshold,
            "value": self.value,
            "n": self.n,
            "errors": self.errors,
            "min_cases": self.min_cases,
            "passed": self.passed,
            "reason": self.reason,
            "worst_cases": list(self.worst),
            **{k: self.evidence[k] for k in EVIDENCE_KEYS if k in self.evidence},
        }

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> GateResult:
        """A gate row of a (validated) results file."""
        tier = str(row["tier"])
        # Numbers as they were written (an int stays an int), so to_dict writes them back the same.
        return cls(
            kind="regression" if tier == REGRESSION_TIER else "tier",
            metric=str(row["metric"]),
            tier=tier,
            key=str(row["key"]),
            op=str(row["op"]),
            threshold=row["threshold"],
            value=row["value"],
            n=int(row["n"]),
            errors=int(row["errors"]),
            passed=bool(row["passed"]),
            reason=str(row["reason"]),
            worst=tuple(str(k) for k in row["worst_cases"]),
            tags={str(k): str(v) for k, v in row["tags"].items()},
            min_cases=int(row["min_cases"]),
            numerator=row.get("numerator"),
            denominator=row.get("denominator"),
            evidence={k: row[k] for k in EVIDENCE_KEYS if k in row},
        )

    def line(self) -> str:
        """One terminal line: label, value, bound, n, verdict and the cases to look at."""
        return _regression_line(self) if self.kind == "regression" else _tier_line(self)

    def short(self) -> str:
        """The failed gate as the one-line verdict names it, one format for every kind:
        ``label value < bound, n=N`` (the bound rounded as the gate's own line rounds it)."""
        value = "n/a" if self.value is None else f"{self.value:.4g}"
        sign = "<" if self.op == "min" else ">"
        return f"{self.metric} {value} {sign} {self.bound()}, n={self.n}"

    def bound(self) -> str:
        """The threshold as the terminal shows it: a tier gate's with ``:g``, a regression
        gate's (baseline ± drop) to 4 places, no new failures as 0; "no baseline value"."""
        if self.kind != "regression":
            return f"{self.threshold or 0.0:g}"
        if self.key == NO_NEW_FAILURES:
            return "0"
        return "no baseline value" if self.threshold is None or self.baseline is None else f"{self.threshold:.4f}"


def _tier_line(g: GateResult) -> str:
    value = "n/a" if g.value is None else f"{g.value:.4f}"
    sign = ">=" if g.op == "min" else "<="
    verdict = "PASS" if g.passed else "FAIL"
    err = ""
    plural = "s" if g.errors != 1 else ""
    if g.denominator is not None:
        err = f", {g.numerator:g}/{g.denominator}" + (
            f", {g.errors} not finished (left out; see error_rate)" if g.errors else ""
        )
    elif g.errors and g.key in RATE_KEYS:
        err = f", {g.errors} error{plural}"
    elif g.errors:
        err = f", incl. {g.errors} error{plural} counted as {worst_value(g.key, g.tier):g}"
    # golden and dialogue ids are the user's text: escaped like every other terminal line
    shown = (terminal(i, keep_newlines=False) for i in g.worst)
    tail = f"  worst: {', '.join(shown)}" if g.worst and not g.passed else ""
    why = f" ({g.reason})" if g.reason and not g.passed else ""
    ci = g.evidence.get("ci")
    shown_ci = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    rule = g.evidence.get("decide", "estimate")
    decided = f" — {rule}: {g.evidence['decision']}" if rule != "estimate" and g.evidence.get("decision") else ""
    need = f"(need {sign} {g.threshold or 0.0:g}; n={g.n}{err})"
    return f"{verdict} {g.metric} = {value}{shown_ci} {need}{why}{decided}{tail}"


def _regression_line(g: GateResult) -> str:
    verdict = "PASS" if g.passed else "FAIL"
    sign = ">=" if g.op == "min" else "<="
    plural = "s" if g.errors != 1 else ""
    err = f", {g.errors} error{plural}" if g.errors else ""
    why = f" ({g.reason})" if g.reason and not g.passed else ""
    if g.key == NO_NEW_FAILURES:
        value = "n/a" if g.value is None else f"{g.value:g}"
        shown = g.worst[:SHOWN_IN_LINE]
        more = f" … and {len(g.worst) - len(shown)} more" if len(g.worst) > len(shown) else ""
        tail = f"  newly failing: {', '.join(shown)}{more}" if shown and not g.passed else ""
        return f"{verdict} {g.metric} = {value} (need {sign} 0; n={g.n}{err}){why}{tail}"
    value = "n/a" if g.value is None else f"{g.value:.4f}"
    if g.threshold is None or g.baseline is None:
        need = "no baseline value"
    elif g.passed:  # a failure's reason already tells the baseline and the drop
        pm = "+" if g.op == "max" else "-"
        need = f"need {sign} {g.threshold:.4f} = baseline {g.baseline:.4f} {pm} {g.max_drop:g}"
    else:
        need = f"need {sign} {g.threshold:.4f}"
    return f"{verdict} {g.metric} = {value} ({need}; n={g.n}{err}, baseline n={g.baseline_n}){why}{_test_words(g)}"


def _test_words(g: GateResult) -> str:
    """A significance-tested regression gate's paired test, as the line ends with it."""
    if "p_value" not in g.evidence:
        return ""
    e = g.evidence
    diff, ci = e.get("diff"), e.get("diff_ci")
    shown = "" if diff is None else f"drop {diff:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "") + ", "
    pairs = f"b={e['b']}, c={e['c']}" if "b" in e else f"paired n={e.get('paired_n', 0)}"
    holm = e.get("holm") or {}
    adjusted = f", Holm p={holm['p_adjusted']:.3g}" if "p_adjusted" in holm else ""
    only = e.get("one_sided") or []
    left = f"; {len(only)} on one side only, left out" if only else ""
    return f"  [{e.get('test')}: {shown}{pairs}, p={e['p_value']:.3g}{adjusted}, alpha={e['alpha']:g}{left}]"
