"""Scripted judge replies and RAGChecker's call formula for the claim-level cost comparison.

:class:`ClaimsResponder` answers the native judge like ``tests.support.judge_replies``
does, but with one claim per clause of the ANSWER (split at 。；！？ and at .;!? before a
space, citation markers dropped), so the verdict's size follows the answer, as a
real judge's does. It reads from the request's schema whether the judge asked for the
diagnosis (claims with ``chunks`` / ``reference``): a pre-diagnosis request
(``bench/_prediagnosis.py``) gets the old verdict, without those fields. With
``reject_json_schema`` it refuses ``json_schema`` like llama-cpp-python does (HTTP 400),
so the judge falls back to ``json_object`` + the positional schema, the mode in which a
verdict at the 20-claim cap gets a second call.

RAGChecker (amazon-science/RAGChecker) makes, per example, 2 claim-extraction calls
(answer, reference) and, per side, (k + 1) · ⌈claims / 5⌉ checking calls (its checker
takes 5 claims per call; each batch is checked against the other side's text and each
of the k chunks): :func:`ragchecker_calls`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from tests.support.deepeval_replies import estimate_tokens, request_prompt_tokens
from tests.support.judge_replies import blocks, native_verdict
from tests.support.openai_server import Reply, Status, Step

from _prediagnosis import strip_diagnosis

_CLAUSE_END = re.compile(r"(?<=[。；！？])\s*|(?<=[.;!?])\s+")
_MARKER = re.compile(r"\s*\[\d+\]")
RAGCHECKER_BATCH = 5  # claims per checking call (RAGChecker's default batch size)
REJECT_JSON_SCHEMA = Status(400, {"error": {"message": "response_format type json_schema is not supported",
                                            "type": "invalid_request_error"}})


def answer_claims(answer: str) -> list[str]:
    """The ANSWER's clauses, markers removed: the claims a judge would list."""
    return [c for c in (_MARKER.sub("", s).strip(" 。；;.") for s in _CLAUSE_END.split(answer)) if c]


def asks_diagnosis(request: Any) -> bool:
    """Whether the request's schema has the claim-level fields (a post-diagnosis judge)."""
    rf = request.get("response_format") or {}
    schema = rf.get("json_schema", {}).get("schema") if rf.get("type") == "json_schema" else rf.get("schema")
    claim = ((schema or {}).get("properties", {}).get("claims", {}).get("items") or {})
    return "reference" in claim.get("properties", {})


class ClaimsResponder:
    """The scripted native judge with one claim per answer clause (module doc)."""

    def __init__(self, *, reject_json_schema: bool = False) -> None:
        self.reject_json_schema = reject_json_schema
        self.rejected = 0

    def __call__(self, request: Any) -> Step:
        rf = request.get("response_format") or {}
        if self.reject_json_schema and rf.get("type") == "json_schema":
            self.rejected += 1
            return REJECT_JSON_SCHEMA
        verdict = native_verdict(request)
        first = verdict["claims"][0]["chunks"]
        if "claims" in ((rf.get("schema") or {}).get("properties", {})) and "relevance" not in rf["schema"].get(
                "properties", {}):
            verdict = {"claims": []}  # the second call for claims past the cap: nothing more to add
        else:
            verdict["claims"] = [{"claim": c, "verdict": "yes", "chunks": first, "reference": "yes",
                                  "reason": "stated in [1]"} for c in answer_claims(blocks(request).get("ANSWER", ""))]
        if not asks_diagnosis(request):
            verdict = strip_diagnosis(verdict)
        content = json.dumps(verdict, ensure_ascii=False)
        return Reply(content, prompt_tokens=request_prompt_tokens(request), completion_tokens=estimate_tokens(content))


def ragchecker_calls(answer_claims_n: int, reference_claims_n: int, k: int) -> int:
    """RAGChecker's LLM calls for one example: 2 extractions + (k + 1)·⌈n/5⌉ per side."""
    return 2 + (k + 1) * (math.ceil(answer_claims_n / RAGCHECKER_BATCH)
                          + math.ceil(reference_claims_n / RAGCHECKER_BATCH))


def demo_judge_calls(base_url: str, model: str, cache: Path) -> dict[str, Any]:
    """The judge tier of the demo pipeline (every answerable demo item, answered as
    ``pytest eval_tests -m judge`` answers it) against a server that refuses json_schema
    (run on a :class:`ClaimsResponder` with ``reject_json_schema``): calls per case and
    second calls for claims, from the cases' own details."""
    from rag_eval.judge.config import JudgeConfig
    from tests.realserver.demo import demo_session, judge_env, run_judge

    config = JudgeConfig.from_env(judge_env(base_url, model), cache_dir=cache)
    session = demo_session(config)
    items = [i for i in session.dataset.items if i.expected_action == "answer"]
    run = run_judge(session, items)
    verdicts = [c for c in run.cases if c.outcome != "error"]
    calls = [c.details["judge_calls"] for c in verdicts]
    claims = [len(c.details["judge"]["claims"]) for c in verdicts]
    return {
        "cases": len(run.cases), "valid": len(verdicts), "errors": [c.message[:200] for c in run.cases
                                                                   if c.outcome == "error"],
        "judge_calls_per_case": sum(calls) / len(calls) if calls else None,
        "server_calls": run.usage.get("calls", 0),
        "server_calls_per_case": run.usage.get("calls", 0) / len(run.cases) if run.cases else None,
        "claims_second_calls": sum(1 for c in verdicts if "claims_second_call" in c.details["judge"]),
        "claims_per_case": sum(claims) / len(claims) if claims else None, "claims_max": max(claims, default=0),
        "modes": sorted({c.details["judge_mode"] for c in verdicts}),
    }
