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
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import fmt, md_table, ratio
from _prediagnosis import strip_diagnosis

from tests.support.deepeval_replies import estimate_tokens, request_prompt_tokens
from tests.support.judge_replies import blocks, native_verdict
from tests.support.openai_server import Reply, Status, Step

_CLAUSE_END = re.compile(r"(?<=[。；！？])\s*|(?<=[.;!?])\s+")
_MARKER = re.compile(r"\s*\[\d+\]")
RAGCHECKER_BATCH = 5  # claims per checking call (RAGChecker's default batch size)
REJECT_JSON_SCHEMA = Status(
    400, {"error": {"message": "response_format type json_schema is not supported", "type": "invalid_request_error"}}
)


def answer_claims(answer: str) -> list[str]:
    """The ANSWER's clauses, markers removed: the claims a judge would list."""
    return [c for c in (_MARKER.sub("", s).strip(" 。；;.") for s in _CLAUSE_END.split(answer)) if c]


def asks_diagnosis(request: Any) -> bool:
    """Whether the request's schema has the claim-level fields (a post-diagnosis judge)."""
    rf = request.get("response_format") or {}
    schema = rf.get("json_schema", {}).get("schema") if rf.get("type") == "json_schema" else rf.get("schema")
    claim = (schema or {}).get("properties", {}).get("claims", {}).get("items") or {}
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
            "properties", {}
        ):
            verdict = {"claims": []}  # the second call for claims past the cap: nothing more to add
        else:
            verdict["claims"] = [
                {"claim": c, "verdict": "yes", "chunks": first, "reference": "yes", "reason": "stated in [1]"}
                for c in answer_claims(blocks(request).get("ANSWER", ""))
            ]
        if not asks_diagnosis(request):
            verdict = strip_diagnosis(verdict)
        content = json.dumps(verdict, ensure_ascii=False)
        return Reply(content, prompt_tokens=request_prompt_tokens(request), completion_tokens=estimate_tokens(content))


def ragchecker_calls(answer_claims_n: int, reference_claims_n: int, k: int) -> int:
    """RAGChecker's LLM calls for one example: 2 extractions + (k + 1)·⌈n/5⌉ per side."""
    return 2 + (k + 1) * (
        math.ceil(answer_claims_n / RAGCHECKER_BATCH) + math.ceil(reference_claims_n / RAGCHECKER_BATCH)
    )


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
        "cases": len(run.cases),
        "valid": len(verdicts),
        "errors": [c.message[:200] for c in run.cases if c.outcome == "error"],
        "judge_calls_per_case": sum(calls) / len(calls) if calls else None,
        "server_calls": run.usage.get("calls", 0),
        "server_calls_per_case": run.usage.get("calls", 0) / len(run.cases) if run.cases else None,
        "claims_second_calls": sum(1 for c in verdicts if "claims_second_call" in c.details["judge"]),
        "claims_per_case": sum(claims) / len(claims) if claims else None,
        "claims_max": max(claims, default=0),
        "modes": sorted({c.details["judge_mode"] for c in verdicts}),
    }


# --- RAGChecker against the same scripted server -------------------------------------------
# the text to extract from is the last block of the prompt (the earlier ones are RAGChecker's examples)
_RC_ANSWER = re.compile(r".*### Candidate Answer:\n(?P<text>.*?)\n\n### KG:\s*$", re.S)
_RC_INPUT = re.compile(r".*### Input:\n(?P<text>.*?)\n\n### KG:\s*$", re.S)
_RC_CLAIMS = re.compile(r"### Claims:\n(?P<claims>.*?)\n\n\nYour answer", re.S)


class RagcheckerResponder:
    """RAGChecker's two prompt kinds, answered as :class:`ClaimsResponder` answers the
    native judge: a triplet ``("answer", "states", clause)`` per clause of the text to
    extract from, and ``Entailment`` for every claim of a checking prompt. Counts the
    calls of each kind and their estimated tokens (RAGChecker reports none)."""

    def __init__(self) -> None:
        self.counts = {"extraction_calls": 0, "checking_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def __call__(self, request: Any) -> Step:
        reply = _ragchecker_reply(request)
        assert isinstance(reply, Reply) and reply.prompt_tokens is not None and reply.completion_tokens is not None
        self.counts["checking_calls" if _RC_CLAIMS.search(_prompt(request)) else "extraction_calls"] += 1
        self.counts["prompt_tokens"] += reply.prompt_tokens
        self.counts["completion_tokens"] += reply.completion_tokens
        return reply


def _prompt(request: Any) -> str:
    return "\n".join(str(m.get("content", "")) for m in request["messages"])


def _ragchecker_reply(request: Any) -> Step:
    prompt = _prompt(request)
    checking = _RC_CLAIMS.search(prompt)
    if checking:
        content = "\n".join("Entailment" for line in checking.group("claims").splitlines() if line.strip())
    else:
        match = _RC_ANSWER.search(prompt) or _RC_INPUT.search(prompt)
        text = match.group("text") if match else ""
        content = "\n".join(f'("answer", "states", "{c.replace(chr(34), chr(39))}")' for c in answer_claims(text))
    return Reply(content, prompt_tokens=request_prompt_tokens(request), completion_tokens=estimate_tokens(content))


def ragchecker_cases(items: Any) -> dict[str, Any]:
    """The cases in RAGChecker's input format (``RAGResults.from_json``)."""
    return {
        "results": [
            {
                "query_id": it.case_id,
                "query": it.question,
                "gt_answer": it.reference,
                "response": it.answer,
                "retrieved_context": [{"doc_id": f"{i}", "text": text} for i, (_, text) in enumerate(it.context, 1)],
            }
            for it in items
        ]
    }


def ragchecker_run(srv: Any, root: Path, items: Sequence[Any], python: str, model: str) -> dict[str, Any]:
    """RAGChecker (``bench/_ragchecker_run.py`` in the venv of ``python``) on the same cases
    against the same scripted server; calls counted at the server, tokens estimated there."""
    cases = root / "ragchecker_cases.json"
    cases.write_text(json.dumps(ragchecker_cases(items), ensure_ascii=False), encoding="utf-8")
    responder = RagcheckerResponder()
    srv.set_default("chat", responder)
    before = srv.calls("chat")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [python, str(Path(__file__).parent / "_ragchecker_run.py"), str(cases), srv.base_url, model],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"source": "run failed", "returncode": proc.returncode, "stderr_tail": proc.stderr[-2000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    n = len(items)
    calls = srv.calls("chat") - before
    return {
        "source": f"ragchecker run ({python})",
        "calls_per_case": calls / n,
        "server_calls": calls,
        **responder.counts,
        "prompt_tokens_per_case": responder.counts["prompt_tokens"] / n,
        "completion_tokens_per_case": responder.counts["completion_tokens"] / n,
        "total_tokens_per_case": (responder.counts["prompt_tokens"] + responder.counts["completion_tokens"]) / n,
        "claims": out["claims"],
        "metrics": out["metrics"],
        "wall_s_incl_start": wall,
        "formula_calls_per_case": sum(
            ragchecker_calls(a, r, len(it.context)) for (a, r), it in zip(out["claims"], items)
        )
        / n,
    }


def print_diagnosis_table(runs: dict[str, Any], deepeval: dict[str, Any], deepeval_label: str, n: int) -> None:
    rows: list[list[Any]] = []
    for mode in ("json_schema", "json_object"):
        w, wo = runs[f"with_{mode}"], runs[f"without_{mode}"]
        for label, r in (("without diagnosis (pre-issue-24 prompt + schema)", wo), ("with diagnosis", w)):
            rows.append(
                [
                    f"native, {mode}: {label}",
                    r["calls_per_case"],
                    r["judge_calls_per_case"],
                    r["claims_second_calls"],
                    r["prompt_tokens_per_case"],
                    r["completion_tokens_per_case"],
                    r["total_tokens_per_case"],
                ]
            )
        rows.append(
            [
                f"native, {mode}: with / without",
                ratio(w["calls_per_case"], wo["calls_per_case"]),
                ratio(w["judge_calls_per_case"], wo["judge_calls_per_case"]),
                "–",
                ratio(w["prompt_tokens_per_case"], wo["prompt_tokens_per_case"]),
                ratio(w["completion_tokens_per_case"], wo["completion_tokens_per_case"]),
                ratio(w["total_tokens_per_case"], wo["total_tokens_per_case"]),
            ]
        )
    rows.append(
        [
            deepeval_label,
            deepeval["calls_per_case"],
            "–",
            "–",
            deepeval["prompt_tokens_per_case"],
            deepeval["completion_tokens_per_case"],
            deepeval["total_tokens_per_case"],
        ]
    )
    rc = runs["ragchecker_formula"]
    rows.append(
        ["RAGChecker (call formula; reference claims = key facts)", rc["calls_per_case"], "–", "–", "–", "–", "–"]
    )
    run = runs.get("ragchecker_run")
    if run and "calls_per_case" in run:
        rows.append(
            [
                "RAGChecker (run, same server)",
                run["calls_per_case"],
                "–",
                "–",
                run["prompt_tokens_per_case"],
                run["completion_tokens_per_case"],
                run["total_tokens_per_case"],
            ]
        )
    elif run:
        print(f"RAGChecker run failed ({run['returncode']}): {run['stderr_tail'][-600:]}", file=sys.stderr)
    print(f"\n### Claim-level diagnosis: cost per case ({n} demo_maths cases, one claim per answer clause)\n")
    print(
        md_table(
            [
                "judge",
                "LLM calls/case (server)",
                "judge calls/case",
                "second calls (claims)",
                "prompt tok/case",
                "completion tok/case",
                "total tok/case",
            ],
            rows,
        )
    )
    d = runs["demo_json_object"]
    print(
        f"\nDemo judge tier ({d['cases']} answerable demo items, demo pipeline answers, json_object mode): "
        f"{d['valid']} valid, judge calls/case {fmt(d['judge_calls_per_case'])}, second calls for claims "
        f"{d['claims_second_calls']}, claims/case {fmt(d['claims_per_case'])} (max {d['claims_max']})."
    )
