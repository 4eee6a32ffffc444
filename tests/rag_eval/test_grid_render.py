"""The comparison's renderings (rag_eval/grid/render.py): escaped, absent values said."""

from __future__ import annotations

from typing import Any

from rag_eval.grid.render import markdown, page, pareto_svg

HOSTILE = "<script>alert(1)</script>|x"


def comparison(recall: float | None, ms: dict[str, Any] | None) -> dict[str, Any]:
    estimate = {"value": recall, "n": 10, "ci": [0.5, 0.9] if recall is not None else None}
    entry = {
        "name": f"top_k=3,label={HOSTILE}",
        "stages": [{"stage": HOSTILE, "recall": estimate, "precision": estimate, "irrelevant": estimate}],
        "false_retrieval": {"value": None, "n": 0, "ci": None, "ci_note": "no case measured it"},
        "latency": {"case_ms": ms, "stage_ms": {}, "stage_ms_note": "absent, not 0"},
    }
    return {
        "split": "all",
        "k": 5,
        "reference": entry["name"],
        "configurations": [entry],
        "tests": [],
        "holm": {"m": 0, "alpha": 0.05},
        "losses": {},
        "loss_counts": {},
        "pareto": [entry["name"]],
        "problems": {"other": "no results on all: pytest exited 2"},
    }


def test_user_text_is_escaped_in_the_page_and_the_plot() -> None:
    html = page(comparison(0.7, {"p50": 10.0, "p95": 20.0, "n": 10}))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "default-src 'none'" in html  # nothing loads, nothing runs


def test_markdown_keeps_a_pipe_in_a_name_out_of_the_table_syntax() -> None:
    md = markdown(comparison(0.7, {"p50": 10.0, "p95": 20.0, "n": 10}))
    row = next(line for line in md.splitlines() if line.startswith("| `top_k=3"))
    assert "\\|x" in row
    assert row.count(" | ") == 7  # eight cells: the name's pipe did not add one
    assert "—" in row  # false retrieval has no value: a dash, never 0
    assert "**`other` has no results:**" in md


def test_a_configuration_without_latency_is_listed_not_drawn_at_zero() -> None:
    svg = pareto_svg(comparison(0.7, None))
    assert "<circle" not in svg and "no configuration has both recall and latency" in svg


def test_tokens_and_cost_show_where_counted_and_are_absent_otherwise() -> None:
    from rag_eval.grid.measures import tokens

    assert tokens({"run": {"usage": {"retrieval": {"prompt_tokens": 0, "completion_tokens": 0}}}}) is None
    priced = {"judge": {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.5}, "passk": {"prompt_tokens": 5}}
    assert tokens({"run": {"usage": priced}}) == {"prompt_tokens": 105, "completion_tokens": 20, "cost_usd": 0.5}
    unpriced = {"judge": {"prompt_tokens": 100, "completion_tokens": 20}}
    assert "cost_usd" not in (tokens({"run": {"usage": unpriced}}) or {})
    c = comparison(0.7, {"p50": 10.0, "p95": 20.0, "n": 10})
    assert "tokens and cost are absent" in page(c)
    c["configurations"][0]["tokens"] = {"prompt_tokens": 105, "completion_tokens": 20, "cost_usd": 0.5}
    html = page(c)
    assert "<td>105</td><td>20</td><td>0.5000</td>" in html


def _two(n_a: int, n_b: int) -> dict[str, Any]:
    """Two configurations whose recall rests on n_a and n_b cases (e.g. one errored on a case)."""
    c = comparison(0.7, {"p50": 10.0, "p95": 20.0, "n": 10})
    other = {**c["configurations"][0], "name": "top_k=5"}
    other["stages"] = [{**other["stages"][0], "recall": {"value": 0.8, "n": n_b, "ci": [0.6, 0.9]}}]
    first = c["configurations"][0]
    first["stages"] = [{**first["stages"][0], "recall": {"value": 0.7, "n": n_a, "ci": [0.5, 0.9]}}]
    c["configurations"] = [first, other]
    return c


def test_every_estimate_says_how_many_cases_it_rests_on() -> None:
    md = markdown(_two(10, 10)).splitlines()
    header = next(line for line in md if line.startswith("| configuration"))
    assert "| recall@5 (n=10) | precision@5 (n=10) | irrelevant@5 (n=10) | false retrieval |" in header
    assert "0.800 [0.60, 0.90] |" in next(line for line in md if line.startswith("| `top_k=5`"))
    # a configuration that lost a case to an error: each cell names its own count
    md = markdown(_two(10, 9)).splitlines()
    header = next(line for line in md if line.startswith("| configuration"))
    assert "| recall@5 | precision@5 (n=10) |" in header
    assert "0.800 [0.60, 0.90] n=9 |" in next(line for line in md if line.startswith("| `top_k=5`"))
    html = page(_two(10, 9))
    assert "<th>n (cases)</th>" in html and "<td>9 / 10 / 10</td>" in html and "<td>10</td>" in html
