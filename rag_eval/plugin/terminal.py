"""The plugin's terminal lines: the slow tiers' progress and the gate summary, the one
terminal writer of the gate's verdict (every line redacted there)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

from rag_eval import tiers
from rag_eval.core.case import CaseResult
from rag_eval.gates.result import GateResult
from rag_eval.outputs.labels import terminal_lines as label_lines
from rag_eval.results.build import run_warnings, usage_totals
from rag_eval.results.finalize import Line, summary_lines
from rag_eval.util.escape import terminal

if TYPE_CHECKING:
    from rag_eval.plugin.controller import Controller

JUDGE_PROGRESS_MIN = 20  # below this many slow (judge) cases pytest's own progress is enough
FAILING_SHOWN = 5  # per tier in the terminal; the report lists every case


class Progress:
    """'judge: 40/83 cases, 1.9 cases/s, ETA 23 s' about ten times over the slow tiers
    (``Tier.progress``: one model call per case), not under -q."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.total = 0  # the selected slow cases (under xdist: a worker's count, with its first case)
        self.done = 0
        self.t0 = 0.0

    def case_done(self) -> None:
        self.done += 1
        if self.done == 1:  # before the total is known (under xdist it comes with the first case)
            self.t0 = time.monotonic()
        if self.config.get_verbosity() < 0 or self.total < JUDGE_PROGRESS_MIN:
            return
        step = max(1, self.total // 10)
        if self.done % step and self.done != self.total:
            return
        elapsed = time.monotonic() - self.t0
        rate = (self.done - 1) / elapsed if elapsed > 0 and self.done > 1 else 0.0
        eta = f", ETA {(self.total - self.done) / rate:.0f} s" if rate else ""
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            writer = getattr(tr, "_tw", None)  # under xdist pytest writes the outcome letters without a path
            if writer is not None and writer.width_of_current_line:
                writer.line()
            label = "/".join(t.name for t in tiers.all_tiers() if t.progress)
            tr.write_line(f"{label}: {self.done}/{self.total} cases, {rate:.1f} cases/s{eta}")


def write_summary(config: pytest.Config, controller: Controller) -> None:
    """The gate's summary, after pytest's own summary and stats line, so that the verdict
    is the last thing the run prints (a CI log reader scrolls to the end)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if not controller.cases or tr is None or config.option.collectonly:
        return
    for line in gate_summary(config, controller):
        # the one terminal writer of the gate summary: every line redacted here
        tr.write_line(
            controller.redactor.text(line.text),
            red=line.tone == "fail",
            green=line.tone == "pass",
            yellow=line.tone == "warn",
            bold=line.bold,
        )


def gate_summary(config: pytest.Config, state: Controller) -> list[Line]:
    cases = state.sorted_cases()
    out = [Line(""), Line("=" * 30 + " rag-eval gate " + "=" * 30, bold=True)]
    out += _tier_lines(cases, quiet=config.get_verbosity() < 0)
    usage = usage_totals(cases)
    for registered in tiers.all_tiers():
        out += [Line(text) for text in registered.terminal_lines(cases, usage)]
    out += [Line(f"WARNING: {terminal(w)}", "warn", bold=True) for w in run_warnings(cases)]
    report = state.label_report
    out += [
        Line(terminal(t, keep_newlines=False)) for t in label_lines(report.to_dict() if report is not None else None)
    ]
    shard = state.run.config.shard
    if shard is not None:
        out.append(Line(f"shard {shard}: gates are evaluated over all shards by `python -m rag_eval merge`"))
    elif state.run.config.thresholds is None:
        out.append(
            Line(
                "no thresholds file: built-in gates only (error_rate = 0 per tier that ran, at least one case "
                "run per selected tier; create thresholds.toml or pass --rag-thresholds)"
            )
        )
    out += _evidence_lines(state, cases)
    gates: list[GateResult] = [*state.gates, *state.regression]
    out += summary_lines(
        gates,
        state.passed,
        state.baseline,
        bool(state.regression),
        state.baseline_lines,
        state.written,
        verdict_text=_gate_word(gates, state),
    )
    if state.write_error is not None:
        out.append(Line(f"ERROR: {state.write_error}", "fail", bold=True))
    if shard is None:
        out.append(_verdict_line(gates, state))
    return out


def _evidence_lines(state: Controller, cases: list[CaseResult]) -> list[Line]:
    """How many non-gold chunks this run showed await a person's review (docs/golden-sets.md#keeping-gold-true)."""
    pending = state.evidence_pending(cases)
    if pending is None or not pending["count"]:
        return []
    return [
        Line(
            f"evidence: {pending['count']} non-gold chunk(s) ranked above gold or in context await review "
            f"({pending['decided']} already decided): {terminal(pending['command'])}"
        )
    ]


def _tier_lines(cases: list[CaseResult], quiet: bool) -> list[Line]:
    """Each tier's outcome counts, and (not under -q) its failing cases."""
    out: list[Line] = []
    counts: dict[str, dict[str, int]] = {}
    for c in cases:
        row = counts.setdefault(c.tier, {"pass": 0, "fail": 0, "error": 0, "skip": 0})
        row[c.outcome] += 1
    for tier, row in sorted(counts.items()):
        measured = sum(1 for c in cases if c.tier == tier and tiers.of(tier).measured_only(c.details))
        apart = f" ({measured} {'negative' if measured == 1 else 'negatives'} measured, not judged)" if measured else ""
        out.append(Line(f"{tier}: " + ", ".join(f"{v} {k}" for k, v in row.items() if v) + apart))
        failing = _failing_lines(tier, [c for c in cases if c.tier == tier])
        # under -q the count and the first failing case stay: a run where every case errored shows its cause
        out += [Line(t) for t in (failing[:2] if quiet else failing)]
    return out


def _failing_lines(tier: str, cases: list[CaseResult]) -> list[str]:
    """A count per stage, then the first few cases with their diagnosis (all in the report)."""
    bad = [c for c in cases if c.outcome in ("fail", "error")]
    if not bad:
        return []
    by_stage: dict[str, int] = {}
    for c in bad:
        by_stage[c.failed_stage or "unattributed"] = by_stage.get(c.failed_stage or "unattributed", 0) + 1
    stages = ", ".join(f"{k} {v}" for k, v in sorted(by_stage.items(), key=lambda kv: (-kv[1], kv[0])))
    out = [f"  {tier} failing or erroring: {len(bad)} — by stage: {stages}"]
    for c in bad[:FAILING_SHOWN]:
        message = c.message if len(c.message) <= 240 else c.message[:239] + "…"
        said = terminal(message, keep_newlines=False) if message.strip() else "(the tier gave no message)"
        out.append(f"    {c.id} ({c.failed_stage or c.outcome}): {said}")
    if len(bad) > FAILING_SHOWN:
        out.append(f"    … and {len(bad) - FAILING_SHOWN} more (every case is in the report)")
    return out


def _gate_word(gates: list[GateResult], state: Controller) -> str | None:
    """The ``gate:`` line of a run that has no pass/fail verdict of its own, else None."""
    n_passed = sum(1 for g in gates if g.passed)
    if state.write_error is not None:
        return f"gate: FAILED (the results file was not written; {n_passed}/{len(gates)} gates passed)"
    if not state.complete:
        return f"gate: INCOMPLETE ({n_passed}/{len(gates)} gates passed over the {len(state.cases)} cases run)"
    return None


def _verdict_line(gates: list[GateResult], state: Controller) -> Line:
    """One line, last: the verdict, the failed gates with their numbers, where the report is."""
    failed = [g for g in gates if not g.passed]
    report = f" — report: {state.written.report}" if state.written is not None and state.written.report else ""
    if state.write_error is not None:
        return Line(
            "rag-eval gate FAILED: the results file could not be written (the ERROR above says why)", "fail", bold=True
        )
    if not state.complete:
        return Line(
            f"rag-eval gate INCOMPLETE: the run stopped before every selected case ran (-x, --maxfail, Ctrl-C or "
            f'SIGTERM); {len(state.cases)} cases kept, verdict "incomplete"{report}',
            "fail",
            bold=True,
        )
    if not gates:
        return Line(f"rag-eval gate: no gates evaluated{report}", "warn", bold=True)
    if state.passed:
        return Line(f"rag-eval gate PASSED: {len(gates)} of {len(gates)} gates passed{report}", "pass", bold=True)
    shown = "; ".join(g.short() for g in failed[:3]) + (f"; {len(failed) - 3} more" if len(failed) > 3 else "")
    why = f" ({shown})" if failed else " (a results, report or summary file could not be written)"
    return Line(f"rag-eval gate FAILED: {len(failed)} of {len(gates)} gates failed{why}{report}", "fail", bold=True)
