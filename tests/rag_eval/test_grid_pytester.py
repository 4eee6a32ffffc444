"""The grid end to end (issue 35): a user system whose top_k and score threshold change
its results in a known way, run as a grid of 2 × 2 configurations in a tmp repository.

The system ranks item n's gold chunk at rank n % 6 + 1 with score 1 − 0.1·(rank − 1), and
keeps only items scoring at least ``threshold``; the final list is the first ``top_k``.
So recall@5 is 1 exactly when rank ≤ min(top_k, 5) and the score passes the threshold.
Negatives score from 0.7 down: a threshold of 0.75 keeps none of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rag_eval.grid.comparison import ALPHA
from rag_eval.stats.paired import holm

N = 12
NEG = 3
SYSTEM = """
class System:
    stages = {"stages": ["dense", "final"], "final": "final", "thresholded": "dense"}

    def __init__(self, threshold):
        self.threshold = threshold

    def retrieve(self, question, top_k=None):
        n = int(question.split()[1])
        negative = n >= 90
        rank = n % 6 + 1
        ids = [f"x{n:02d}-{j}" for j in range(1, 11)]
        if not negative:
            ids[rank - 1] = f"d{n:02d}#0"
        top = 0.7 if negative else 1.0
        items = [
            {"id": i, "text": "text " + i, "score": round(top - 0.1 * (r - 1), 3), "metadata": {"doc_id": i[:3]}}
            for r, i in enumerate(ids, 1)
        ]
        dense = [it for it in items if it["score"] >= self.threshold]
        return {"items": dense[: top_k or 10], "stages": {"dense": dense}}


def make(options):
    return System(float(options.get("threshold", 0.0)))
"""
GRID = """
[grid]
pipeline = "gridsys:make"
pytest_args = ["-m", "retrieval", "-p", "no:randomly"]
reference = { top_k = 5, threshold = 0.0 }
k = 5
out = "reports/grid"
{extra}

[axes]
top_k = [5, 3]
threshold = [0.0, 0.75]
"""
THRESHOLDS = '[defaults]\nmin_cases = 3\n\n[retrieval]\n"recall@5" = { min = 0.1 }\n'


def golden() -> str:
    rows: list[dict[str, Any]] = [
        {
            "id": f"q{n:02d}",
            "question": f"question {n} about topic {n}",
            "evidence": [{"chunk_id": f"d{n:02d}#0", "doc_id": f"d{n:02d}"}],
            "expected_action": "answer",
            "split": "tune" if n % 2 else "holdout",
        }
        for n in range(N)
    ]
    rows += [
        {"id": f"n{n}", "question": f"question {n} off topic", "expected_action": "refuse", "split": "tune"}
        for n in range(90, 90 + NEG)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def make_repo(root: Path, system: str = SYSTEM, grid: str = GRID.replace("{extra}", "")) -> Path:
    (root / "gridsys.py").write_text(system, encoding="utf-8")
    (root / "evals").mkdir(exist_ok=True)
    (root / "evals" / "golden.jsonl").write_text(golden(), encoding="utf-8")
    (root / "thresholds.toml").write_text(THRESHOLDS, encoding="utf-8")
    (root / "grid.toml").write_text(grid, encoding="utf-8")
    (root / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:deepeval -p no:randomly\nrag_eval_dataset = evals\npythonpath = .\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user repository, the working directory (jobs run where pytest would)."""
    for name in [n for n in os.environ if n.startswith("RAG_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return make_repo(tmp_path)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 2 × 2 grid run once for the tests that only read it (4 jobs)."""
    root = make_repo(tmp_path_factory.mktemp("grid"))
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("RAG_")]:
            mp.delenv(name)
        mp.chdir(root)
        assert grid() == 0
    return root


def hits(top_k: int, threshold: float) -> dict[str, float]:
    """recall@5 per positive case by hand."""
    out = {}
    for n in range(N):
        rank = n % 6 + 1
        score = round(1.0 - 0.1 * (rank - 1), 3)
        out[f"q{n:02d}"] = 1.0 if rank <= min(top_k, 5) and score >= threshold else 0.0
    return out


def grid(*args: str) -> int:
    from rag_eval.cli import main

    return main(["grid", "grid.toml", *args])


def comparison(repo: Path, split: str = "all") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((repo / "reports" / "grid" / split / "comparison.json").read_text())
    return data


def by_name(c: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in c["configurations"]}


def test_every_cell_equals_hand_arithmetic(ran: Path) -> None:
    repo = ran
    c = comparison(repo)
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).parents[2] / "rag_eval" / "grid" / "comparison.schema.json").read_text())
    jsonschema.validate(c, schema)  # the file is what its schema says
    entries = by_name(c)
    assert set(entries) == {f"top_k={k},threshold={t}" for k in (5, 3) for t in (0.0, 0.75)}
    for k in (5, 3):
        for t in (0.0, 0.75):
            e = entries[f"top_k={k},threshold={t}"]
            final = e["stages"][-1]
            assert final["stage"] == "final"
            expected = hits(k, t)
            assert final["recall"]["value"] == pytest.approx(sum(expected.values()) / N)
            assert final["recall"]["n"] == N
            assert final["precision"]["value"] == pytest.approx(sum(expected.values()) / N / 5)
            kept = min(k, 5 if t == 0.0 else 3)  # items above 0.75: scores 1.0, 0.9, 0.8
            irrelevant = [(kept - h) / kept for h in expected.values()]
            assert final["irrelevant"]["value"] == pytest.approx(sum(irrelevant) / N)
            # negatives: every one returns items at threshold 0, none at 0.75
            assert e["false_retrieval"]["value"] == (1.0 if t == 0.0 else 0.0)
            assert e["false_retrieval"]["n"] == NEG
            assert e["latency"]["case_ms"]["n"] == N + NEG
            assert e["latency"]["stage_ms"] == {} and "absent, not 0" in e["latency"]["stage_ms_note"]
    # 0.5 = 6/12 hits (ranks 1-3) for top_k=3 or threshold 0.75; 10/12 for the reference
    assert entries["top_k=5,threshold=0.0"]["stages"][-1]["recall"]["value"] == pytest.approx(10 / 12)
    assert c["pareto"]  # some configuration is on the front
    md = (repo / "reports" / "grid" / "all" / "comparison.md").read_text()
    assert "| `top_k=3,threshold=0.0`" in md
    html = (repo / "reports" / "grid" / "all" / "comparison.html").read_text()
    assert "<svg" in html and "<script" not in html


def test_paired_p_values_equal_the_gates_own_test_and_holm_is_applied(ran: Path) -> None:
    repo = ran
    c = comparison(repo)
    ref = repo / "reports" / "grid" / "all" / by_name(c)["top_k=5,threshold=0.0"]["slug"] / "results.json"
    (repo / "regression.toml").write_text(
        THRESHOLDS + '\n[regression]\n"retrieval.recall@5" = { max_drop = 0.0, alpha = 0.05 }\n', encoding="utf-8"
    )
    for name, e in by_name(c).items():
        if name == c["reference"]:
            continue
        k, t = e["choice"]["top_k"], e["choice"]["threshold"]
        cfg = repo / f"cfg-{k}-{t}.toml"
        cfg.write_text(f'pipeline = "gridsys:make"\n[options]\nthreshold = {t}\n', encoding="utf-8")
        out = repo / f"pair-{k}-{t}.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
        subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "retrieval", "-q", "--rag-no-report", "--rag-pipeline-config",
             str(cfg), "--rag-top-k", str(k), "--rag-thresholds", "regression.toml", "--rag-baseline", str(ref),
             "--rag-results", str(out)],
            cwd=repo, env=env, capture_output=True, check=False,
        )  # fmt: skip
        gates = json.loads(out.read_text())["gates"]
        gate = next(g for g in gates if g["metric"] == "regression.max_drop retrieval.recall@5")
        row = next(r for r in c["tests"] if r["configuration"] == name and r["metric"] == "retrieval.recall@5")
        assert row["p_worse"] == pytest.approx(gate["p_value"], abs=1e-12)
        lost = sum(1 for a, b in zip(hits(5, 0.0).values(), hits(k, t).values()) if a > b)
        assert row["losses"] == lost and row["wins"] == 0 and row["paired_n"] == N
        assert row["diff"] == pytest.approx(-lost / N)
    names = [f"{r['configuration']} :: {r['metric']}" for r in c["tests"]]
    expected = holm({n: r["p_value"] for n, r in zip(names, c["tests"])}, ALPHA)
    assert c["holm"]["m"] == 3 * 5
    for n, r in zip(names, c["tests"]):
        assert r["p_adjusted"] == expected.adjusted[n]
    statsmodels = pytest.importorskip("statsmodels.stats.multitest")
    _, adjusted, _, _ = statsmodels.multipletests([r["p_value"] for r in c["tests"]], alpha=ALPHA, method="holm")
    assert [r["p_adjusted"] for r in c["tests"]] == pytest.approx(list(adjusted))


def test_a_second_run_reruns_no_finished_configuration(
    ran: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ran
    logs = sorted((repo / "reports" / "grid").rglob("results.log"))
    assert len(logs) == 4  # the first run ran every job
    before = {p: p.stat().st_mtime_ns for p in (repo / "reports" / "grid").rglob("results.json")}
    monkeypatch.chdir(repo)
    assert grid() == 0
    second = capsys.readouterr().out
    assert second.count("finished before: not rerun") == 4 and ": ran in " not in second
    assert {p: p.stat().st_mtime_ns for p in (repo / "reports" / "grid").rglob("results.json")} == before


def test_sharded_jobs_merge_to_the_single_machine_comparison(repo: Path) -> None:
    """2 configurations × 2 shards on two "runners", then --compare-only: the same numbers."""
    two = GRID.replace("threshold = [0.0, 0.75]", "threshold = [0.0]").replace(
        ", threshold = 0.0 }", ", threshold = 0.0 }"
    )
    (repo / "grid.toml").write_text(two.replace("{extra}", ""))
    assert grid() == 0
    single = comparison(repo)
    assert len(single["configurations"]) == 2
    (repo / "grid.toml").write_text(two.replace("{extra}", "shards = 2").replace("reports/grid", "reports/g2"))
    assert grid("--job", "1/2") == 0 and grid("--job", "2/2") == 0  # two CI runners
    assert grid("--compare-only") == 0
    sharded = json.loads((repo / "reports" / "g2" / "all" / "comparison.json").read_text())

    def numbers(c: dict[str, Any]) -> Any:
        return [(e["name"], e["stages"], e["false_retrieval"]) for e in c["configurations"]], [
            {k: v for k, v in t.items()} for t in c["tests"]
        ]

    assert numbers(sharded) == numbers(single)


TRAP = SYSTEM.replace(
    "        rank = n % 6 + 1\n",
    "        rank = n % 6 + 1\n        if n % 2 == 0 and not negative:  # holdout: the threshold looks perfect\n"
    "            rank = 1 if self.threshold > 0 else 7\n",
)


def test_select_chooses_on_tune_and_never_reads_holdout_first(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The trap: on holdout (even n) a threshold puts every gold first and no threshold
    misses every one; on tune (odd n: ranks 2, 4, 6) the reference is best. A choice that
    read holdout would pick a threshold of 0.75; the choice on tune picks the reference,
    and only it runs on holdout."""
    assert "rank = 1 if self.threshold" in TRAP
    (repo / "gridsys.py").write_text(TRAP, encoding="utf-8")
    assert grid("--select", "retrieval.recall@5") == 0
    out = capsys.readouterr().out
    selection = json.loads((repo / "reports" / "grid" / "selection.json").read_text())
    assert selection["chosen"] == "top_k=5,threshold=0.0"  # tune: 4/6 against 2/6 for the others
    tune_est = selection["tune"]  # each number with the cases it rests on and its interval
    assert (tune_est["value"], tune_est["n"], tune_est["configurations"]) == (pytest.approx(4 / 6), 6, 4)
    assert tune_est["ci"][0] <= tune_est["value"] <= tune_est["ci"][1]
    assert set(selection["holdout"]) == {"top_k=5,threshold=0.0"}
    held = selection["holdout"]["top_k=5,threshold=0.0"]
    assert (held["value"], held["n"]) == (0.0, 6)  # honest: the trap shows on holdout
    assert f"{tune_est['value']:.4f} [{tune_est['ci'][0]:.2f}, {tune_est['ci'][1]:.2f}] (n=6) on tune" in out
    holdout_runs = list((repo / "reports" / "grid" / "holdout").glob("*/results.json"))
    assert len(holdout_runs) == 1  # no configuration but the chosen one (here the reference) ran on holdout
    assert "optimistic" in selection["warning"] and "on holdout" in out
    tune = comparison(repo, "tune")
    assert {e["name"] for e in tune["configurations"]} == set(selection["holdout"]) | {
        "top_k=5,threshold=0.75",
        "top_k=3,threshold=0.0",
        "top_k=3,threshold=0.75",
    }


def test_the_pareto_plot_renders_in_chromium(ran: Path) -> None:
    """The comparison page from disk in a real Chromium: one dot per configuration inside the
    plot, every label inside the SVG, the front drawn, no script, no request."""
    from tests.rag_eval.test_outputs_browser import CHROMIUM_ARGS, _chromium, _unavailable

    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    page_file = ran / "reports" / "grid" / "all" / "comparison.html"
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
        page.goto(page_file.as_uri())
        svg = page.locator("svg.pareto").bounding_box()
        dots = [c.bounding_box() for c in page.locator("svg.pareto circle").all()]
        labels = [t.bounding_box() for t in page.locator("svg.pareto text").all()]
        legend = page.locator(".pareto-legend li").all_inner_texts()
        front = page.locator("svg.pareto polyline.front").count()
        browser.close()
    assert svg is not None and svg["width"] > 400 and svg["height"] > 250
    assert len(dots) == 4 and len(legend) == 4 and all(d is not None for d in dots)
    inside = [b for b in dots + labels if b is not None]
    for box in inside:
        assert svg["x"] - 1 <= box["x"] and box["x"] + box["width"] <= svg["x"] + svg["width"] + 1
        assert svg["y"] - 1 <= box["y"] and box["y"] + box["height"] <= svg["y"] + svg["height"] + 1
    assert front == (1 if len(json.loads((ran / "reports/grid/all/comparison.json").read_text())["pareto"]) > 1 else 0)
    assert requests == []


def test_an_output_that_is_an_input_is_refused_and_left_untouched(repo: Path) -> None:
    """Issue 37's rule for the grid too: the comparison may not be written over the grid's
    own pipeline configuration (exit 2, the file byte for byte as it was)."""
    (repo / "g" / "all").mkdir(parents=True)
    base = repo / "g" / "all" / "comparison.md"
    base.write_text('pipeline = "gridsys:make"\n', encoding="utf-8")
    before = base.read_bytes()
    grid_file = GRID.replace("{extra}", 'pipeline_config = "g/all/comparison.md"').replace("reports/grid", "g")
    (repo / "grid.toml").write_text(grid_file, encoding="utf-8")
    assert grid("--compare-only") == 2
    assert base.read_bytes() == before
    assert not (repo / "g" / "all" / "comparison.json").exists()
