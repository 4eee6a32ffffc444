"""Labels against a run's judge, checked by hand arithmetic on an 8-case fixture.

judge.citation_faithfulness (binary): the judge says 1 1 0 1 0 1 1 0 on c1..c8.
Annotator a labels c1=1 c2=0 c3=0 c4=1, annotator b labels c1=1 c4=0.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from rag_eval.labels.compare import LabelReport, compare_labels
from rag_eval.labels.model import Label
from rag_eval.stats.closed_form import wilson

JUDGE = {"c1": 1.0, "c2": 1.0, "c3": 0.0, "c4": 1.0, "c5": 0.0, "c6": 1.0, "c7": 1.0, "c8": 0.0}
Z95 = 1.959963984540054


def _case(cid: str, value: float) -> dict[str, Any]:
    metrics: dict[str, float] = {"citation_faithfulness": value}
    details: dict[str, Any] = {"answer": "…"}
    if cid == "c1":
        metrics["faithfulness"] = 0.5
        details["judge"] = {
            "claims": [{"claim": "甲", "verdict": "yes"}, {"claim": "乙", "verdict": "no"}],
            "key_facts": [{"index": 1, "fact": "f", "verdict": "partially_covered"}],
        }
    return {"id": cid, "tier": "judge", "outcome": "pass", "metrics": metrics, "details": details}


RESULTS: dict[str, Any] = {
    "cases": [
        *(_case(c, v) for c, v in JUDGE.items()),
        {"id": "c9", "tier": "judge", "outcome": "error", "metrics": {}, "details": {}},
        {"id": "c1", "tier": "retrieval", "outcome": "pass", "metrics": {"recall@5": 1.0}, "details": {}},
    ]
}
M = "judge.citation_faithfulness"
LABELS = [
    Label("c1", M, 1.0, "a", source="l:1"),
    Label("c2", M, 0.0, "a", source="l:2"),
    Label("c3", M, 0.0, "a", source="l:3"),
    Label("c4", M, 1.0, "a", source="l:4"),
    Label("c4", M, 0.0, "b", source="l:5"),
    Label("c1", M, 1.0, "b", source="l:6"),
    Label("c1", "judge.faithfulness", 1.0, "a", "claim", 1, "yes", source="l:7"),
    Label("c1", "judge.faithfulness", 1.0, "a", "claim", 2, "yes", source="l:8"),
    Label("c99", M, 1.0, "a", source="l:9"),
    Label("c1", "judge.made_up", 1.0, "a", source="l:10"),
    Label("c9", M, 1.0, "a", source="l:11"),
    Label("c1", "judge.faithfulness", 1.0, "a", "claim", 5, "yes", source="l:12"),
    Label("c2", "judge.faithfulness", 1.0, "a", source="l:13"),
]


@pytest.fixture(scope="module")
def report() -> LabelReport:
    return compare_labels(LABELS, RESULTS)


def test_agreement_bias_and_inter_annotator_by_hand(report: LabelReport) -> None:
    m = next(x for x in report.metrics if x.metric == M)
    assert (m.kind, m.n_judged, m.n_errors, m.n_labelled, m.n_pairs, m.annotators) == ("binary", 8, 1, 4, 6, ("a", "b"))
    # pairs (human, judge): (1,1) (0,1) (0,0) (1,1) (0,1) (1,1): 4 of 6 equal
    assert m.accuracy == pytest.approx(4 / 6)
    # p_o = 2/3; human 1s 3/6, judge 1s 5/6: p_e = .5·5/6 + .5·1/6 = .5; κ = (2/3 − .5)/.5
    assert m.kappa == pytest.approx(1 / 3)
    assert m.spearman is None and m.mae is None  # binary: accuracy and κ
    # per case human means c1 1, c2 0, c3 0, c4 .5 against judge 1 1 0 1: mean(0, 1, 0, .5)
    assert m.bias == pytest.approx(0.375)
    # c1 [1, 1], c4 [1, 0]: D_o = 2/4, D_e = (3·1·2)/(4·3) = .5 → α = 0
    assert m.inter_annotator is not None
    assert (m.inter_annotator.n_cases, m.inter_annotator.annotators, m.inter_annotator.level) == (
        2,
        ("a", "b"),
        "nominal",
    )
    assert m.inter_annotator.alpha == pytest.approx(0.0)


def test_three_estimates_by_hand(report: LabelReport) -> None:
    m = next(x for x in report.metrics if x.metric == M)
    assert m.judge_only == wilson(5, 8)  # five 1s of eight judged cases
    y, yhat = [1.0, 0.0, 0.0, 0.5], [1.0, 1.0, 0.0, 1.0]
    mean_y = 0.375
    se_labels = math.sqrt((sum(v * v for v in y) / 4 - mean_y**2) / 4)
    assert m.labels_only.estimate == pytest.approx(mean_y) and m.labels_only.se == pytest.approx(se_labels)
    assert m.labels_only.low == pytest.approx(mean_y - Z95 * se_labels)
    assert (m.labels_only.n, m.ppi.n, m.judge_only.n) == (4, 8, 8)  # labels only: the 4 labelled cases
    # λ = Cov(Y, Ŷ) / ((1 + n/N)·Var(all 8 Ŷ, ddof 1)) = .09375 / (2 · 1.875/7) = 0.175
    assert m.lam == pytest.approx(0.175)
    lam = 0.175
    rect = [a - lam * b for a, b in zip(y, yhat)]
    mean_r = sum(rect) / 4
    theta = lam * 0.5 + mean_r
    se = math.sqrt(lam**2 * 0.25 / 4 + sum((r - mean_r) ** 2 for r in rect) / 4 / 4)
    assert m.ppi.estimate == pytest.approx(theta) and theta == pytest.approx(0.33125)
    assert m.ppi.se == pytest.approx(se) and m.ppi.high == pytest.approx(theta + Z95 * se)
    assert m.ppi.method == "ppi++" and m.ppi.has_interval


def test_claim_labels_get_their_own_agreement(report: LabelReport) -> None:
    m = next(x for x in report.metrics if x.metric == "judge.faithfulness")
    assert m.n_labelled == 0 and m.n_pairs == 0 and m.bias is None
    assert m.labels_only.estimate is None and m.ppi.reason == "no labelled case"
    (units,) = m.units
    # claim 1: yes vs yes, claim 2: yes vs no → accuracy .5; human all 1, judge 1/0: p_e = .5, κ = 0
    assert (units.unit, units.n, units.accuracy, units.kappa) == ("claim", 2, 0.5, 0.0)


def test_labels_outside_the_run_are_listed_and_left_out(report: LabelReport) -> None:
    assert [(x.source, x.reason) for x in report.left_out] == [
        ("l:9", f"case not judged in this run for {M}"),
        ("l:10", "the run did not judge judge.made_up"),
        ("l:11", "the judge failed on this case (an error): there is no judge value to compare with"),
        ("l:12", "the judge's verdict on this case has no claim 5"),
        ("l:13", "case not judged in this run for judge.faithfulness"),
    ]
    assert [m.metric for m in report.metrics] == ["judge.citation_faithfulness", "judge.faithfulness"]


def test_report_round_trips_through_json_primitives(report: LabelReport) -> None:
    import json

    data = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert LabelReport.from_dict(data) == report


def test_continuous_metric_gets_spearman_and_mae_and_a_fully_labelled_run_no_ppi() -> None:
    results = {
        "cases": [
            {"id": c, "tier": "judge", "outcome": "pass", "metrics": {"faithfulness": v}, "details": {}}
            for c, v in (("x1", 0.2), ("x2", 0.6), ("x3", 0.9))
        ]
    }
    labels = [
        Label("x1", "judge.faithfulness", 0.0, "a"),
        Label("x2", "judge.faithfulness", 1.0, "a"),
        Label("x3", "judge.faithfulness", 0.5, "a"),
    ]
    (m,) = compare_labels(labels, results).metrics
    assert m.kind == "continuous" and m.accuracy is None and m.kappa is None
    # ranks human 1 3 2, judge 1 2 3: ρ = 1 − 6·Σd²/(n(n²−1)) = 1 − 6·2/24 = .5
    assert m.spearman == pytest.approx(0.5)
    assert m.mae == pytest.approx((0.2 + 0.4 + 0.4) / 3) and m.bias == pytest.approx((0.2 - 0.4 + 0.4) / 3)
    assert m.ppi.estimate is None and m.ppi.reason is not None and "every judged case is labelled" in m.ppi.reason
    assert m.labels_only.method == "t" and m.labels_only.estimate == pytest.approx(0.5)


def test_hint_success_from_dialogue_cases() -> None:
    results = {
        "cases": [
            {
                "id": "d1",
                "tier": "dialogue",
                "outcome": "pass",
                "details": {"hint_verdict": {"success": True, "reason": ""}},
            },
            {
                "id": "d2",
                "tier": "dialogue",
                "outcome": "fail",
                "details": {"hint_verdict": {"success": None, "reason": "x"}},
            },
            {"id": "d3", "tier": "dialogue", "outcome": "pass", "details": {"hint_verdict": None}},
            {
                "id": "d4",
                "tier": "dialogue",
                "outcome": "pass",
                "details": {"hint_verdict": {"success": False, "reason": ""}},
            },
        ]
    }
    report = compare_labels(
        [
            Label("d1", "dialogue.hint_success", 1.0, "a"),
            Label("d2", "dialogue.hint_success", 1.0, "a"),
            Label("d3", "dialogue.hint_success", 1.0, "a"),
        ],
        results,
    )
    (m,) = report.metrics
    assert (m.n_judged, m.n_errors, m.n_labelled, m.accuracy) == (2, 1, 1, 1.0)
    assert [x.case for x in report.left_out] == ["d2", "d3"]


def test_a_filled_sheet_of_a_written_results_file_gives_a_report(tmp_path: Any) -> None:
    """results file → sample → sheet filled by a person who disagrees on every fifth case → report."""
    import json

    from rag_eval.labels.load import load_labels
    from rag_eval.labels.page import write_sample
    from rag_eval.labels.sample import sample_cases
    from rag_eval.results.file import load_results
    from tests.rag_eval._results_factory import make_results

    path = tmp_path / "r.json"
    path.write_text(json.dumps(make_results(60)), encoding="utf-8")
    results = load_results(path)
    sample = sample_cases(results, 20, seed=11, metrics=["judge.coverage"])
    sheet = write_sample(sample, tmp_path / "lab", str(path)).sheet
    judge = {
        c["id"]: c["metrics"]["coverage"]
        for c in results["cases"]
        if c["tier"] == "judge" and "coverage" in c["metrics"]
    }
    lines = [json.loads(x) for x in sheet.read_text(encoding="utf-8").splitlines()]
    flip = {x["case"] for i, x in enumerate(lines) if i % 5 == 0}
    filled = [
        {
            **x,
            "annotator": "li",
            "label": ("covered" if (judge[x["case"]] == 1.0) != (x["case"] in flip) else "not_covered"),
        }
        for x in lines
    ]
    sheet.write_text("".join(json.dumps(x) + "\n" for x in filled), encoding="utf-8")
    report = compare_labels(load_labels(sheet), results)
    (m,) = report.metrics
    assert (m.metric, m.kind, m.n_labelled, m.n_pairs, m.n_judged) == ("judge.coverage", "binary", 20, 20, len(judge))
    assert m.accuracy == pytest.approx(16 / 20) and m.n_errors == 1  # the factory's one malformed-reply case
    assert m.ppi.has_interval and m.lam is not None and 0.0 <= m.lam <= 1.0
    assert not report.left_out
    assert LabelReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report
