"""The dialogue tier's model calls in flight: the LLM student and the hint judge at ``--rag-concurrency`` 1 and 16.

Question (issue 33, acceptance: "the same with the student simulator over the demo
dialogues"): when each dialogue's conversation with the model (the LLM student's turns,
the system's turns between them, the hint judge and its repair) waits on a slow model,
does running cases ahead of their tests make the tier's own time approach
``calls × latency ÷ N``, with the calls per dialogue exactly as scripted, the results of
a serial run, and a warm rerun that asks again only the dialogues left without a verdict?

Everything runs against one local scripted OpenAI-compatible server (no provider, no
network) as real ``python -m pytest`` subprocesses in a temporary user repository:

* ``ds/``: golden_sets/demo_maths' corpus and its ``dialogues.jsonl`` replicated to ``--n``
  dialogues (dialogue ``i`` is demo dialogue ``i mod 40``; past the first pass its id
  carries ``-r<pass>`` and its opening ``（第<pass>遍）``, so no two dialogues share a
  cache key);
* ``tutor.toml``: the oracle tutor of the dialogue tests over those dialogues
  (tests/support/counting_tutor.py: instant, ``hold_s = 0``; it declares no
  ``concurrency``, so the framework calls it **one call at a time**, as it does rag_app:
  only the model's calls overlap; it counts how many of its calls overlap all the same);
* ``thresholds.toml``: ``[dialogue.case] simulator = "llm"``; ``RAG_SIMULATOR_*`` and
  ``RAG_JUDGE_*`` point at the server (the hint judge runs because a judge is
  configured); ``RAG_*_CONCURRENCY`` unset, so both follow ``--rag-concurrency``.

The scripted model (tests/support/dialogue_replies.py) answers after ``--latency`` (1 s)
and, by the dialogue's position ``i``: one in three (``i % 3 == 0``) gets a blank first
student reply (asked again by the client) and a hint verdict only after the repair; one
in ten (``i % 10 == 0``) never a hint verdict (the case fails at the hint step with a
judge error). The expected calls of every dialogue come from a scripted replay of it in
this process (its student replies ``S``, whether it is judged ``G``): valid ``S + G``,
repaired ``S + [S > 0] + 2G``, unrepairable ``S + 2G``; the warm rerun ``2G`` for
unrepairable dialogues, 0 for the rest.

Per level: wall time, the tier's own time (wall less a ``--collect-only`` run made just
before it: pytest's start-up and collection at that moment's load; absent when the
difference is not positive, which a load swing between the two runs can cause), calls per dialogue against the expectation, the most calls in
flight, the most system calls at once, the rerun's calls; and the results files compared
across levels and reruns (timings aside, as in bench/judge_concurrency.py).

    python bench/dialogue_concurrency.py [--n 80] [--latency 1] [--levels 1,16] [--keep]

Writes ``bench/results/dialogue_concurrency.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_average, md_table, ratio, run_header, run_python_timed, user_repo, write_results  # noqa: E402
from judge_concurrency import PYTEST_INI, child_env, compare  # noqa: E402

from rag_eval.dialogue.load import load_dialogue_set  # noqa: E402
from tests.rag_eval._dialogue_systems import DEMO, OracleTutor  # noqa: E402
from tests.support.counting_tutor import MOST_FILE  # noqa: E402
from tests.support.dialogue_replies import bucket, calls_by_dialogue, responder, scripted_costs  # noqa: E402
from tests.support.in_flight import InFlight  # noqa: E402
from tests.support.openai_server import ScriptedOpenAIServer  # noqa: E402

NAME = "dialogue_concurrency"
GOAL = ">= 8x for the tier's own time (wall less collect-only) at 16 vs 1, as the judge's repairs scenario"
THRESHOLDS = '[dialogue.case]\nsimulator = "llm"\n'
TUTOR_TOML = """\
pipeline = "tests.support.counting_tutor:tutor"

[options]
dialogues = "{dialogues}"
hold_s = 0.0
"""


def replicated(n: int) -> list[dict[str, Any]]:
    """``n`` dialogue rows: demo dialogue ``i mod 40``, its id and opening marked past the first pass."""
    rows = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for i in range(n):
        row, rep = dict(rows[i % len(rows)]), i // len(rows)
        if rep:
            row["id"], row["opening"] = f"{row['id']}-r{rep + 1}", f"{row['opening']}（第{rep + 1}遍）"
        out.append(row)
    return out


def write_repo(root: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    dialogues = root / "ds" / "dialogues.jsonl"
    tutor = TUTOR_TOML.format(dialogues=dialogues.as_posix())
    user_repo(root, {"pytest.ini": PYTEST_INI, "thresholds.toml": THRESHOLDS, "tutor.toml": tutor})
    shutil.copytree(DEMO.parent / "corpus", root / "ds" / "corpus")
    # the golden items are not run here (-m dialogue), but a dataset has them; without the demo
    # corpus's hash, which rag_app's reader computes and this pipeline's does not
    golden = [json.loads(line) for line in (DEMO.parent / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    (root / "ds" / "golden.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in g.items() if k != "corpus"}, ensure_ascii=False) + "\n" for g in golden),
        encoding="utf-8",
    )
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    dialogues.write_text(text, encoding="utf-8")


def pytest_args(level: int, results: Path, cache: Path, extra: Sequence[str] = ()) -> list[str]:
    return [
        "-m", "pytest", "test_rag.py", "-m", "dialogue", "--rag-pipeline-config", "tutor.toml",
        "--rag-dataset", "ds", "--rag-thresholds", "thresholds.toml", "--rag-results", str(results),
        "--rag-no-report", "--rag-judge-cache", str(cache), "--rag-concurrency", str(level), "-q", *extra,
    ]  # fmt: skip


def outcomes(path: Path) -> dict[str, int]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(Counter(c["outcome"] for c in data["cases"] if c["tier"] == "dialogue"))


def check(got: Sequence[int], expected: Sequence[int]) -> dict[str, Any]:
    wrong = {i: (g, e) for i, (g, e) in enumerate(zip(got, expected)) if g != e}
    return {
        "calls": sum(got),
        "expected_calls": sum(expected),
        "exact": not wrong,
        "wrong": dict(list(wrong.items())[:10]),
    }


class Bench:
    def __init__(self, root: Path, server: ScriptedOpenAIServer, latency: float, env: dict[str, str]) -> None:
        self.root, self.server, self.env = root, server, env
        self.gauges = {"student": InFlight(latency), "judge": InFlight(latency)}  # one per endpoint
        items = load_dialogue_set(root / "ds" / "dialogues.jsonl")
        self.openings = [i.opening for i in items]
        self.costs = scripted_costs(items, OracleTutor(items))

    def run(self, level: int, results: Path, cache: Path, label: str) -> tuple[float, float, list[int], Counter[str]]:
        """One pytest run on a fresh scripted model: wall, CPU, calls per dialogue, request bodies."""
        self.server.reset()
        for g in self.gauges.values():
            g.reset()
        self.server.set_default("chat", responder(self.openings, {k: g.hold for k, g in self.gauges.items()}))
        wall, cpu = run_python_timed(
            pytest_args(level, results, cache), label, cwd=self.root, env=self.env, ok_codes=(0, 1)
        )
        requests = self.server.requests_of("chat")
        bodies = Counter(json.dumps(r.json, sort_keys=True) for r in requests)
        return wall, cpu, calls_by_dialogue(requests, self.openings), bodies

    def collect_only(self, out: Path) -> float:
        args = pytest_args(1, out / "collect.json", out / "cache" / "collect", ["--collect-only"])
        return run_python_timed(args, "collect-only", cwd=self.root, env=self.env)[0]

    def level(self, level: int, out: Path) -> dict[str, Any]:
        label = f"dialogue-c{level}"
        results, cache = out / f"{label}.json", out / "cache" / label
        collect_s = self.collect_only(out)
        load = load_average()
        wall, cpu, calls, bodies = self.run(level, results, cache, label)
        most = {k: g.most for k, g in self.gauges.items()}
        system_most = int((self.root / MOST_FILE).read_text())
        cold = check(calls, [c.calls(bucket(i)) for i, c in enumerate(self.costs)])
        rerun_wall, _, again, _ = self.run(level, out / f"{label}-rerun.json", cache, f"{label} rerun")
        warm = check(again, [c.rerun(bucket(i)) for i, c in enumerate(self.costs)])
        blank = sum(1 for i, c in enumerate(self.costs) if bucket(i) == "repaired" and c.student)
        row = {
            "concurrency": level,
            "wall_s": wall,
            "cpu_s": cpu,
            "collect_only_s": collect_s,
            "tier_s": wall - collect_s if wall > collect_s else None,
            "most_in_flight": most,  # per endpoint: the student's, the hint judge's
            "system_most_at_once": system_most,
            "cold": cold,
            "identical_requests_repeated": sum(k - 1 for k in bodies.values()),
            "identical_requests_expected": blank,  # a blank student reply asked again: once per such dialogue
            "outcomes": outcomes(results),
            "rerun_wall_s": rerun_wall,
            "rerun": warm,
            "rerun_calls": warm["calls"],
            "load_average": load,
            "results": results.name,
        }
        print(
            f"{label}: {wall:.1f} s (collect-only {collect_s:.1f} s), {cold['calls']} calls (expected "
            f"{cold['expected_calls']}, exact {cold['exact']}), {most} in flight at most; rerun {warm['calls']} "
            f"calls (expected {warm['expected_calls']}, exact {warm['exact']})",
            flush=True,
        )
        return row


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--n", type=int, default=80, help="dialogues (the demo's 40, replicated)")
    ap.add_argument("--latency", type=float, default=1.0, help="the model's seconds per call")
    ap.add_argument("--levels", default="1,16", help="--rag-concurrency values; the first is the reference")
    ap.add_argument("--keep", action="store_true", help="keep the temporary repository (its path is printed)")
    args = ap.parse_args(argv)
    levels = [int(x) for x in args.levels.split(",") if x]
    header = run_header(NAME, argv)
    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="rag-dialogue-concurrency-"))
    rows: list[dict[str, Any]] = []
    try:
        root, out = tmp / "repo", tmp / "out"
        write_repo(root, replicated(args.n))
        out.mkdir()
        with ScriptedOpenAIServer() as server:
            env = child_env(server.base_url)
            env.update(
                RAG_SIMULATOR_BASE_URL=server.base_url, RAG_SIMULATOR_MODEL="student-m", RAG_SIMULATOR_API_KEY="sk-s"
            )
            bench = Bench(root, server, args.latency, env)
            rows = [bench.level(level, out) for level in levels]
            same = compare(rows, out)
            costs = bench.costs
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for r in rows:
        r["wall_speedup_vs_first"] = ratio(rows[0]["wall_s"], r["wall_s"])
        tiers = (rows[0]["tier_s"], r["tier_s"])
        r["tier_speedup_vs_first"] = ratio(*tiers) if None not in tiers else None  # absent: see tier_s
    result = {
        **header,
        "load_average_at_end": load_average(),
        "total_wall_s": time.perf_counter() - t_start,
        "params": {"n": args.n, "latency_s": args.latency, "levels": levels},
        "dialogues": dict(Counter(bucket(i) for i in range(args.n))),
        "student_replies": sum(c.student for c in costs),
        "judged_dialogues": sum(c.judged for c in costs),
        "runs": rows,
        "identical_results": same,
        "acceptance": {
            "calls_exact": all(r["cold"]["exact"] for r in rows),
            "identical_requests_only_blank_replies": all(
                r["identical_requests_repeated"] == r["identical_requests_expected"] for r in rows
            ),
            "rerun_only_unrepairable": all(r["rerun"]["exact"] for r in rows),
            "system_one_call_at_a_time": all(r["system_most_at_once"] == 1 for r in rows),
            "results_identical": same["identical"],
            "tier_speedup": {f"c{r['concurrency']}": r["tier_speedup_vs_first"] for r in rows},
            "wall_speedup": {f"c{r['concurrency']}": r["wall_speedup_vs_first"] for r in rows},
            "goal": GOAL,
        },
    }
    path = write_results(NAME, result)
    print_table(result)
    print(f"\nwrote {path.relative_to(REPO)}")
    return 0


def absent(value: float | None) -> float | str:
    return "absent" if value is None else value


def print_table(result: Mapping[str, Any]) -> None:
    p = result["params"]
    print(
        f"\n### Dialogue tier, LLM student + hint judge, {p['n']} dialogues {result['dialogues']}, "
        f"model at {p['latency_s'] * 1e3:g} ms per call\n"
    )
    print(
        md_table(
            ["--rag-concurrency", "wall s", "wall speed-up", "collect-only s", "tier s", "tier speed-up", "calls", "expected", "exact",
             "most in flight per endpoint", "system at once", "outcomes", "rerun calls", "rerun expected", "rerun exact"],
            [
                [r["concurrency"], r["wall_s"], r["wall_speedup_vs_first"], r["collect_only_s"],
                 absent(r["tier_s"]), absent(r["tier_speedup_vs_first"]), r["cold"]["calls"],
                 r["cold"]["expected_calls"], str(r["cold"]["exact"]), json.dumps(r["most_in_flight"]),
                 r["system_most_at_once"], json.dumps(r["outcomes"], sort_keys=True), r["rerun"]["calls"],
                 r["rerun"]["expected_calls"], str(r["rerun"]["exact"])]
                for r in result["runs"]
            ],
        )
    )  # fmt: skip
    print("acceptance: " + json.dumps(result["acceptance"], ensure_ascii=False))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
