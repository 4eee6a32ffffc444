"""The gate's cost per case beside its peers', on the same cases with the same metric.

Question (issue 33 point 4, replacing the "2x an empty pytest test" target): what does a
user pay per case for running a non-LLM metric through this gate, through deepeval's
pytest integration, and through ragas, and how fast is the gate's metric computation
beside ranx and pytrec_eval (the IR evaluation libraries)?

Part 1, **cost per case** (``--n`` 1,000 cases, one metric): every case has a question,
one gold document (of 50) and a prepared ranking of 10 chunks (seeded). The metric is
document-level recall@5: ``|gold ∩ the first 5 distinct documents of the ranking| /
|gold|`` (one gold document, because the gate reads several ``gold_doc_ids`` as
alternatives, the others as a set).

* **gate**: ``python -m pytest test_rag.py -m retrieval`` (eval_tests/test_rag.py) in a
  temporary repository, an in-process system returning the prepared ranking instantly,
  one gate ``doc.recall@5 >= 0``, ``--rag-no-report``. The retrieval tier computes more
  than this one metric per case (hit, MRR, nDCG, the per-stage diagnosis): that is part
  of what it costs.
* **deepeval**: ``deepeval test run test_de.py`` (deepeval's pytest integration), one
  parametrised test per case calling ``assert_test`` with a custom ``BaseMetric`` that
  computes the same recall (deepeval has no ID-based retrieval metric of its own).
* **ragas**: ``ragas.evaluate`` over an ``EvaluationDataset`` of the same cases with
  ``IDBasedContextRecall`` (ragas' non-LLM ID metric: retrieved ids = the first 5
  distinct documents), in a ``python`` process.

Each is run as a subprocess, ``--repeats`` times in turn (so a drift in the shared
machine's load hits all three alike); the start-up of each (``--collect-only`` for the
pytest ones, the imports for ragas) is measured the same way and subtracted:
``per case = (wall - start-up) / n``. Before timing, the three tools' per-case values are
checked equal (the gate's results file, deepeval's metric scores, ragas' scores).

Part 2, **metric computation** (``--queries`` 10,000 × ``--docs`` 100 ranked documents,
1-3 relevant each, distinct scores): recall@10, MRR and nDCG@10 by
``rag_eval.metrics.grouped.grouped_compute_all`` (what the retrieval tier calls, per
query, then the mean), by ``ranx.evaluate`` (numba; its first call compiles, timed apart) and by
``pytrec_eval`` (trec_eval's C code), each value checked equal (1e-9) before timing.

    pip install ranx pytrec-eval-terrier          # the peers: not dependencies of the project
    python -m venv /tmp/ragas && /tmp/ragas/bin/pip install ragas   # ragas downgrades openai and tenacity
    python bench/peer_overhead.py [--n 1000] [--repeats 2] [--queries 10000] [--docs 100] [--parts cost,metrics]
        [--ragas-python /tmp/ragas/bin/python]

Writes ``bench/results/peer_overhead.json`` with the versions of every tool.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, load_average, md_table, run_header, run_python_timed, user_repo, write_results  # noqa: E402

from rag_eval.metrics.grouped import grouped_compute, grouped_compute_all  # noqa: E402

NAME = "peer_overhead"
K = 5
PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\npythonpath = .\n"
THRESHOLDS = f"[retrieval]\n'doc.recall@{K}' = {{ min = 0.0 }}\n"
SYSTEM_PY = """\
import json
from pathlib import Path

CASES = {c["question"]: c for c in json.loads((Path(__file__).parent / "cases.json").read_text(encoding="utf-8"))}


class System:
    def retrieve(self, question, top_k=None):
        c = CASES[question]
        return {"items": [{"id": i, "text": "t", "metadata": {"doc_id": d}} for i, d in zip(c["chunks"], c["docs"])]}
"""
DEEPEVAL_TEST = f'''\
import json
from pathlib import Path

import pytest
from deepeval import assert_test
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase

CASES = json.loads((Path(__file__).parent / "cases.json").read_text(encoding="utf-8"))
SCORES = Path(__file__).parent / "deepeval-scores.jsonl"


class DocRecall(BaseMetric):
    """Document-level recall@{K} of the retrieval context's documents (no LLM)."""

    def __init__(self, threshold=0.0):
        self.threshold = threshold

    def measure(self, test_case, *args, **kwargs):
        meta = test_case.additional_metadata
        top = list(dict.fromkeys(meta["docs"]))[:{K}]
        self.score = len(set(top) & set(meta["gold"])) / len(meta["gold"])
        self.success = self.score >= self.threshold
        with SCORES.open("a", encoding="utf-8") as f:
            f.write(json.dumps({{"id": meta["id"], "score": self.score}}) + "\\n")
        return self.score

    async def a_measure(self, test_case, *args, **kwargs):
        return self.measure(test_case)

    def is_successful(self):
        return self.success

    @property
    def __name__(self):
        return "DocRecall"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    tc = LLMTestCase(
        input=case["question"],
        actual_output="",
        retrieval_context=[f"chunk {{c}}" for c in case["chunks"]],
        additional_metadata={{"id": case["id"], "docs": case["docs"], "gold": case["gold"]}},
    )
    assert_test(tc, [DocRecall()], run_async=False)
'''
RAGAS_SCRIPT = f"""\
import json, sys, time
from pathlib import Path

t0 = time.perf_counter()
from ragas import EvaluationDataset, SingleTurnSample, evaluate
from ragas.metrics import IDBasedContextRecall

cases = json.loads(Path("cases.json").read_text(encoding="utf-8"))
if sys.argv[1:] == ["--imports-only"]:
    raise SystemExit(0)
samples = [
    SingleTurnSample(
        user_input=c["question"],
        retrieved_context_ids=list(dict.fromkeys(c["docs"]))[:{K}],
        reference_context_ids=c["gold"],
    )
    for c in cases
]
result = evaluate(EvaluationDataset(samples=samples), metrics=[IDBasedContextRecall()], show_progress=False)
scores = [row["id_based_context_recall"] for row in result.scores]
Path("ragas-scores.json").write_text(json.dumps(dict(zip([c["id"] for c in cases], scores))), encoding="utf-8")
"""


# --- part 1 --------------------------------------------------------------------------------
def build_cases(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        docs = [f"doc{rng.randrange(50):02d}" for _ in range(10)]
        gold = [f"doc{rng.randrange(50):02d}"]
        cases.append(
            {
                "id": f"c{i:04d}",
                "question": f"question {i}",
                "gold": gold,
                "docs": docs,
                "chunks": [f"{d}#{j}-{i}" for j, d in enumerate(docs)],
            }
        )
    return cases


def write_repo(root: Path, cases: Sequence[dict[str, Any]]) -> None:
    user_repo(
        root,
        {
            "pytest.ini": PYTEST_INI,
            "thresholds.toml": THRESHOLDS,
            "bench_system.py": SYSTEM_PY,
            "test_de.py": DEEPEVAL_TEST,
            "ragas_run.py": RAGAS_SCRIPT,
        },
    )
    (root / "cases.json").write_text(json.dumps(list(cases)), encoding="utf-8")
    ds = root / "ds"
    ds.mkdir()
    golden = [{"id": c["id"], "question": c["question"], "gold_doc_ids": c["gold"], "split": "tune"} for c in cases]
    (ds / "golden.jsonl").write_text("".join(json.dumps(g) + "\n" for g in golden), encoding="utf-8")
    docs = sorted({d for c in cases for d in c["docs"] + c["gold"]})
    (ds / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "title": d, "text": f"text of {d}"}) + "\n" for d in docs), encoding="utf-8"
    )


def expected(case: dict[str, Any]) -> float:
    return grouped_compute(f"recall@{K}", list(dict.fromkeys(case["docs"])), [frozenset({g}) for g in case["gold"]])


def commands() -> dict[str, tuple[list[str], list[str]]]:
    """tool -> (the run, its start-up alone)."""
    gate = ["-m", "pytest", "test_rag.py", "-m", "retrieval", "-p", "no:deepeval", "--rag-pipeline",
            "bench_system:System", "--rag-dataset", "ds", "--rag-thresholds", "thresholds.toml",
            "--rag-results", "gate.json", "--rag-no-report", "--rag-concurrency", "1", "-q"]  # fmt: skip
    de = ["-c", "from deepeval.cli.main import app; app()", "test", "run", "test_de.py", "-q"]
    de_collect = ["-m", "pytest", "-p", "deepeval", "test_de.py", "--collect-only", "-q"]
    return {
        "gate": (gate, [*gate, "--collect-only"]),
        "deepeval": (de, de_collect),
        "ragas": (["ragas_run.py"], ["ragas_run.py", "--imports-only"]),
    }


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "OPENAI_"))}
    out.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        DEEPEVAL_TELEMETRY_OPT_OUT="1",
        DEEPEVAL_DISABLE_DOTENV="1",
        DEEPEVAL_UPDATE_WARNING_OPT_IN="0",
        RAGAS_DO_NOT_TRACK="true",
    )
    return out


def check_equal(root: Path, cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The three tools' per-case values against rag_eval.metrics.retrieval's."""
    want = {c["id"]: expected(c) for c in cases}
    gate = {
        c["id"]: c["metrics"][f"doc.recall@{K}"]
        for c in json.loads((root / "gate.json").read_text(encoding="utf-8"))["cases"]
        if c["tier"] == "retrieval"
    }
    de: dict[str, float] = {}
    for line in (root / "deepeval-scores.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        de[row["id"]] = row["score"]
    ragas = json.loads((root / "ragas-scores.json").read_text(encoding="utf-8"))
    out = {}
    for tool, got in (("gate", gate), ("deepeval", de), ("ragas", ragas)):
        wrong = [cid for cid, v in want.items() if cid not in got or abs(float(got[cid]) - v) > 1e-12]
        out[tool] = {"cases": len(got), "equal": not wrong, "first_unequal": wrong[:5]}
    return out


def cost_part(n: int, repeats: int, tmp: Path, ragas_python: str) -> dict[str, Any]:
    cases = build_cases(n)
    root = tmp / "repo"
    write_repo(root, cases)
    run_env, cmds = env(), commands()
    ok = {"gate": (0, 1), "deepeval": (0, 1), "ragas": (0,)}
    python = {"gate": sys.executable, "deepeval": sys.executable, "ragas": ragas_python}
    for tool, (run, _) in cmds.items():  # untimed: warms imports and checks the numbers
        run_python_timed(run, f"{tool} warm-up", cwd=root, env=run_env, ok_codes=ok[tool], python=python[tool])
    equal = check_equal(root, cases)
    if not all(v["equal"] and v["cases"] == n for v in equal.values()):
        raise SystemExit(f"the tools disagree on the metric: {equal}")
    rows: dict[str, list[dict[str, float]]] = {tool: [] for tool in cmds}
    for _ in range(repeats):
        for tool, (run, start) in cmds.items():
            (root / "deepeval-scores.jsonl").unlink(missing_ok=True)
            s_wall, s_cpu = run_python_timed(
                start, f"{tool} start-up", cwd=root, env=run_env, ok_codes=(0, 5), python=python[tool]
            )
            wall, cpu = run_python_timed(run, tool, cwd=root, env=run_env, ok_codes=ok[tool], python=python[tool])
            rows[tool].append(
                {
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "startup_wall_s": s_wall,
                    "startup_cpu_s": s_cpu,
                    "per_case_ms": (wall - s_wall) / n * 1e3,
                    "per_case_cpu_ms": (cpu - s_cpu) / n * 1e3,
                    "load_average": load_average()[0],
                }
            )
            print(f"{tool}: {wall:.2f} s (start-up {s_wall:.2f} s): {rows[tool][-1]['per_case_ms']:.2f} ms/case")
    summary = {
        tool: {
            "per_case_ms_median": statistics.median(r["per_case_ms"] for r in rs),
            "per_case_cpu_ms_median": statistics.median(r["per_case_cpu_ms"] for r in rs),
            "wall_s_median": statistics.median(r["wall_s"] for r in rs),
        }
        for tool, rs in rows.items()
    }
    return {"n": n, "metric": f"doc.recall@{K}", "values_equal": equal, "runs": rows, "summary": summary}


# --- part 2 --------------------------------------------------------------------------------
def ir_data(queries: int, docs: int, seed: int = 11) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(queries):
        ranked = rng.sample(range(docs * 10), docs)
        qrels[f"q{q}"] = {f"d{d}": 1 for d in rng.sample(ranked, rng.randint(1, 3))}
        run[f"q{q}"] = {f"d{d}": float(docs - r) for r, d in enumerate(ranked)}  # distinct scores, best first
    return qrels, run


def ours(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {"recall@10": {}, "mrr": {}, "ndcg@10": {}}
    for q, scored in run.items():
        ranked = sorted(scored, key=lambda d: -scored[d])
        groups = [frozenset({g}) for g in qrels[q]]  # flat gold: each relevant document its own requirement
        recall, rr, ndcg = grouped_compute_all(("recall@10", "mrr", "ndcg@10"), ranked, groups)
        out["recall@10"][q], out["mrr"][q], out["ndcg@10"][q] = recall, rr, ndcg
    return out


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    value = fn(*args)
    return value, time.perf_counter() - t0


def metrics_part(queries: int, docs: int) -> dict[str, Any]:
    import pytrec_eval
    from ranx import Qrels, Run, evaluate

    qrels, run = ir_data(queries, docs)
    mine, t_ours = timed(ours, qrels, run)

    def with_ranx() -> dict[str, dict[str, float]]:
        r = Run(run)
        evaluate(Qrels(qrels), r, ["recall@10", "mrr", "ndcg@10"], make_comparable=True)
        return {m: dict(r.scores[m]) for m in r.scores}  # ranx keeps the per-query values on the run

    _, t_ranx_first = timed(with_ranx)  # includes numba's compilation
    ranx_scores, t_ranx = timed(with_ranx)

    def with_trec() -> dict[str, dict[str, float]]:
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"recall_10", "recip_rank", "ndcg_cut_10"})
        per = ev.evaluate(run)
        return {
            "recall@10": {q: v["recall_10"] for q, v in per.items()},
            "mrr": {q: v["recip_rank"] for q, v in per.items()},
            "ndcg@10": {q: v["ndcg_cut_10"] for q, v in per.items()},
        }

    trec, t_trec = timed(with_trec)
    agree = {}
    for name, other in (("ranx", ranx_scores), ("pytrec_eval", trec)):
        worst = max(abs(mine[m][q] - float(other[m][q])) for m in mine for q in mine[m])
        agree[name] = {"max_abs_difference": worst, "equal": worst <= 1e-9}
    if not all(a["equal"] for a in agree.values()):
        raise SystemExit(f"the metric values differ: {agree}")
    means = {m: statistics.fmean(v.values()) for m, v in mine.items()}
    return {
        "queries": queries,
        "docs_per_query": docs,
        "metrics": list(mine),
        "means": means,
        "agreement": agree,
        "seconds": {
            "rag_eval": t_ours,
            "ranx_first_call_with_jit": t_ranx_first,
            "ranx": t_ranx,
            "pytrec_eval": t_trec,
        },
    }


# --- main ----------------------------------------------------------------------------------
def versions(ragas_python: str) -> dict[str, str]:
    import subprocess

    out = {}
    for dist in ("rag-eval-gate", "pytest", "deepeval", "ranx", "pytrec-eval-terrier", "numba", "numpy", "openai"):
        try:
            out[dist] = version(dist)
        except Exception:  # noqa: BLE001 - a peer not installed is named as such
            out[dist] = "not installed"
    probe = "import importlib.metadata as m; print(m.version('ragas'), m.version('openai'))"
    got = subprocess.run([ragas_python, "-c", probe], capture_output=True, text=True)
    ragas, openai = (got.stdout.split() + ["not installed", "?"])[:2] if got.returncode == 0 else ("not installed", "?")
    out["ragas"], out["ragas_venv_openai"] = ragas, openai
    return out


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--parts", default="cost,metrics")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--ragas-python",
        default=sys.executable,
        help="the interpreter of a venv with ragas (its pins clash with the project's openai and tenacity)",
    )
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    result: dict[str, Any] = {**run_header(NAME, argv), "versions": versions(args.ragas_python)}
    tmp = Path(tempfile.mkdtemp(prefix="peer_overhead-"))
    try:
        if "cost" in parts:
            result["cost"] = cost_part(args.n, args.repeats, tmp, args.ragas_python)
        if "metrics" in parts:
            result["metric_computation"] = metrics_part(args.queries, args.docs)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    result["load_average_at_end"] = load_average()
    path = write_results(NAME, result)
    if "cost" in result:
        s = result["cost"]["summary"]
        print(f"\n### Cost per case, {args.n} cases, doc.recall@{K} (median of {args.repeats})\n")
        print(
            md_table(
                ["tool", "per case ms (wall)", "per case ms (CPU)", "run wall s"],
                [[t, v["per_case_ms_median"], v["per_case_cpu_ms_median"], v["wall_s_median"]] for t, v in s.items()],
            )
        )
    if "metric_computation" in result:
        m = result["metric_computation"]
        print(f"\n### recall@10, MRR, nDCG@10 over {m['queries']} queries x {m['docs_per_query']} docs\n")
        print(md_table(["implementation", "seconds"], [[k, v] for k, v in m["seconds"].items()]))
        print("agreement: " + json.dumps(m["agreement"]))
    print("versions: " + json.dumps(result["versions"]))
    print(f"\nwrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
