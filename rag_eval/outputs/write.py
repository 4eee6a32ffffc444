"""Write a run's outputs: the results file, then the HTML report and the Markdown summary.

The results are redacted once (``writers.redacted``: the run's secrets, ``Outputs.redactor``)
before any writer sees them, so no file holds a key that a server, a model or a system
echoed. Order matters for "lose no result already computed": the results file is written
before anything that can fail for other reasons (a template, a summary path), and a
failure there is reported without touching it.
"""

from __future__ import annotations

from pathlib import Path

from rag_eval.outputs import writers
from rag_eval.results.build import write_results
from rag_eval.results.finalize import Outputs, Written
from rag_eval.results.model import RunResults

# the files after the results file, in the order written: (format, what the problem line calls it)
AFTER_RESULTS: tuple[tuple[str, str], ...] = (("html", "HTML report"), ("markdown", "Markdown summary"))


def write_outputs(run_results: RunResults, outputs: Outputs) -> Written:
    """Write the results JSON, then the report and the summary, all from the redacted
    results (``Written.shown``, for the writers that come later: JUnit).

    The results file is written first and a failing report or summary never removes it;
    when the results file itself cannot be written, or is not valid against the schema,
    ``ResultsWriteError`` (an OSError) says why, nothing else is written and an existing
    file stays as it was (an invalid one is kept as ``<name>.invalid.json``). The summary
    is *appended* (as ``$GITHUB_STEP_SUMMARY`` expects), atomically."""
    results = writers.redacted(run_results, outputs.redactor)
    built = results.to_dict()
    warnings = tuple(write_results(outputs.results, built, since=outputs.started))
    problems: list[str] = []
    context = writers.Context(artifact_url=outputs.artifact_url)
    paths: dict[str, Path | None] = {"html": outputs.report, "markdown": outputs.summary}
    written: dict[str, Path | None] = {}
    for name, what in AFTER_RESULTS:
        path = paths[name]
        written[name] = None
        if path is None:
            continue
        try:
            written[name] = writers.write(name, results, path, context)
        except Exception as exc:  # noqa: BLE001 - reported, and the results are already on disk
            problems.append(outputs.redactor.text(f"{what} {path} not written: {type(exc).__name__}: {exc}"))
    return Written(outputs.results, written["html"], written["markdown"], tuple(problems), warnings, results)
