"""A per-case time limit (issue 26.9): ``--rag-case-timeout SECONDS``.

A golden item with a 5 MB question kept the pipeline busy past 300 s and the run
wrote no results. The loaders now refuse questions over the documented length
(docs/golden-sets.md#limits); the per-case limit is the second half: a case whose
system call outlives it ends as an ``error`` naming the limit, the other cases are
measured, the run completes and writes its results. Scaled down here: a user system
that sleeps on one question, a 1 s limit. The session runs each case within the limit (session.within).
"""

from __future__ import annotations

import pytest

from tests.rag_eval._plugin_sandbox import IDS, PYTEST_INI, Sandbox

SLOW_ON_ONE = '''
import time


class Sut:
    """Answers at once, except for one question it works on for 10 s (a 5 MB question's embedding)."""

    def retrieve(self, question, top_k=None):
        if "derivative" in question:
            time.sleep(10)
        return {"items": [{"id": "set", "metadata": {"doc_id": "set"}}]}
'''


def test_a_case_past_the_time_limit_is_an_error_and_the_run_goes_on(sandbox: Sandbox) -> None:
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(SLOW_ON_ONE, encoding="utf-8")
    sandbox.write_thresholds("[retrieval]\npass_rate = { min = 0.0 }\nerror_rate = { max = 0.0 }\n")

    result = sandbox.run("-m", "retrieval", "--rag-pipeline", "sandbox_sut:Sut", "--rag-case-timeout", "1")

    cases = sandbox.cases()
    assert set(cases) == set(IDS), result.stdout.str()
    slow = cases["q-deriv"]
    assert slow["outcome"] == "error" and "--rag-case-timeout" in slow["message"] and "1" in slow["message"]
    assert all(c["outcome"] != "error" for cid, c in cases.items() if cid != "q-deriv")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an error is an error: error_rate = 0 fails
