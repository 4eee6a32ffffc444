"""The ``junit`` format: what the run adds to ``--junitxml``.

The verdict and the failed gates as testsuite properties, and one ``rag-eval gate``
testcase per gate of a complete run (a failure for each failed gate, and for a results
file that could not be written), so a CI test viewer shows a failed gate as a failing
test, not a green build that exited 1. Every text has its control and bidi characters
escaped (``escape.terminal``); the results are redacted already (``writers.redacted``).
pytest's own JUnit writer puts these in its file (``rag_eval.plugin.junit``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_eval.outputs.writers import Context, register
from rag_eval.results.model import RunResults
from rag_eval.util.escape import terminal

RESULTS_FILE_CASE = "results file"  # the testcase of a results file that could not be written


@dataclass(frozen=True)
class JunitParts:
    properties: tuple[tuple[str, str], ...]  # (name, value) testsuite properties
    testcases: tuple[tuple[str, str | None], ...]  # (name, failure text or None when passed)


def _shown(text: str) -> str:
    return terminal(text, keep_newlines=False)


class JunitWriter:
    name = "junit"
    append = False

    def render(self, results: RunResults, context: Context) -> JunitParts:
        properties = [("rag_eval_verdict", _shown(results.verdict))]
        for gate in results.gates:
            if not gate.passed:
                number = "n/a" if gate.value is None else f"{gate.value:.4f}"
                properties.append(
                    (
                        _shown(f"rag_eval_failed_gate {gate.metric}"),
                        _shown(f"{number} (threshold {gate.bound()}, n={gate.n})"),
                    )
                )
        # an incomplete run and a shard decide no gate: no gate testcase
        gates = results.gates if results.verdict in ("pass", "fail") else ()
        cases = [(_shown(g.metric), None if g.passed else _shown(g.line())) for g in gates]
        if context.write_error is not None:
            cases.append((RESULTS_FILE_CASE, _shown(context.write_error)))
        return JunitParts(tuple(properties), tuple(cases))


register(JunitWriter())
