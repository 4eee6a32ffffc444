"""The "repairs" part of bench/judge_concurrency.py (issue 33): a judge whose verdicts
sometimes need a repair, as a small local model's do.

The scripted judge answers after the latency like the other parts, but by the case's
position ``i`` in the golden file (found from the QUESTION block of the request):

* ``i % 10 == 0`` -- **unrepairable**: every verdict has a relevance verdict outside its
  set (``"maybe"``: the reply parses, the verdict check rejects it), the repair's too;
* otherwise ``i % 3 == 0`` -- **repaired**: the first verdict is rejected the same way,
  the repair (the request that quotes the reply back) gets a valid one;
* otherwise -- **valid** at once.

Expected calls per case, exactly: 1 valid, 2 repaired (first, repair), 2 unrepairable
(first, repair, then the case is an ``error``). A rejected verdict is never asked again
identically, so that is all; an unchanged rerun on the warm cache calls only the
unrepairable cases (2 each: errors are never cached).

Measured per ``--rag-concurrency`` level: wall time, the tier's own time (wall less the
collect-only start-up), the server's calls per case against that expectation, the rerun's
calls, and the results files compared (timings aside) across levels.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from _common import ratio, run_python_timed
from judge_cost import native_reply

from tests.support.in_flight import InFlight
from tests.support.judge_replies import blocks
from tests.support.openai_server import Reply, reply

EXPECTED_CALLS = {"valid": 1, "repaired": 2, "unrepairable": 2}


def bucket(index: int) -> str:
    if index % 10 == 0:
        return "unrepairable"
    return "repaired" if index % 3 == 0 else "valid"


def responder(questions: Sequence[str], gauge: InFlight) -> Callable[[Any], Reply]:
    position = {q: i for i, q in enumerate(questions)}

    def answer(request: Any) -> Reply:
        gauge.hold()
        kind = bucket(position[blocks(request)["QUESTION"]])
        repairing = any(m.get("role") == "assistant" for m in request["messages"])
        good = native_reply(request)
        if kind == "valid" or (kind == "repaired" and repairing):
            return good
        verdict = json.loads(good.content)
        verdict["relevance"]["verdict"] = "maybe"
        return reply(json.dumps(verdict, ensure_ascii=False), prompt_tokens=good.prompt_tokens)

    return answer


def calls_by_case(requests: Sequence[Any], questions: Sequence[str]) -> Counter[int]:
    position = {q: i for i, q in enumerate(questions)}
    return Counter(position[blocks(r.json)["QUESTION"]] for r in requests)


def check_calls(got: Mapping[int, int], n: int, only: Callable[[str], bool] = lambda k: True) -> dict[str, Any]:
    """Calls per case against the expectation; which cases differ (at most 10)."""
    expected = {i: EXPECTED_CALLS[bucket(i)] for i in range(n) if only(bucket(i))}
    wrong = {i: (got.get(i, 0), e) for i, e in expected.items() if got.get(i, 0) != e}
    extra = sorted(set(got) - set(expected))
    return {
        "expected_calls": sum(expected.values()),
        "calls": sum(got.values()),
        "exact": not wrong and not extra,
        "wrong": dict(list(wrong.items())[:10]),
        "unexpected_cases": extra[:10],
    }


def outcomes(path: Path) -> dict[str, int]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(Counter(c["outcome"] for c in data["cases"] if c["tier"] == "judge"))


def run(bench: Any, questions: Sequence[str], latency: float, levels: Sequence[int], collect_s: float) -> list[dict]:
    """One cold run and one warm rerun per level (module doc); ``bench`` is judge_concurrency's Bench."""
    from judge_concurrency import Config, pytest_args

    n = len(questions)
    bench.judge.set_default("chat", responder(questions, bench.judge_gauge))
    bench.judge_gauge.seconds = latency
    rows = []
    for level in levels:
        cfg = Config("judge", latency, level, 0)
        label = f"repairs-{cfg.label}"
        results, cache = bench.out / f"{label}.json", bench.out / "cache" / label
        bench.reset()
        wall, cpu = run_python_timed(
            pytest_args(cfg, bench.root, results, cache), label, cwd=bench.root, env=bench.env, ok_codes=(0, 1)
        )
        cold = check_calls(calls_by_case(bench.judge.requests_of("chat"), questions), n)
        bodies = [json.dumps(r.json, sort_keys=True) for r in bench.judge.requests_of("chat")]
        most = bench.judge_gauge.most
        bench.reset()
        again = bench.out / f"{label}-rerun.json"
        rerun_wall, _ = run_python_timed(
            pytest_args(cfg, bench.root, again, cache), f"{label} rerun", cwd=bench.root, env=bench.env, ok_codes=(0, 1)
        )
        warm = check_calls(
            calls_by_case(bench.judge.requests_of("chat"), questions), n, lambda kind: kind == "unrepairable"
        )
        rows.append(
            {
                "concurrency": level,
                "latency_s": latency,
                "wall_s": wall,
                "cpu_s": cpu,
                "tier_s": wall - collect_s,
                "most_in_flight": most,
                "cold": cold,
                "bodies_sent_once": len(bodies) == len(set(bodies)),
                "outcomes": outcomes(results),
                "rerun_wall_s": rerun_wall,
                "rerun": warm,
                "results": results.name,
            }
        )
        print(
            f"{label}: {wall:.1f} s (tier {wall - collect_s:.1f} s), {cold['calls']} calls "
            f"(expected {cold['expected_calls']}, exact {cold['exact']}); rerun {warm['calls']} calls "
            f"(expected {warm['expected_calls']}, exact {warm['exact']})",
            flush=True,
        )
    base = rows[0]["tier_s"]
    for r in rows:
        r["tier_speedup_vs_first"] = ratio(base, r["tier_s"])
    return rows


def counts(n: int) -> dict[str, int]:
    return dict(Counter(bucket(i) for i in range(n)))
