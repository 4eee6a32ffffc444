"""SIGTERM keeps what was computed (issue 26.6).

CI runners send SIGTERM on cancel and on their own timeout. SIGINT already writes the
results with ``verdict: incomplete`` and the cases done; SIGTERM ended the run with
rc=143 and no results, report or JUnit file. A real pytest process is started on a
user system that takes 0.5 s a question; once two cases are done it gets SIGTERM.
The plugin turns SIGTERM into the interrupt Ctrl-C raises (hooks._sigterm_as_interrupt).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.rag_eval._plugin_sandbox import PYTEST_INI, Sandbox

SLOW = '''
import os
import time
from pathlib import Path


class Sut:
    """0.5 s a question; each finished call leaves a mark, so the test knows what is done."""

    def retrieve(self, question, top_k=None):
        time.sleep(0.5)
        marks = Path(os.environ["SIGTERM_MARKS"])
        marks.mkdir(exist_ok=True)
        (marks / str(len(list(marks.iterdir())))).touch()
        return {"items": [{"id": "set", "metadata": {"doc_id": "set"}}]}
'''


def test_sigterm_writes_the_cases_done_as_an_incomplete_run_with_report_and_junit(sandbox: Sandbox) -> None:
    (sandbox.root / "pytest.ini").write_text(PYTEST_INI + "pythonpath = .\n", encoding="utf-8")
    (sandbox.root / "sandbox_sut.py").write_text(SLOW, encoding="utf-8")
    marks, junit = sandbox.root / "marks", sandbox.root / "junit.xml"
    args = sandbox.args("-m", "retrieval", "--rag-pipeline", "sandbox_sut:Sut", "--junitxml", str(junit))
    env = {**os.environ, "SIGTERM_MARKS": str(marks)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *args],
        cwd=sandbox.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120  # a bounded wait for two cases to finish
        while time.monotonic() < deadline and proc.poll() is None and len(list(marks.glob("*"))) < 2:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert sandbox.results_path.is_file(), output
    results = json.loads(sandbox.results_path.read_text(encoding="utf-8"))
    assert results["verdict"] == "incomplete" and results["run"]["complete"] is False
    assert len(results["cases"]) >= 2 and all(c["outcome"] != "error" for c in results["cases"])
    assert sandbox.results_path.with_suffix(".html").is_file()
    assert junit.is_file()
    assert "incomplete" in output
