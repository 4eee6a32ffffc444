"""A gate's statistics as the outputs say them: its interval or paired drop, the rule that
decided it, the paired test with Holm's correction and the detectable drop.

``Statistics.of`` reads a gate's evidence (``GateResult.evidence``: the ``EVIDENCE_KEYS``
of the results file's gate row, each optional) once into typed fields; the HTML report,
the Markdown summary and the charts read those fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.gates.result import GateResult

ONE_SIDED_SHOWN = 5  # case keys named in the one-sided sentence


@dataclass(frozen=True)
class Statistics:
    """A gate row's statistics (docs/thresholds.md, "Intervals, rules and power"); None: not given."""

    ci: tuple[float, float] | None = None  # the value's interval at the run's confidence
    ci_note: str = ""  # why there is no interval
    decide: str = "estimate"  # the rule: estimate, clearly_below, clearly_above
    decision: str = ""  # what the rule said
    mde_note: str = ""  # the detectable drop, in words
    diff: float | None = None  # a regression gate: the paired drop from the baseline
    diff_ci: tuple[float, float] | None = None
    p_value: float | None = None
    alpha: float | None = None
    test: str = "paired test"
    pairs: str = ""  # "b=3, c=1" (McNemar's discordant pairs) or "paired n=40"
    holm_sentence: str = ""
    holm_p: float | None = None  # Holm-adjusted p
    one_sided: tuple[str, ...] = ()  # cases on one side only, left out of the comparison

    @classmethod
    def of(cls, gate: GateResult) -> Statistics:
        e = {k: gate.evidence.get(k) for k in _READ}
        holm = e["holm"] if isinstance(e["holm"], Mapping) else {}
        pairs = f"b={e['b']}, c={e['c']}" if e["b"] is not None else f"paired n={e['paired_n'] or 0}"
        return cls(
            ci=_pair(e["ci"]),
            ci_note=str(e["ci_note"] or ""),
            decide=str(e["decide"] or "estimate"),
            decision=str(e["decision"] or ""),
            mde_note=str(e["mde_note"] or ""),
            diff=e["diff"],
            diff_ci=_pair(e["diff_ci"]),
            p_value=e["p_value"],
            alpha=e["alpha"],
            test=str(e["test"] or "paired test"),
            pairs=pairs,
            holm_sentence=str(holm["sentence"]) if holm and holm["sentence"] else "",
            holm_p=holm["p_adjusted"] if "p_adjusted" in holm else None,
            one_sided=tuple(str(k) for k in e["one_sided"] or ()),
        )

    @property
    def interval_text(self) -> str:
        """``[0.70, 0.85]``, a regression gate's paired drop ``drop 0.031 [0.010, 0.052]``, or ""."""
        if self.ci:
            return f"[{self.ci[0]:.2f}, {self.ci[1]:.2f}]"
        if self.diff is None:
            return ""
        dci = self.diff_ci
        return f"drop {self.diff:.3f}" + (f" [{dci[0]:.3f}, {dci[1]:.3f}]" if dci else "")

    def sentences(self) -> list[str]:
        """The report's sentences: the rule and its decision (or why there is no interval),
        a regression gate's paired test with Holm, the cases left out, the detectable drop."""
        out: list[str] = []
        if self.decision:
            out.append(f"decided by {self.decide}: {self.decision}")
        elif self.ci_note:
            out.append(f"no interval: {self.ci_note}")
        if self.p_value is not None:
            out.append(f"{self.test}: {self.pairs}, p={self.p_value:.3g}, alpha={self.alpha:g}")
        if self.holm_sentence:
            out.append(self.holm_sentence)
        if self.one_sided:
            out.append(self.one_sided_sentence())
        if self.mde_note:
            out.append(self.mde_note)
        return out

    def one_sided_sentence(self) -> str:
        only = self.one_sided
        more = f" … and {len(only) - ONE_SIDED_SHOWN} more" if len(only) > ONE_SIDED_SHOWN else ""
        return (
            f"{len(only)} case(s) on one side only, left out of the comparison: "
            + ", ".join(only[:ONE_SIDED_SHOWN])
            + more
        )


_DROP = re.compile(r"cannot see a drop smaller than ([0-9.eE+-]+)")


def reason_line(gate: GateResult, stats: Statistics) -> str:
    """The gate's reason in one line that repeats none of the row's other columns (value,
    interval, threshold, n): a failed gate's own reason, else the margin to the threshold
    and the rule; then what the statistics cannot see (no interval, the detectable drop)."""
    parts = [gate.reason] if gate.reason else [_margin(gate, stats)]
    if stats.ci is None and stats.ci_note and stats.diff is None:
        parts.append("no interval: " + _clause(stats.ci_note))
    drop = _DROP.search(stats.mde_note)
    if drop:
        parts.append(f"blind to drops < {drop.group(1)}")
    elif stats.mde_note and stats.mde_note != stats.ci_note and "detectable drop is unknown" in stats.mde_note:
        parts.append("no spread: detectable drop unknown")
    if gate.errors:
        parts.append(f"{gate.errors} error{'s' * (gate.errors != 1)} counted as the worst value")
    return " · ".join(p for p in parts if p)


def _margin(gate: GateResult, stats: Statistics) -> str:
    if gate.value is None or gate.threshold is None:
        return "passed" if gate.passed else "failed"
    gap = abs(float(gate.value) - float(gate.threshold))
    rule = "" if stats.decide == "estimate" else f" (rule {stats.decide})"
    if gap < 5e-5:
        return f"at the threshold{rule}"
    return f"{'margin' if gate.passed else 'misses by'} {_num(gap)}{rule}"


def _clause(text: str) -> str:
    """A note's first clause ("every unit's rate equals 0: the spread is unknown" → "every unit's rate equals 0")."""
    return text.split(":", 1)[0].strip()


def _num(v: float) -> str:
    return f"{v:.3g}"


def reasoning(gate: GateResult, stats: Statistics) -> list[str]:
    """Every sentence of the gate's full reasoning, each once: its reason, how the rule
    decided, the paired test and Holm, the cases left out, the detectable drop."""
    out: list[str] = []
    for text in [gate.reason, *stats.sentences(), stats.ci_note and f"no interval: {stats.ci_note}"]:
        if text and text not in out and not any(text in seen for seen in out):
            out.append(text)
    return out


# the evidence keys read (``b``, ``c``, ``paired_n`` and ``holm`` make ``pairs`` and the Holm fields)
_READ: tuple[str, ...] = (
    "ci",
    "ci_note",
    "decide",
    "decision",
    "mde_note",
    "diff",
    "diff_ci",
    "p_value",
    "alpha",
    "test",
    "b",
    "c",
    "paired_n",
    "holm",
    "one_sided",
)


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        return float(value[0]), float(value[1])
    return None
