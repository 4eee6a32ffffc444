"""How often each gate rule fails an unchanged noisy system, and how often it catches a real drop.

Question (issue 22, point 6): a retriever with run-to-run noise (examples/noisy_system.py:
in ``--rank-noise`` = 15 % of questions the top hit trades places with another of its top
10, chosen by a seed) is compared with itself — same code, another seed — and with a
version with a real 5-point drop in recall@5. Per decision rule: the false-alarm rate
(unchanged system fails) and the power (the drop is caught), each with its Wilson 95 %
interval over the repetitions (``rag_eval.stats.closed_form.wilson``).

Rules (bench/_noise_rules.py): today's ``no_new_failures`` and ``max_drop = 0.01`` on
recall@5 and MRR (``rag_eval.gates.regression``, called on the two results dicts); the paired
tests at alpha = 0.05 (exact McNemar on pass/fail; the tolerance test "drop > δ", δ = 0 and 0.01, on
recall@5 and MRR by paired bootstrap and by sign-flip; Holm over the three); the floor
rules estimate / clearly_below / clearly_above at a floor one case below a calibration
run's value (seed 0).

Datasets (temporary copies, deleted at the end):
* ``demo``: golden_sets/demo_maths (83 answerable + 14 negatives), chunk-level
  ``recall@5`` / ``mrr`` (gold quotes matched by text, ``gold = "text"``). The copy's
  golden items leave out ``corpus.sha256``: rag_eval's own corpus reader (used for every
  pipeline but rag_app) hashes the demo's markdown differently from rag_app's loader, so
  the recorded hash refuses the set (see the report of this change);
* ``squad300``: the whole public SQuAD 1.1 corpus of the shared datasets (1,190
  paragraphs, ``RAG_EVAL_DATASETS`` or ../shared/datasets) and 300 of its questions in
  sha256(id) order; doc-level ``doc.recall@5`` / ``doc.mrr`` (a paragraph is a document).

Per dataset: ``--reps`` independent pairs; pair r compares a baseline run (seed 2r+1)
with a current run (seed 2r+2) of the same system (false alarms) and with the same seed
and ``drop_rate = d`` (power). d is chosen on the noise-free ranking so that the primary
recall@5 falls by 0.05 (the walk over questions in sha256("drop", question) order).

How the runs are made: every run is ``EvalSession.run_case("retrieval", item)`` for every
item — the plugin's own case function — and ``rag_eval.results.build.build_results``, in this
process, with the BM25 ranking of each question cached (the deterministic part). Before
the repetitions, ``--check-runs`` real gate runs (``pytest eval_tests -m retrieval
--rag-pipeline-config … --rag-results …``) per dataset are compared case by case
(outcome and every per-case metric) with the in-process runs of the same seed and
drop_rate; any difference stops the benchmark.

    RAG_EVAL_DATASETS=../shared/datasets python bench/gate_noise.py [--reps 200] [--rank-noise 0.15]

Writes ``bench/results/gate_noise.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DATASETS, REPO, load_average, md_table, read_jsonl, run_header, write_results  # noqa: E402
from _noise_rules import (
    TODAY_MAX_DROP,
    detectable,
    floor_rules,
    floors_of,
    paired_rules,
    spread,
    today_rules,
    values_of,
)  # noqa: E402

from examples.noisy_system import BM25, INDEXES, hash_fraction, index_key, read_passages  # noqa: E402
from rag_eval.adapters.spec import load_spec  # noqa: E402
from rag_eval.dataset import find_paths  # noqa: E402
from rag_eval.gates.thresholds import load_thresholds  # noqa: E402
from rag_eval.results.build import build_results  # noqa: E402
from rag_eval.session import EvalConfig, EvalSession  # noqa: E402
from rag_eval.stats.closed_form import wilson  # noqa: E402

NAME = "gate_noise"
SQUAD = DATASETS / "squad11_public"
DEMO = REPO / "golden_sets" / "demo_maths"
TARGET_DROP = 0.05
# the paired tests' tolerance: 0 (any significant drop) and today's max_drop (a significant drop beyond it)
TOLERANCES = (0.0, TODAY_MAX_DROP)
PASSAGE_CHARS = 400
THRESHOLDS_TOML = '[retrieval]\n"doc.recall@5" = { min = 0.0 }   # the bench applies its own rules\n'
LABELS = ("recall@5", "MRR")  # the rows of the table: each dataset's primary metrics
CACHED_KEYS = ("dataset", "gold_space", "redactor", "context")


class CachedBM25(BM25):
    """The same BM25 with each question's ranking kept: the deterministic part, computed once."""

    def __init__(self, passages: Any) -> None:
        super().__init__(passages)
        self._memo: dict[tuple[str, int], list[tuple[int, float]]] = {}

    def ranking(self, question: str, depth: int) -> list[tuple[int, float]]:
        key = (question, depth)
        if key not in self._memo:
            self._memo[key] = super().ranking(question, depth)
        return self._memo[key]


@dataclass
class Bench:
    """One dataset: its folder, pipeline file, metrics, the cached index and session parts."""

    name: str
    root: Path
    corpus: Path
    metrics: tuple[str, ...]
    rank_noise: float
    index: CachedBM25
    config_path: Path
    thresholds: Path
    template: EvalSession | None = None

    def config_toml(self, seed: int, drop: float, rank_noise: float | None = None) -> str:
        q = self.rank_noise if rank_noise is None else rank_noise
        return (
            'pipeline = "examples.noisy_system:make_pipeline"\ngold = "text"\n[options]\n'
            f"corpus = {json.dumps(str(self.corpus))}\npassage_chars = {PASSAGE_CHARS}\n"
            f"rank_noise = {q!r}\nrank_noise_seed = {seed}\ndrop_rate = {drop!r}\n"
        )

    def run(self, seed: int, drop: float = 0.0, rank_noise: float | None = None) -> dict[str, Any]:
        """One gate run in process: the plugin's case function over every item, then the results dict."""
        q = self.rank_noise if rank_noise is None else rank_noise
        self.config_path.write_text(self.config_toml(seed, drop, q), encoding="utf-8")
        config = EvalConfig(
            paths=find_paths(self.root),
            thresholds=load_thresholds(self.thresholds),
            project_root=REPO,
            pipeline=load_spec(None, self.config_path),
        )
        session = EvalSession(config)  # the plugin's own system: PythonSystem → make_pipeline(options)
        if self.template is None:
            self.template = session
        else:  # the dataset, its gold space and the redactor do not depend on the seed
            session.__dict__.update({k: self.template.__dict__[k] for k in CACHED_KEYS if k in self.template.__dict__})
        cases = [session.run_case("retrieval", item) for item in session.dataset.items]
        if self.template is session:
            _ = session.gold_space, session.redactor
        return build_results({"dataset": self.name}, cases, [], True)


# ---------------------------------------------------------------- datasets


def demo_dataset(dest: Path) -> dict[str, Any]:
    """The demo golden set without corpus.sha256 (see the module docstring) and its corpus."""
    shutil.copytree(DEMO / "corpus", dest / "corpus")
    rows = read_jsonl(DEMO / "golden.jsonl")
    with (dest / "golden.jsonl").open("w", encoding="utf-8") as fh:
        for row in rows:
            row.pop("corpus", None)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"source": str(DEMO), "n_items": len(rows), "n_answerable": sum(1 for r in rows if r.get("evidence"))}


def squad_dataset(dest: Path, n: int) -> dict[str, Any]:
    """All public SQuAD 1.1 paragraphs and the first ``n`` questions in sha256(id) order."""
    if not (SQUAD / "qa.jsonl").is_file():
        raise SystemExit(f"{SQUAD}: no qa.jsonl; set RAG_EVAL_DATASETS to the folder holding squad11_public")
    dest.mkdir(parents=True)
    shutil.copy(SQUAD / "corpus.jsonl", dest / "corpus.jsonl")
    qa = sorted(read_jsonl(SQUAD / "qa.jsonl"), key=lambda q: hashlib.sha256(q["id"].encode("utf-8")).hexdigest())[:n]
    with (dest / "qa.jsonl").open("w", encoding="utf-8") as fh:
        for q in qa:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    return {"source": str(SQUAD), "n_items": len(qa), "n_docs": sum(1 for _ in (dest / "corpus.jsonl").open())}


def make_bench(name: str, root: Path, corpus: Path, metrics: tuple[str, ...], q: float, tmp: Path) -> Bench:
    th = tmp / "thresholds.toml"
    th.write_text(THRESHOLDS_TOML, encoding="utf-8")
    index = CachedBM25(read_passages(corpus, PASSAGE_CHARS))
    INDEXES[index_key(corpus, PASSAGE_CHARS)] = index  # make_pipeline in this process uses it
    return Bench(name, root, corpus, metrics, q, index, tmp / f"{name}.toml", th)


# ---------------------------------------------------------------- the real gate, for the check


def gate_run(b: Bench, seed: int, drop: float, out: Path) -> dict[str, Any]:
    """``pytest eval_tests -m retrieval`` with the plugin and --rag-results; the results file."""
    cfg = out.with_suffix(".toml")
    cfg.write_text(b.config_toml(seed, drop), encoding="utf-8")
    args = [
        sys.executable,
        "-m",
        "pytest",
        "eval_tests",
        "-m",
        "retrieval",
        "--rag-dataset",
        str(b.root),
        "--rag-pipeline-config",
        str(cfg),
        "--rag-thresholds",
        str(b.thresholds),
        "--rag-results",
        str(out),
        "--rag-no-report",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not out.is_file():
        raise SystemExit(
            f"gate run {b.name} seed={seed} drop={drop}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        )
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return doc


def case_view(results: Mapping[str, Any]) -> dict[str, tuple[str, dict[str, float]]]:
    return {c["id"]: (c["outcome"], dict(c["metrics"])) for c in results["cases"] if c["tier"] == "retrieval"}


def check_against_gate(b: Bench, runs: Sequence[tuple[int, float]], out: Path) -> list[dict[str, Any]]:
    """Real gate runs vs in-process runs: identical per-case outcomes and metrics, and the
    same verdicts of every rule on the pair (first run as baseline)."""
    checked = []
    files, mine = [], []
    for seed, drop in runs:
        f = gate_run(b, seed, drop, out / f"{b.name}-{seed}-{drop}.json")
        m = b.run(seed, drop)
        if case_view(f) != case_view(m):
            diff = sorted(
                k for k in case_view(f).keys() | case_view(m).keys() if case_view(f).get(k) != case_view(m).get(k)
            )
            raise SystemExit(
                f"{b.name} seed={seed} drop={drop}: in-process cases differ from the gate's file: {diff[:10]}"
            )
        files.append(f)
        mine.append(m)
        checked.append({"seed": seed, "drop_rate": drop, "cases": len(f["cases"]), "identical": True})
    for f, m in zip(files[1:], mine[1:]):
        if rule_verdicts(b, files[0], f) != rule_verdicts(b, mine[0], m):
            raise SystemExit(f"{b.name}: a rule decides differently on the gate's files than in process")
    return checked


# ---------------------------------------------------------------- the experiment


def rule_verdicts(
    b: Bench, base: Mapping[str, Any], cur: Mapping[str, Any], floors: Mapping[str, float] | None = None
) -> dict[str, bool]:
    out = today_rules(base, cur, b.metrics)
    out.update(paired_rules(base, cur, b.metrics, TOLERANCES)[0])
    if floors is not None:
        out.update(floor_rules(cur, floors))
    return {_generic(k, b.metrics): v for k, v in out.items()}


def _generic(rule: str, metrics: Sequence[str]) -> str:
    """One row name per rule on both datasets: '... doc.recall@5' and '... recall@5' → '... recall@5'."""
    for m, label in zip(metrics, LABELS):
        if rule.endswith(" " + m):
            return rule[: -len(m)] + label
    return rule


def calibrate_drop(b: Bench) -> dict[str, Any]:
    """drop_rate d such that the noise-free primary recall@5 falls by ~0.05 (to within 1/n)."""
    metric = b.metrics[0]
    clean = values_of(b.run(0, 0.0, rank_noise=0.0), metric)
    worst = values_of(b.run(0, 1.0, rank_noise=0.0), metric)
    question = {i.id: i.question for i in b.template.dataset.items} if b.template else {}
    order = sorted(clean, key=lambda k: hash_fraction("drop", question[k]))
    n, cum = len(clean), [0.0]
    for k in order:
        cum.append(cum[-1] + clean[k] - worst.get(k, 0.0))
    # degrade the first `cut` questions of that order: the cut whose loss is nearest 0.05
    cut = min(range(1, n), key=lambda c: abs(cum[c] / n - TARGET_DROP))
    d = (hash_fraction("drop", question[order[cut - 1]]) + hash_fraction("drop", question[order[cut]])) / 2.0
    realized = sum(clean.values()) / n - sum(values_of(b.run(0, d, rank_noise=0.0), metric).values()) / n
    return {
        "metric": metric,
        "drop_rate": d,
        "noise_free_value": sum(clean.values()) / n,
        "noise_free_drop": realized,
        "n": n,
    }


def rate(k: int, reps: int) -> dict[str, Any]:
    iv = wilson(k, reps)
    return {"k": k, "reps": reps, "rate": iv.estimate, "low": iv.low, "high": iv.high}


def experiment(b: Bench, reps: int, drop: float, log: Callable[[str], None]) -> dict[str, Any]:
    calibration = b.run(0)
    floors = floors_of(calibration, b.metrics)
    null: dict[str, int] = {}
    power: dict[str, int] = {}
    values: dict[str, list[float]] = {"null": [], "drop": []}
    realized: list[float] = []
    spreads: list[tuple[float, float]] = []
    t0 = time.process_time()
    for r in range(reps):
        base, same, worse = b.run(2 * r + 1), b.run(2 * r + 2), b.run(2 * r + 2, drop)
        for counts, cur in ((null, same), (power, worse)):
            for rule, fired in rule_verdicts(b, base, cur, floors).items():
                counts[rule] = counts.get(rule, 0) + int(fired)
        spreads.append(spread(base, same, b.metrics[0]))
        primary = f"retrieval.{b.metrics[0]}"
        v = [x["metrics_n"][primary]["value"] for x in (base, same, worse)]
        values["null"] += v[:2]
        values["drop"].append(v[2])
        realized.append(v[1] - v[2])
        if (r + 1) % 10 == 0:
            log(f"  {b.name}: {r + 1}/{reps} pairs, {time.process_time() - t0:.0f} s CPU")
    return {
        "floors": floors,
        "calibration_values": {m: calibration["metrics_n"][f"retrieval.{m}"]["value"] for m in b.metrics},
        "false_alarms": {k: rate(v, reps) for k, v in sorted(null.items())},
        "power": {k: rate(v, reps) for k, v in sorted(power.items())},
        "primary_metric_range_unchanged": [min(values["null"]), max(values["null"])],
        "mean_realized_drop": sum(realized) / len(realized),
        # from the mean sd of an unchanged pair's per-case drops and its mean discordance
        "detectable_80": detectable(len(values_of(calibration, b.metrics[0])), *map(float, np.mean(spreads, axis=0))),
        "cpu_s": time.process_time() - t0,
    }


# ---------------------------------------------------------------- output


def cell(r: Mapping[str, Any]) -> str:
    return f"{r['k']}/{r['reps']} = {r['rate']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"


def table(results: Mapping[str, Mapping[str, Any]]) -> str:
    names = list(results)
    rules = list(next(iter(results.values()))["false_alarms"])
    headers = ["rule"] + [f"{n}: {w}" for n in names for w in ("false alarms", "power (5-pt drop)")]
    rows = []
    for rule in rules:
        row = [rule]
        for n in names:
            row += [cell(results[n]["false_alarms"][rule]), cell(results[n]["power"][rule])]
        rows.append(row)
    return md_table(headers, rows)


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="independent pairs per dataset and design (default 200)")
    ap.add_argument("--rank-noise", type=float, default=0.15, help="fraction of questions whose top hit moves (0.15)")
    ap.add_argument("--squad-n", type=int, default=300, help="SQuAD questions (default 300)")
    ap.add_argument(
        "--check-runs", type=int, default=3, help="real gate runs per dataset checked against in-process runs"
    )
    args = ap.parse_args(argv)
    payload: dict[str, Any] = run_header(NAME, argv)
    tmp = Path(tempfile.mkdtemp(prefix="gate_noise_"))

    def log(msg: str) -> None:
        print(msg, flush=True)

    try:
        payload["datasets"] = {
            "demo": demo_dataset(tmp / "demo"),
            "squad300": squad_dataset(tmp / "squad", args.squad_n),
        }
        benches = [
            make_bench("demo", tmp / "demo", tmp / "demo" / "corpus", ("recall@5", "mrr"), args.rank_noise, tmp),
            make_bench(
                "squad300",
                tmp / "squad",
                tmp / "squad" / "corpus.jsonl",
                ("doc.recall@5", "doc.mrr"),
                args.rank_noise,
                tmp,
            ),
        ]
        payload["settings"] = {
            "rank_noise": args.rank_noise,
            "reps": args.reps,
            "alpha": 0.05,
            "today_max_drop": TODAY_MAX_DROP,
            "paired_tolerances": list(TOLERANCES),
            "target_drop": TARGET_DROP,
            "passage_chars": PASSAGE_CHARS,
        }
        results: dict[str, Any] = {}
        for b in benches:
            cal = calibrate_drop(b)
            log(
                f"{b.name}: drop_rate {cal['drop_rate']:.4f} -> noise-free {cal['metric']} "
                f"{cal['noise_free_value']:.3f} falls {cal['noise_free_drop']:.3f} (n={cal['n']})"
            )
            seeds = [(1, 0.0), (2, 0.0), (2, cal["drop_rate"])][: args.check_runs]
            checked = check_against_gate(b, seeds, tmp)
            log(f"{b.name}: {len(checked)} real gate runs identical to the in-process runs, case by case")
            res = experiment(b, args.reps, cal["drop_rate"], log)
            res.update({"metrics": list(b.metrics), "drop_calibration": cal, "checked_against_gate": checked})
            results[b.name] = res
        payload["results"] = results
        payload["table_markdown"] = table(results)
        payload["load_average_at_end"] = load_average()
        print()
        print(payload["table_markdown"])
        print(f"\nwrote {write_results(NAME, payload)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
