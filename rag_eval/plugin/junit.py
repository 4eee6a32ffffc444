"""What the run adds to ``--junitxml``: the verdict and the failed gates as testsuite
properties, and one ``rag-eval gate`` testcase per gate (a failure for each failed gate,
and for a results file that could not be written), so a CI test viewer shows a failed
gate as a failing test, not a green build that exited 1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import pytest

from rag_eval.escape import terminal
from rag_eval.gates.result import GateResult
from rag_eval.redact import Redactor
from rag_eval.results.model import RunResults

GATE_SUITE = "rag-eval gate"  # the testcases' classname in the JUnit file


def write_junit(
    config: pytest.Config, results: RunResults, gates: Sequence[GateResult], redactor: Redactor, write_error: str | None
) -> None:
    """With --junitxml (else nothing): the properties and the gate testcases, every text
    redacted and with control and bidi characters escaped (``escape.terminal``)."""
    xml = _log_xml(config)
    if xml is None:
        return
    shown = lambda text: redactor.text(terminal(text, keep_newlines=False))  # noqa: E731
    xml.add_global_property("rag_eval_verdict", shown(results.verdict))
    for gate in results.gates:
        if not gate.passed:
            number = "n/a" if gate.value is None else f"{gate.value:.4f}"
            xml.add_global_property(
                shown(f"rag_eval_failed_gate {gate.metric}"),
                shown(f"{number} (threshold {gate.threshold}, n={gate.n})"),
            )
    for gate in gates:
        _testcase(xml, shown(gate.metric), None if gate.passed else shown(gate.line()))
    if write_error is not None:
        _testcase(xml, "results file", shown(write_error))


def _log_xml(config: pytest.Config) -> Any:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - pytest moved its private module
        return None
    return config.stash.get(xml_key, None)


def _testcase(xml: Any, name: str, failure: str | None) -> None:
    """One testcase, fed to the JUnit writer as pytest's own reports would be (call, then teardown)."""
    nodeid = f"{GATE_SUITE}::{name}"
    location = (GATE_SUITE, None, name)
    outcome: Literal["passed", "failed"] = "passed" if failure is None else "failed"
    xml.pytest_runtest_logreport(pytest.TestReport(nodeid, location, {}, outcome, failure, "call"))
    xml.pytest_runtest_logreport(pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"))
