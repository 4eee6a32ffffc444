"""``calibrate`` against the scripted OpenAI-compatible server (real HTTP, the real judge stack).

The server answers each response with a verdict whose correctness lists hold scripted
counts (TP, FP, FN); the test computes the judge's agreement with people independently
(from the raw JSON files, numpy and scipy) and compares it with the record. A rerun makes
0 calls; a token budget stops the run cleanly; the CLI writes the file and the report shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from rag_eval.calibrate.judging import prompt_version
from rag_eval.calibrate.meta_eval import DATA, load_meta_eval, sample
from rag_eval.calibrate.record import lines, load_record
from rag_eval.calibrate.run import calibrate
from rag_eval.cli import main
from rag_eval.judge.config import JudgeConfig
from rag_eval.judge.prompt import neutralise
from tests.support.judge_replies import blocks, native_verdict
from tests.support.openai_server import Reply, ScriptedOpenAIServer, reply

KEY = "sk-calibrate-test-key-0123456789"
N, SEED = 8, 3


def _raw() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    human = json.loads((DATA / "human_labeled_data.json").read_text(encoding="utf-8"))
    rows = json.loads((DATA / "baseline_ragchecker.json").read_text(encoding="utf-8"))
    return human, rows


def _chosen() -> list[int]:
    """The positions of the sampled instances, in the sample's order."""
    meta = load_meta_eval()
    return [meta.instances.index(i) for i in sample(meta.instances, N, SEED)]


def _script() -> dict[str, tuple[int, int, int] | None]:
    """Response text → (TP, FP, FN) the scripted judge reports; None: an invalid reply (an error).

    Instance k of the sample, side s: TP = (3k + s) mod 4, FP = (k + 2s) mod 3, FN = (2k + s) mod 3;
    instance 1's model2 is then (0, 0, 0), every score undefined; the first instance's model1 gets
    (0, 0, 2) (precision undefined, recall and F1 0), the third's model2 errors."""
    _, rows = _raw()
    out: dict[str, tuple[int, int, int] | None] = {}
    for k, pos in enumerate(_chosen()):
        for s, side in enumerate(("model1", "model2")):
            text = rows[pos][side]["response"]
            counts: tuple[int, int, int] | None = ((3 * k + s) % 4, (k + 2 * s) % 3, (2 * k + s) % 3)
            if (k, s) == (0, 0):
                counts = (0, 0, 2)
            if (k, s) == (2, 1):
                counts = None
            assert text not in out and neutralise(text) == text  # the prompt quotes it as it is
            out[text] = counts
    return out


def _responder(script: Mapping[str, tuple[int, int, int] | None]) -> Any:
    def respond(request: Any) -> Reply:
        counts = script[blocks(request)["ANSWER"]]
        if counts is None:
            return reply("not a verdict", prompt_tokens=900, completion_tokens=10)
        verdict = native_verdict(request)
        verdict["citations"] = []  # no context: no marker names a chunk
        tp, fp, fn = counts
        verdict["correctness"] = {"tp": [f"t{i}" for i in range(tp)], "fp": [f"f{i}" for i in range(fp)],
                                  "fn": [f"m{i}" for i in range(fn)]}  # fmt: skip
        return reply(json.dumps(verdict), prompt_tokens=900, completion_tokens=100)

    return respond


def _expected(metric: str, score: str) -> tuple[float, float]:
    """The paper's rule from scratch: scripted counts → scores → differences → median → pairs."""
    human, rows = _raw()
    script = _script()

    def value(pos: int, side: str) -> float:
        counts = script[rows[pos][side]["response"]]
        if counts is None:
            return float("nan")
        tp, fp, fn = counts
        denom = {"precision": tp + fp, "recall": tp + fn, "factual_f1": tp + 0.5 * (fp + fn)}[score]
        return tp / denom if denom else float("nan")

    chosen = _chosen()
    d = np.array([value(p, "model2") - value(p, "model1") for p in chosen])
    d[np.isnan(d)] = np.nanmedian(d)
    x = np.repeat(d, 2)  # min–max normalisation is linear: it changes neither correlation
    y = np.array([h[f"{metric}_label"] for p in chosen for h in (human[2 * p], human[2 * p + 1])], dtype=float)
    return float(stats.pearsonr(x, y)[0]), float(stats.spearmanr(x, y)[0])


def _config(srv: ScriptedOpenAIServer, cache: Path, **kw: Any) -> JudgeConfig:
    env = {"RAG_JUDGE_BASE_URL": srv.base_url, "RAG_JUDGE_MODEL": "judge-m", "RAG_JUDGE_API_KEY": KEY,
           "RAG_JUDGE_MAX_RETRIES": "0"}  # fmt: skip
    return JudgeConfig.from_env(env, cache_dir=cache, **kw)


@pytest.fixture
def scripted(openai_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    openai_server.set_default("chat", _responder(_script()))
    return openai_server


def test_agreement_is_the_hand_computed_correlation(scripted: ScriptedOpenAIServer, tmp_path: Path) -> None:
    record = calibrate(_config(scripted, tmp_path / "cache"), n=N, seed=SEED, concurrency=3)
    assert record["sample"] == {"requested": N, "seed": SEED, "chosen": N, "judged": N, "not_run": 0}
    assert record["errors"] == 1
    for metric, score in (("correctness", "precision"), ("completeness", "recall"), ("overall", "factual_f1")):
        row = record["agreement"][metric]["judge"]
        want_r, want_rho = _expected(metric, score)
        assert row["pearson"]["estimate"] == pytest.approx(want_r, abs=1e-9), metric
        assert row["spearman"]["estimate"] == pytest.approx(want_rho, abs=1e-9), metric
        assert row["n"] == N and row["pearson"]["low"] <= row["pearson"]["estimate"] <= row["pearson"]["high"]
    # precision: undefined for instance 0's model1 (0, 0, 2) and instance 1's model2 (0, 0, 0), and
    # instance 2's model2 errored → 3 medians; recall and F1 are defined for (0, 0, 2) → 2 each
    assert [record["agreement"][m]["judge"]["imputed"] for m in ("correctness", "completeness", "overall")] == [3, 2, 2]
    assert record["judge"] == {
        "engine": "native", "model": "judge-m", "prompt_version": prompt_version(), "max_tokens": 1500,
        "mode": "json_schema", "scores": {"correctness": "precision", "completeness": "recall", "overall": "factual_f1"},
    }  # fmt: skip
    assert record["agreement"]["overall"]["people"]["n"] == N
    # 2 responses × 8 instances, the invalid one asked once more (the repair call)
    assert record["cost"]["calls"] == scripted.calls("chat") == 2 * N + 1
    assert record["cost"]["per_instance"]["calls"] == pytest.approx((2 * N + 1) / N)
    assert record["cost"]["prompt_tokens"] == 900 * (2 * N + 1)
    assert KEY not in json.dumps(record)


def test_a_rerun_makes_no_call(scripted: ScriptedOpenAIServer, tmp_path: Path) -> None:
    first = calibrate(_config(scripted, tmp_path / "cache"), n=N, seed=SEED)
    sent = scripted.calls("chat")
    again = calibrate(_config(scripted, tmp_path / "cache"), n=N, seed=SEED)
    # the errored response is not cached (only valid verdicts are): it is asked again, 2 calls
    assert scripted.calls("chat") - sent == 2
    assert again["cost"]["cached_calls"] == 2 * N - 1
    assert again["agreement"] == first["agreement"]


def test_a_rerun_without_errors_makes_zero_calls(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    script = {k: (v if v is not None else (1, 1, 1)) for k, v in _script().items()}
    openai_server.set_default("chat", _responder(script))
    calibrate(_config(openai_server, tmp_path / "cache"), n=N, seed=SEED)
    sent = openai_server.calls("chat")
    again = calibrate(_config(openai_server, tmp_path / "cache"), n=N, seed=SEED)
    assert openai_server.calls("chat") == sent
    assert again["cost"]["calls"] == again["cost"]["cached_calls"] == 2 * N
    assert again["errors"] == 0


def test_the_budget_stops_it_cleanly(scripted: ScriptedOpenAIServer, tmp_path: Path) -> None:
    # each call costs 1,000 tokens; one at a time, the 4th call finds 3,000 spent and is not sent
    record = calibrate(_config(scripted, tmp_path / "cache", budget_tokens=3000), n=N, seed=SEED, concurrency=1)
    assert scripted.calls("chat") == 3
    assert record["sample"]["judged"] == 1 and record["sample"]["not_run"] == N - 1
    assert record["agreement"]["overall"]["judge"] == {"absent": "1 instance(s) judged: a correlation needs at least 2"}
    assert sum(1 for i in record["instances"] for s in ("model1", "model2") if i[s].get("not_run")) == 2 * N - 3


def test_cli_writes_the_file_and_the_report_shows_it(
    scripted: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in (("RAG_JUDGE_BASE_URL", scripted.base_url), ("RAG_JUDGE_MODEL", "judge-<m>"),
                        ("RAG_JUDGE_API_KEY", KEY), ("RAG_JUDGE_MAX_RETRIES", "0")):  # fmt: skip
        monkeypatch.setenv(name, value)
    out = tmp_path / "calibration.json"
    code = main(["calibrate", "--n", str(N), "--seed", str(SEED), "--out", str(out), "--cache", str(tmp_path / "c")])
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0
    progress = [line for line in captured.err.splitlines() if line.startswith("calibrate: instance ")]
    assert len(progress) == 2 * N and sum(": error: " in line for line in progress) == 1  # one line per response
    record = load_record(out)
    assert record["judge"]["model"] == "judge-<m>" and record["sample"]["judged"] == N
    assert printed.splitlines()[: len(lines(record))] == lines(record)
    assert f"calibration: {out}" in printed and KEY not in printed
    sample_results = Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json"
    html_path = tmp_path / "report.html"
    assert main(["report", str(sample_results), "--out", str(html_path), "--calibration", str(out)]) == 0
    html = html_path.read_text(encoding="utf-8")
    assert 'id="calibration"' in html and "judge-&lt;m&gt;" in html and "judge-<m>" not in html


def test_cli_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("RAG_JUDGE_BASE_URL", "RAG_JUDGE_MODEL", "RAG_JUDGE_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert main(["calibrate", "--out", str(tmp_path / "c.json")]) == 2
    assert "judge not configured" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    sample_results = Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json"
    assert main(["report", str(sample_results), "--out", str(tmp_path / "r.html"), "--calibration", str(bad)]) == 2
    assert "not a calibration file" in capsys.readouterr().err


def test_the_bench_runs_it_against_any_endpoint(
    scripted: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bench/judge_meta_eval.py with --base-url: the same record, and its table says what the record says."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "judge_meta_eval.py"
    spec = importlib.util.spec_from_file_location("judge_meta_eval_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.json"
    argv = ["--base-url", scripted.base_url, "--model", "judge-m", "--api-key", KEY, "--n", str(N), "--seed", str(SEED)]
    assert bench.main([*argv, "--cache", str(tmp_path / "cache"), "--results", str(out), "--concurrency", "2"]) == 0
    record = json.loads(out.read_text(encoding="utf-8"))["record"]
    want_r, want_rho = _expected("overall", "factual_f1")
    judge_row = next(
        line for line in capsys.readouterr().out.splitlines() if line.startswith("| native judge, judge-m")
    )
    cells = [c.strip() for c in judge_row.strip("|").split("|")]
    assert cells[1] == str(N)
    assert cells[4].startswith(f"{100 * want_r:.1f} [") and f" / {100 * want_rho:.1f} [" in cells[4]
    assert record["agreement"]["overall"]["judge"]["pearson"]["estimate"] == pytest.approx(want_r, abs=1e-9)


def test_cli_refuses_to_write_over_an_input(
    scripted: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", scripted.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-m")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", KEY)
    before = (DATA / "manifest.json").read_bytes()
    assert main(["calibrate", "--n", "2", "--out", str(DATA / "manifest.json")]) == 2
    assert "is the input the shipped manifest.json" in capsys.readouterr().err
    assert (DATA / "manifest.json").read_bytes() == before and scripted.calls("chat") == 0


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
def test_cli_refuses_an_out_that_is_the_price_file(
    kind: str, scripted: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("RAG_JUDGE_BASE_URL", scripted.base_url)
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-m")
    monkeypatch.setenv("RAG_JUDGE_API_KEY", KEY)
    prices = tmp_path / "prices.toml"
    prices.write_text('[prices."judge-m"]\nprompt = 1.0\ncompletion = 2.0\n', encoding="utf-8")
    before = prices.read_bytes()
    out = prices
    if kind != "same":
        out = tmp_path / "calibration.json"
        out.symlink_to(prices) if kind == "symlink" else out.hardlink_to(prices)
    assert main(["calibrate", "--n", "2", "--prices", str(prices), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {out} is the input --prices {prices} of the same command" in err and "(nothing was written)" in err
    assert prices.read_bytes() == before and scripted.calls("chat") == 0
