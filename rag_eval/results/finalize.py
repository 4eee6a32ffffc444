"""The end of a run, shared by the pytest plugin and ``python -m rag_eval merge``:
compare with a baseline, evaluate the regression gates, decide the verdict, build the
results once (``conclude``), and say what was written (``Outputs`` in, ``Written`` out:
``rag_eval.outputs.write`` writes them, redacted once with ``Outputs.redactor``) in the
end-of-run summary lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from rag_eval.core.case import CaseResult
from rag_eval.gates.aggregate import MetricValue, aggregate_all
from rag_eval.gates.gate import verdict
from rag_eval.gates.regression import evaluate_regression
from rag_eval.gates.result import GateResult
from rag_eval.gates.thresholds import Thresholds
from rag_eval.gates.uncertainty import DEFAULT_CONFIDENCE
from rag_eval.results.baseline import BaselineMismatch, check_compatible, compare, load_baseline, tier_notes
from rag_eval.results.build import build_run_results
from rag_eval.results.model import RunResults, Verdict
from rag_eval.util.redact import Redactor, redactor_from_env

Mismatch = Literal["error", "warn"]
MISMATCH_MODES: tuple[str, ...] = ("error", "warn")


@dataclass(frozen=True)
class Baseline:
    """A baseline given for the run: loaded and compatible, or refused with the reason."""

    path: Path
    data: Mapping[str, Any] | None
    refused: str | None = None

    @classmethod
    def load(cls, path: Path, current_run: Mapping[str, Any], mismatch: Mismatch = "error") -> Baseline:
        """Load and check ``path`` against the run's dataset.

        An unreadable file is always an error (BaselineError). A baseline of another
        dataset, or of another results version, is an error in ``error`` mode; in
        ``warn`` mode it is kept as *refused*: the run goes on without a comparison and
        says why (CI on a PR that edits the golden set, or the first run of a release
        that changes the results format against main's older file).
        """
        try:
            data = load_baseline(path)
            check_compatible(current_run, data)
        except BaselineMismatch as exc:
            if mismatch == "error":
                raise
            return cls(path, None, f"baseline {path} not compared: {exc}")
        return cls(path, data)


@dataclass(frozen=True)
class Comparison:
    """What a baseline adds to a run's results: the diff the reports show (or why none
    was made) and the [regression] gates. Empty without a baseline."""

    diff: Mapping[str, Any] | None = None
    refused: str | None = None
    gates: tuple[GateResult, ...] = ()

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)


def compare_run(
    cases: Sequence[CaseResult],
    gates: Sequence[GateResult],
    metrics: Mapping[str, MetricValue],
    thresholds: Thresholds | None,
    baseline: Baseline | None,
) -> Comparison:
    """The comparison of a run's cases, gates and aggregates with ``baseline``."""
    if baseline is None:
        return Comparison()
    if baseline.data is None:
        return Comparison(refused=baseline.refused)
    # The results file's shape of what the comparison reads (the baseline is a file too).
    current = {
        "gates": [g.to_dict() for g in gates],
        "cases": [c.to_dict() for c in cases],
        "metrics_n": {k: v.to_dict() for k, v in metrics.items()},
    }
    diff = compare(current, baseline.data, str(baseline.path))
    regression = evaluate_regression(thresholds, current, baseline.data) if thresholds is not None else []
    return Comparison(diff, None, tuple(regression))


@dataclass(frozen=True)
class Concluded:
    """A run's results and how they came about: ``passed`` is every gate (regression
    gates included) of a complete run; a shard passes (the merge gates it)."""

    results: RunResults
    comparison: Comparison
    passed: bool


def conclude(
    run: Mapping[str, Any],
    cases: Sequence[CaseResult],
    gates: Sequence[GateResult],
    thresholds: Thresholds | None,
    baseline: Baseline | None,
    items: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    complete: bool = True,
    sharded: bool = False,
    system: Mapping[str, str] | None = None,
) -> Concluded:
    """Compare with the baseline, decide the verdict, then build the results once.

    An incomplete run (stopped early) and a shard are not compared: their verdicts are
    ``incomplete`` and ``shard``."""
    ordered = sorted(cases, key=lambda c: (c.tier, c.id))
    metrics = aggregate_all(ordered, thresholds.confidence if thresholds is not None else DEFAULT_CONFIDENCE)
    comparison = (
        compare_run(ordered, gates, metrics, thresholds, baseline) if complete and not sharded else Comparison()
    )
    passed = complete and verdict(gates) and comparison.passed
    unevaluated = regression_unevaluated(thresholds) if complete and not sharded and baseline is None else None
    word: Verdict = "incomplete" if not complete else "shard" if sharded else "pass" if passed else "fail"
    results = build_run_results(
        run,
        ordered,
        [*gates, *comparison.gates],
        word,
        items,
        metrics=metrics,
        system=system,
        baseline=comparison.diff,
        baseline_refused=comparison.refused,
        warnings=[unevaluated] if unevaluated else [],
    )
    return Concluded(results, comparison, passed)


REGRESSION_UNEVALUATED = "[regression] gates not evaluated"


def regression_unevaluated(thresholds: Thresholds | None) -> str | None:
    """The warning of a run whose thresholds have [regression] gates and that got no
    baseline (a CI job whose baseline download failed must not go green silently)."""
    rules = thresholds.regression if thresholds is not None else None
    if not rules:
        return None
    names = (["no_new_failures"] if rules.no_new_failures else []) + [f"max_drop {d.metric}" for d in rules.max_drops]
    return (
        f"{REGRESSION_UNEVALUATED}: no --rag-baseline was given, so {', '.join(names)} decided nothing; "
        "give --rag-baseline PATH (e.g. main's results file) to gate on them"
    )


@dataclass(frozen=True)
class Outputs:
    results: Path
    report: Path | None = None
    summary: Path | None = None
    artifact_url: str | None = None
    # every secret of the run; the default knows the environment's (python -m rag_eval merge)
    redactor: Redactor = field(default_factory=redactor_from_env)
    # when the run started (time.time()): a results file changed since was written by another
    # run; None: when this process loaded the writer (rag_eval.results.build.PROCESS_START)
    started: float | None = None


@dataclass(frozen=True)
class Written:
    """What ``write_outputs`` wrote: a path is None when it was not asked for or failed
    (the failure is one line of ``problems``)."""

    results: Path
    report: Path | None
    summary: Path | None
    problems: tuple[str, ...]
    warnings: tuple[str, ...] = ()  # e.g. another run wrote the same results file meanwhile
    # the results every writer rendered (redacted once): for the writers that come later (JUnit)
    shown: RunResults | None = None


class GateLine(Protocol):
    """A gate or regression gate result, as far as the summary needs it."""

    @property
    def passed(self) -> bool: ...

    def line(self) -> str: ...


@dataclass(frozen=True)
class Line:
    """One line of the end-of-run summary; ``tone`` picks the terminal colour."""

    text: str
    tone: Literal["pass", "fail", "warn", "plain"] = "plain"
    bold: bool = False


def summary_lines(
    gates: Sequence[GateLine],
    passed: bool,
    baseline: Baseline | None,
    regression_evaluated: bool,
    comparison: Sequence[str],
    written: Written | None,
    results_note: str = "",
    verdict_text: str | None = None,
) -> list[Line]:
    """The gate, baseline, verdict and output lines that the pytest terminal summary and
    ``python -m rag_eval merge`` both print (``gates`` include the regression gates;
    ``comparison`` is ``baseline_lines(results)``; ``verdict_text`` replaces the ``gate:`` line,
    e.g. for a run that stopped early or whose results file was not written)."""
    out = [Line(g.line(), "pass" if g.passed else "fail") for g in gates]
    if baseline is not None and baseline.data is not None and not regression_evaluated:
        out.append(Line("baseline compared; no [regression] gates in the thresholds file"))
    out += [Line(text, "warn", bold=True) if text.startswith("WARNING") else Line(text) for text in comparison]
    if gates:
        n_failed = sum(1 for g in gates if not g.passed)
        said = (
            verdict_text
            or f"gate: {'PASSED' if passed else 'FAILED'} ({len(gates) - n_failed}/{len(gates)} gates passed)"
        )
        out.append(Line(said, "pass" if passed else "fail", bold=True))
    if written is not None:
        out.append(Line(f"results: {written.results}{results_note}"))
        out += [Line(f"WARNING: {warning}", "warn", bold=True) for warning in written.warnings]
        out += [
            Line(f"{name}: {path}") for name, path in (("report", written.report), ("summary", written.summary)) if path
        ]
        out += [Line(f"ERROR: {problem}", "fail", bold=True) for problem in written.problems]
    return out


def baseline_lines(results: RunResults) -> list[str]:
    """Terminal lines about the comparison: what was compared, and what changed."""
    refused = results.run.get("baseline_refused")
    if refused:
        return [f"WARNING: {refused}"]
    unevaluated = [str(w) for w in results.run.get("warnings") or () if str(w).startswith(REGRESSION_UNEVALUATED)]
    if unevaluated:
        return [f"WARNING: {w}" for w in unevaluated]
    diff = results.baseline
    if not diff:
        return []
    t = diff["transitions"]
    commit = (diff.get("commit") or "")[:10] or "unknown commit"
    counts = ", ".join(f"{len(t[k])} {k.replace('_to_', '→').replace('_', ' ')}" for k in TRANSITION_ORDER)
    lines = [f"baseline: {diff['path']} ({commit}): {counts}"]
    lines += [f"  {note}" for note in tier_notes(diff)]
    for row in t["pass_to_fail"][:10]:
        stage = f" at {row['failed_stage']}" if row.get("failed_stage") else ""
        lines.append(f"  newly failing: {row['key']} ({row['was']} → {row['now']}{stage})")
    more = len(t["pass_to_fail"]) - 10
    if more > 0:
        lines.append(f"  … and {more} more newly failing (see the report)")
    return lines


TRANSITION_ORDER: Sequence[str] = ("pass_to_fail", "fail_to_pass", "stable_to_flaky", "new", "removed")
