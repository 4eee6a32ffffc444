"""The ``junit`` output format (``rag_eval.outputs.junit``) into pytest's ``--junitxml``:
the properties and the gate testcases, fed to pytest's JUnit writer as its own reports
would be."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from rag_eval.outputs import writers
from rag_eval.outputs.junit import JunitParts
from rag_eval.results.model import RunResults

GATE_SUITE = "rag-eval gate"  # the testcases' classname in the JUnit file


def write_junit(config: pytest.Config, results: RunResults, write_error: str | None) -> None:
    """With --junitxml (else nothing): ``results`` (redacted already) as the junit format renders them."""
    xml = _log_xml(config)
    if xml is None:
        return
    parts: JunitParts = writers.get("junit").render(results, writers.Context(write_error=write_error))
    for name, value in parts.properties:
        xml.add_global_property(name, value)
    for name, failure in parts.testcases:
        _testcase(xml, name, failure)


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
