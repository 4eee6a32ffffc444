"""The native judge as it was before the claim-level diagnosis (issue 24), for cost benchmarks only.

The baseline is the judge's prompt and schema at commit ``PREDIAGNOSIS_COMMIT`` (the
parent of ``decdd66``, which added the four checks to the verdict): read from git
history at run time, not copied, so nothing in the product carries two versions. Under
:func:`prediagnosis_judge` the current :class:`rag_eval.judge.native.NativeJudge` loop
(output modes, cut-off retry, repair, cache, accounting) runs with the old
``response_schema`` / ``grammar_schema`` / ``build_messages`` / ``validate`` /
``metrics_from``: the same code path, only the request and the verdict differ. The old
judge had no second call for claims (that came with the diagnosis), so the cap check is
disabled there too.
"""

from __future__ import annotations

import subprocess
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from rag_eval.judge import native

PREDIAGNOSIS_COMMIT = "1d28dcf4219165b2900b9cca17f874d2419bc9f1"  # decdd66^: the verdict without the diagnosis
REPO = Path(__file__).resolve().parents[1]
DIAGNOSIS_FIELDS = ("chunks", "reference", "context")  # what the diagnosis added to claims and key facts


def _module(path: str, name: str) -> types.ModuleType:
    try:
        source = subprocess.run(
            ["git", "show", f"{PREDIAGNOSIS_COMMIT}:{path}"], cwd=REPO, check=True, capture_output=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(
            f"bench baseline: cannot read {path} at {PREDIAGNOSIS_COMMIT[:12]} from git history in "
            f"{REPO} ({exc}); run from a clone with full history"
        ) from exc
    module = types.ModuleType(name)
    module.__file__ = f"{PREDIAGNOSIS_COMMIT[:12]}:{path}"
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102 -- our own git history
    return module


@contextmanager
def prediagnosis_judge() -> Iterator[None]:
    """Inside: ``NativeJudge`` sends the pre-diagnosis prompt and schema and validates the old verdict."""
    schema = _module("rag_eval/judge/schema.py", "prediagnosis_schema")
    prompt = _module("rag_eval/judge/prompt.py", "prediagnosis_prompt")

    def response_schema(
        has_reference: bool,
        n_facts: int | None = None,
        markers: Sequence[int] | None = None,
        n_chunks: int | None = None,
    ) -> dict[str, Any]:
        return schema.response_schema(has_reference, n_facts, markers)

    def grammar_schema(
        has_reference: bool, n_facts: int, markers: Sequence[int], n_chunks: int | None = None
    ) -> dict[str, Any]:
        return schema.grammar_schema(has_reference, n_facts, markers)

    with mock.patch.multiple(
        native,
        response_schema=response_schema,
        grammar_schema=grammar_schema,
        build_messages=prompt.build_messages,
        validate=schema.validate,
        parse_reply=schema.parse_reply,
        metrics_from=schema.metrics_from,
        MAX_GRAMMAR_ITEMS=10**9,
    ):
        yield


def strip_diagnosis(verdict: dict[str, Any]) -> dict[str, Any]:
    """A verdict without the fields the diagnosis added (what the old judge replied)."""
    out = dict(verdict)
    for key in ("claims", "key_facts"):
        out[key] = [{k: v for k, v in entry.items() if k not in DIAGNOSIS_FIELDS} for entry in verdict.get(key, [])]
    return out
