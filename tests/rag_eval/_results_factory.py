"""Synthetic results dicts for the report tests, in the shapes a real run writes.

Built through the project's own code where it matters: ``CaseResult``, the real
``loss_stage`` over ranks read from the ranked lists, ``metrics.passk.summarize``,
``gate.evaluate_gate`` and ``run.build_results``. So a change of the results format
shows up here too, not only in a hand-written fixture.

``make_results(n_cases)`` makes ``n_cases`` golden items, each run through the
retrieval, deterministic, judge and passk tiers. Items are assigned fates by their
index so that every small run holds (see ``SPECIAL``):

* a retrieval error (the pipeline raised), a skipped judge case (budget) and a judge
  error (malformed reply), a degraded case, a flaky passk case;
* failures at every retrieval stage (vector+bm25, fusion, rerank, truncation), at
  generation and at citation, and a negative item;
* ``<script>alert(1)</script>`` / ``</script>`` in a question, an answer and a chunk;
* a failing gate (``retrieval.recall@5`` needs 0.99) next to passing ones.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.core.stages import StageSpec
from rag_eval.gates.gate import evaluate_gate
from rag_eval.gates.thresholds import Gate
from rag_eval.metrics.passk import summarize
from rag_eval.results.build import build_results
from rag_eval.tiers.retrieval.case import loss_stage

XSS = "<script>alert(1)</script>"
STAGES = ("vector", "bm25", "fused", "reranked", "context")
SPEC = StageSpec((("vector", "bm25"), ("fused",), ("reranked",), ("context",)), final="context", thresholded="vector")
KEEP = {"vector": 20, "bm25": 20, "fused": 12, "reranked": 8, "context": 6}
PASSK_N, PASSK_K = 5, 3
SCORES = [round(1.0 - r * 0.03, 6) for r in range(30)]

# index → fate (indices below len(SPECIAL) are special in every run of that size or more)
SPECIAL: dict[int, str] = {
    0: "lost:vector+bm25",
    1: "xss",
    2: "lost:fusion",
    3: "lost:rerank",
    4: "lost:truncation",
    5: "retrieval_error",
    6: "generation",
    7: "citation",
    8: "negative",
    9: "degraded",
    10: "judge_error",
    11: "judge_skip",
    12: "flaky",
}
ID_XSS = "syn-00001"
ID_FLAKY = "syn-00012"
ID_ERROR = "syn-00005"
ID_JUDGE_ERROR = "syn-00010"
ID_DEGRADED = "syn-00009"
ID_TRUNCATION = "syn-00004"


def item_id(i: int) -> str:
    return f"syn-{i:05d}"


def chunk_id(doc: int, k: int) -> str:
    return f"必修第{doc}册::{doc}.{k % 7}函数::p{k}::child::{k}"


def _fate(i: int, rng: random.Random) -> str:
    if i in SPECIAL:
        return SPECIAL[i]
    roll = rng.random()
    if roll < 0.06:
        return "lost:vector+bm25"
    if roll < 0.10:
        return "lost:rerank"
    if roll < 0.13:
        return "lost:truncation"
    if roll < 0.20:
        return "generation"
    if roll < 0.25:
        return "negative"
    return "pass"


def _golden(i: int, fate: str) -> dict[str, Any]:
    negative = fate == "negative"
    question = f"第{i}题：二次函数 y=x^2-{i % 9}x 的顶点在哪里？"
    if fate == "xss":
        question = f"What does {XSS} do? and </script><b>bold</b> & more"
    gold = chunk_id(1 + i % 4, i % 40)
    return {
        "id": item_id(i),
        "question": question,
        "history": [{"role": "user", "content": "上一题是什么？"}, {"role": "assistant", "content": "求导数。"}]
        if i % 5 == 0
        else [],
        "tags": {
            "scenario": "negative" if negative else ("colloquial" if i % 3 else "standard"),
            "difficulty": ("easy", "medium", "hard")[i % 3],
        },
        "evidence": []
        if negative
        else [
            {"chunk_id": gold},
            {"any_of": [{"doc_id": "bixiu1", "quote": "顶点式"}, {"chunk_id": chunk_id(9, i % 40)}]},
        ]
        if i % 7 == 0
        else ([] if negative else [{"chunk_id": gold}]),
        "key_facts": [] if negative else [{"fact": f"顶点横坐标为 {i % 9}/2", "source": {"chunk_id": gold}}],
        "reference_answer": "" if negative else f"配方得顶点 ({i % 9}/2, …)。",
        "must_contain": [] if negative else [f"{i % 9}"],
        "must_not_contain": [],
        "expected_action": "refuse" if negative else "answer",
        "split": "holdout" if i % 4 == 0 else "tune",
        "corpus": {"name": "synthetic", "sha256": "0" * 64},
    }


def _ranked(i: int, fate: str, rng: random.Random, gold: str | None) -> dict[str, list[list[Any]]]:
    """Ranked lists with the gold placed according to the fate (absent from the stage it is lost at)."""
    pool = [chunk_id(1 + (i + j) % 4, (i * 7 + j) % 40 + 41) for j in range(30)]
    lost_at = {
        "lost:vector+bm25": "vector",
        "lost:fusion": "fused",
        "lost:rerank": "reranked",
        "lost:truncation": "context",
    }.get(fate)
    out: dict[str, list[list[Any]]] = {}
    present = gold is not None and lost_at != "vector"
    start = rng.randrange(10)
    for si, s in enumerate(STAGES):
        if lost_at is not None and s == lost_at:
            present = False
        ids = pool[start + si : start + si + KEEP[s]]
        if present and gold is not None:
            ids = ids[: (i + si) % 3] + [gold] + ids[(i + si) % 3 : KEEP[s] - 1]
        if fate == "xss" and s == "context":
            ids[-1] = f"doc::{XSS}::child::1"
        out[s] = [[cid, SCORES[r]] for r, cid in enumerate(ids)]
    return out


def _retrieval(i: int, fate: str, item: Mapping[str, Any], rng: random.Random) -> CaseResult:
    common = dict(
        id=item["id"], tier="retrieval", tags=item["tags"], split=item["split"], duration=0.004 + (i % 10) / 1000
    )
    system = {
        "index_fingerprint": "feedfacecafe0001",
        "embedder": "fake/hash-64",
        "reranker": "local",
        "generator": "extractive-baseline",
    }
    if fate == "retrieval_error":
        return CaseResult(
            outcome="error",
            failed_stage="error",
            message="RuntimeError: the vector store is unreachable",
            details={
                "traceback": "Traceback (most recent call last):\n  ...\nRuntimeError: the vector store is unreachable",
                "system": system,
            },
            **common,
        )  # type: ignore[arg-type]
    gold = None if fate == "negative" else chunk_id(1 + i % 4, i % 40)
    stages = _ranked(i, fate, rng, gold)
    details: dict[str, Any] = {
        "stages": stages,
        "stage_levels": [list(level) for level in SPEC.levels],
        "final_stage": SPEC.final,
        "degraded": fate == "degraded",
        "degradation_reason": "reranker timed out: kept the fused order" if fate == "degraded" else None,
        "gold": {"chunks": [[gold]] if gold else [], "parents": None, "docs": [["bixiu1"]] if gold else []},
        "system": system,
    }
    if gold is None:
        metrics = {"negative.any_above_threshold": 1.0, "negative.empty_context": 0.0}
        details["measured_only"] = True
        return CaseResult(outcome="pass", metrics=metrics, negative=True, details=details, **common)  # type: ignore[arg-type]
    ranks = [{s: next((r + 1 for r, (cid, _) in enumerate(stages[s]) if cid == gold), None) for s in STAGES}]
    details["gold_ranks"] = ranks
    stage = loss_stage(ranks, SPEC)
    final = ranks[0]["context"]
    metrics = {
        "recall@5": 1.0 if final and final <= 5 else 0.0,
        "mrr": 1.0 / final if final else 0.0,
        "doc.recall@5": 1.0 if final else 0.0,
        "vector.recall@5": 1.0 if ranks[0]["vector"] and ranks[0]["vector"] <= 5 else 0.0,
        "bm25.mrr": 1.0 / ranks[0]["bm25"] if ranks[0]["bm25"] else 0.0,
    }
    message = f"gold evidence did not reach context: requirement 1: lost at {stage}" if stage else ""
    return CaseResult(
        outcome="fail" if stage else "pass",
        failed_stage=stage,
        message=message,
        metrics=metrics,
        details=details,
        **common,
    )  # type: ignore[arg-type]


def _answer(i: int, fate: str) -> str:
    if fate == "xss":
        return f"Do not run {XSS} [1]; it closes </script> early [2]."
    return f"配方可得顶点 [1]，对称轴为 x={i % 9}/2 [2]。"


def _deterministic(i: int, fate: str, item: Mapping[str, Any], retrieval: CaseResult) -> CaseResult:
    answer = _answer(i, fate)
    context = []
    for n, (cid, _score) in enumerate(retrieval.details.get("stages", {}).get("context", [])[:3], 1):
        text = f"## {n} 函数\n二次函数 $y=ax^2+bx+c$ 的顶点 … chunk {cid}"
        if XSS in cid:
            text = f"A chunk that says {XSS} and </script><img src=x onerror=alert(2)>"
        context.append({"chunk_id": cid, "label": f"必修第一册 - 3.{n} 函数 第{n}页", "text": text})
    sources = [
        {
            "n": n,
            "chunk_id": c["chunk_id"],
            "doc_id": "bixiu1",
            "book": "必修第一册",
            "section": f"3.{n} 函数",
            "page_start": n,
            "page_end": n + (n == 2),
        }
        for n, c in enumerate(context, 1)
    ]
    checks = [
        {"name": "answer_not_empty", "passed": True, "message": f"answer has {len(answer)} characters"},
        {
            "name": "citations_resolve",
            "passed": fate != "citation",
            "message": "citation [7] does not resolve to a context chunk"
            if fate == "citation"
            else "2 citations resolve",
        },
        {
            "name": "must_contain",
            "passed": fate != "generation",
            "message": "missing 1 of 1 required phrase" if fate == "generation" else "all 1 required phrases present",
        },
    ]
    failed = [c for c in checks if not c["passed"]]
    stage = None
    if failed:
        stage = "citation" if fate == "citation" else "generation"
    if retrieval.outcome == "fail":
        failed.append({"name": "must_contain", "passed": False, "message": "missing 1 of 1 required phrase"})
        stage = retrieval.failed_stage
    outcome = "fail" if failed else "pass"
    if retrieval.outcome == "error":
        return CaseResult(
            id=item["id"],
            tier="deterministic",
            outcome="error",
            failed_stage="error",
            message="RuntimeError: the vector store is unreachable",
            tags=item["tags"],
            split=item["split"],
            details={"traceback": "RuntimeError: the vector store is unreachable"},
        )
    return CaseResult(
        id=item["id"],
        tier="deterministic",
        outcome=outcome,
        failed_stage=stage,  # type: ignore[arg-type]
        message="; ".join(f"{c['name']}: {c['message']}" for c in failed),
        metrics={f"check.{c['name']}": float(c["passed"]) for c in checks},
        tags=item["tags"],
        split=item["split"],
        negative=not item["evidence"],
        duration=0.01,
        details={
            "answer": answer,
            "refused": False,
            "generator": "extractive-baseline",
            "sources": sources,
            "context": context,
            "checks": checks,
            "degraded": fate == "degraded",
            "degradation_reason": "reranker timed out: kept the fused order" if fate == "degraded" else None,
            "usage": {"prompt_tokens": 0, "completion_tokens": 0},
        },
    )


def _judge(i: int, fate: str, item: Mapping[str, Any], answer: str) -> CaseResult:
    common = dict(id=item["id"], tier="judge", tags=item["tags"], split=item["split"], negative=not item["evidence"])
    base = {"judge_model": "judge-small", "engine": "native", "answer": answer}
    usage = {
        "calls": 1,
        "cached_calls": 0,
        "errors": 0,
        "prompt_tokens": 900,
        "completion_tokens": 120,
        "cost_usd": 0.0004,
    }
    if fate == "judge_error":
        return CaseResult(
            outcome="error",
            failed_stage="judge",
            duration=0.3,
            message="judge error (malformed): judge reply for case 'syn-00010' was invalid twice",
            details={**base, "usage": {**usage, "calls": 2, "errors": 1}},
            **common,
        )  # type: ignore[arg-type]
    if fate == "judge_skip":
        return CaseResult(outcome="skip", message="not run: judge budget of $0.01 reached", details=base, **common)  # type: ignore[arg-type]
    wrong = fate in ("generation", "xss")
    claims = [
        {
            "claim": "顶点可由配方求得",
            "verdict": "yes",
            "chunks": [1],
            "reference": "yes",
            "reason": "context [1] says so",
        },
        {
            "claim": answer[:40],
            "verdict": "no" if wrong else "yes",
            "chunks": [] if wrong else [1],
            "reference": "no" if wrong else "yes",
            "reason": f"reason with {XSS}",
        },
    ]
    faith = sum(c["verdict"] == "yes" for c in claims) / len(claims)
    judge = {
        "claims": claims,
        "key_facts": [
            {
                "index": 1,
                "fact": f"顶点横坐标为 {i % 9}/2",
                "verdict": "covered" if faith == 1 else "not_covered",
                "reason": "stated in the answer" if faith == 1 else "not stated",
            }
        ],
        "relevance": {"verdict": "relevant", "reason": "answers the question"},
        "citations": [{"marker": 1, "sentence": "配方可得顶点", "supported": True, "reason": "chunk 1"}],
        "mode": "json_schema",
        "calls": 1,
        "repair_errors": [],
        "rejected_modes": [],
    }
    metrics = {
        "faithfulness": faith,
        "coverage": 1.0 if faith == 1 else 0.0,
        "relevance": 1.0,
        "citation_faithfulness": 1.0,
    }
    outcome = "pass" if faith >= 0.8 else "fail"
    judge["diagnosis"] = {"unknown_claims": 0, "unknown_facts": 0, "inconsistent": 0, "context_chunks": 1}
    blame = (
        []
        if faith == 1
        else [
            "generator: key fact 1 is in chunk [1] but not in the answer",
            f'hallucination: claim "{answer[:40]}" is in no chunk and not in the reference',
        ]
    )
    return CaseResult(
        outcome=outcome,
        failed_stage=None if outcome == "pass" else "judge",  # type: ignore[arg-type]
        message="" if outcome == "pass" else f"faithfulness = {faith:.3f} < 0.8 (per-case threshold)",
        metrics=metrics,
        duration=0.2,
        details={
            **base,
            "judge": judge,
            "judge_calls": 1,
            "judge_mode": "json_schema",
            "usage": usage,
            "blame": blame,
            "blame_side": "generator" if blame else None,
        },
        **common,
    )


def _passk(i: int, fate: str, item: Mapping[str, Any], det: CaseResult) -> CaseResult:
    common = dict(
        id=item["id"],
        tier="passk",
        tags=item["tags"],
        split=item["split"],
        negative=not item["evidence"],
        duration=0.05,
    )
    if fate == "flaky":
        passes = [True, False, True, True, False]
    else:
        passes = [det.outcome == "pass"] * PASSK_N
    trials = [
        {
            "trial": t,
            "outcome": "pass" if ok else "fail",
            "failed_stage": None if ok else (det.failed_stage or "generation"),
            "message": "" if ok else "must_contain: missing 1 of 1 required phrase",
            "answer": det.details.get("answer", ""),
        }
        for t, ok in enumerate(passes)
    ]
    s = summarize(passes, PASSK_K)
    details = {
        "trials": trials,
        "n": PASSK_N,
        "k": PASSK_K,
        "trials_run": PASSK_N,
        "deterministic_generator": False,
        "c": s.c,
        "class": s.cls,
    }
    stage = next((t["failed_stage"] for t in trials if t["outcome"] != "pass"), None)
    return CaseResult(
        outcome="pass" if s.c == s.n else "fail",
        failed_stage=stage if s.c < s.n else None,  # type: ignore[arg-type]
        message="" if s.c == s.n else f"{s.c}/{s.n} trials passed ({s.cls.replace('_', ' ')})",
        metrics=s.to_metrics(),
        details=details,
        **common,
    )


GATES: tuple[Gate, ...] = (
    Gate("retrieval", "recall@5", "min", 0.99, 5),  # fails: the red gate
    Gate("retrieval", "pass_rate", "min", 0.5, 5),
    Gate("retrieval", "error_rate", "max", 0.5, 5),
    Gate("deterministic", "check.must_contain", "min", 0.5, 5, {"difficulty": "easy"}),
    Gate("judge", "faithfulness", "min", 0.5, 5),
    Gate("passk", "flaky_count", "max", 0, 5),  # fails when the flaky case is present
)


def make_results(n_cases: int = 24, *, seed: int = 7, with_items: bool = True) -> dict[str, Any]:
    """A full results dict of ``n_cases`` golden items × 4 tiers (see the module doc)."""
    rng = random.Random(seed)
    cases: list[CaseResult] = []
    items: dict[str, dict[str, Any]] = {}
    for i in range(n_cases):
        fate = _fate(i, rng)
        item = _golden(i, fate)
        items[item["id"]] = item
        r = _retrieval(i, fate, item, rng)
        d = _deterministic(i, fate, item, r)
        cases += [r, d]
        if d.outcome != "error":
            cases.append(_judge(i, fate, item, str(d.details.get("answer", ""))))
            cases.append(_passk(i, fate, item, d))
    gates = [evaluate_gate(g, cases) for g in GATES]
    run = {
        "time": "2026-01-02T03:04:05+00:00",
        "commit": "abc123def4567890abc123def4567890abc12345",
        "dirty": True,
        "dataset": "/data/synthetic",
        "dataset_fingerprint": "fp-synthetic-01",
        "corpus_hash": "c" * 64,
        "golden_set": "/data/synthetic/golden.jsonl",
        "golden_sha256": "d" * 64,
        "split": "all",
        "tags": [],
        "shard": None,
        "overrides": {"reranker": "local"},
        "thresholds": "thresholds.toml",
        "thresholds_sha256": "e" * 64,
        "workers": 2,
        "complete": True,
    }
    passed = all(g.passed for g in gates)
    return build_results(run, cases, gates, passed, items=items if with_items else None)


@functools.lru_cache(maxsize=1)
def shared_results(n_cases: int) -> dict[str, Any]:
    """``make_results(n_cases)`` built once per process, for the 5,000-item tests: do not mutate."""
    return make_results(n_cases)


def with_baseline(results: dict[str, Any], newly_failing: tuple[str, ...] = (ID_TRUNCATION,)) -> dict[str, Any]:
    """``results`` plus a ``baseline`` block as the baseline helper writes it."""
    failing = {(c["tier"], c["id"]): c for c in results["cases"] if c["outcome"] in ("fail", "error")}
    p2f = [
        {"key": f"{t}::{i}", "id": i, "tier": t, "was": "pass", "now": c["outcome"], "failed_stage": c["failed_stage"]}
        for (t, i), c in sorted(failing.items())
        if i in newly_failing
    ]
    out = dict(results)
    out["baseline"] = {
        "path": "reports/baseline.json",
        "commit": "0123456789abcdef",
        "time": "2026-01-01T00:00:00+00:00",
        "dataset_fingerprint": results["run"]["dataset_fingerprint"],
        "gates": [
            {
                "metric": g["metric"],
                "value": g["value"],
                "baseline": 0.9 if g["value"] is not None else None,
                "delta": (g["value"] - 0.9) if g["value"] is not None else None,
                "n": g["n"],
                "baseline_n": g["n"],
            }
            for g in results["gates"]
        ],
        "transitions": {
            "pass_to_fail": p2f,
            "fail_to_pass": [],
            "stable_to_flaky": [
                {
                    "key": f"passk::{ID_FLAKY}",
                    "id": ID_FLAKY,
                    "tier": "passk",
                    "was": "stable_pass",
                    "now": "flaky",
                    "failed_stage": "generation",
                }
            ],
            "new": [],
            "removed": [
                {
                    "key": "retrieval::gone-001",
                    "id": "gone-001",
                    "tier": "retrieval",
                    "was": "pass",
                    "now": "–",
                    "failed_stage": None,
                }
            ],
        },
        "tiers": {"only_baseline": {}, "only_now": {}},
    }
    return out
