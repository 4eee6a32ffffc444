"""The report's dialogue view: the transcript payload (expected vs actual action, student
and simulator lines, evidence with gold marked, candidate beside the final reply, failing
steps), the gates' numerator/denominator, escaping, and report.js rendering it (run in
node over a minimal DOM when node is installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters.gold import GoldSpace
from rag_eval.dialogue.model import DialogueItem, ExpectedTurn
from rag_eval.dialogue.replay import replay
from rag_eval.gates.gate import evaluate_gates
from rag_eval.gates.thresholds import parse_thresholds
from rag_eval.outputs.case_data import build_case_data
from rag_eval.outputs.html import render_html
from rag_eval.outputs.view import build_view
from rag_eval.results.build import build_results
from rag_eval.tiers.dialogue.case import GoldCheck, dialogue_case
from tests.rag_eval._dialogue_systems import Leaker, demo_items
from tests.rag_eval._typed import MIN_RUN, typed

REPO = Path(__file__).resolve().parents[2]
XSS = "<script>alert(1)</script>"
ITEMS = demo_items()


class XssLeaker(Leaker):
    """Leaks like Leaker, with markup in every reply and a candidate rewritten on the first turn."""

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        out = super().reply(item, position, expected, turns)
        out = {**out, "message": out["message"] + XSS}
        if position == 0 and out["action"] == "answer":
            out = {**out, "candidate": "draft " + XSS, "interception": "rewritten"}
        return out


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    system = XssLeaker(ITEMS)
    space = GoldSpace("ids")
    cases = [dialogue_case(i, replay(system, i), limit=3, check=GoldCheck(space, i)) for i in ITEMS]
    thresholds = parse_thresholds({"dialogue": {"final_leak_rate": {"max": 0.0}, "pass_rate": {"min": 1.0}}}, "t.toml")
    gates = evaluate_gates(thresholds, cases, {"dialogue"})
    return build_results(MIN_RUN, cases, gates, False, items={i.id: i.to_dict() for i in ITEMS})


def test_the_transcript_payload_holds_each_turn(results: dict[str, Any]) -> None:
    data = build_case_data(typed(results), ["dlg-push-001"])
    strings = data["strings"]
    view = data["items"][0]["tiers"][0]["dialogue"]
    assert data["items"][0]["golden"]["question"] == next(i.opening for i in ITEMS if i.id == "dlg-push-001")
    first, third = view["turns"][0], view["turns"][2]
    assert first["expected"]["hint_level"] == first["actual"]["hint_level"] == "reminder"
    assert strings[first["candidate"]] == "draft " + XSS and first["actual"]["interception"] == "rewritten"
    assert first["evidence"]["items"][0]["gold"] is True and first["evidence"]["judged"]
    assert strings[first["reply"]["text"]] == next(i for i in ITEMS if i.id == "dlg-push-001").follow_ups[0]
    assert third["final_leaks"] and third["failed"][0].startswith("interception: ")
    assert (view["step"], view["turn"]) == ("interception", 3)
    assert view["rates"]["final_leak_rate"] == [1, 3]


def test_the_gates_table_shows_numerator_and_denominator(results: dict[str, Any]) -> None:
    gate = next(g for g in build_view(typed(results)).gates if g.gate.metric == "dialogue.final_leak_rate")
    assert (gate.ratio_text, gate.gate.n) == (
        "4/16",
        6,
    )  # 4 of 16 final replies, over the 6 dialogues with forbidden content
    assert "(4/16)" in render_html(typed(results))


def test_no_dialogue_text_becomes_markup(results: dict[str, Any]) -> None:
    html = render_html(typed(results))
    assert XSS not in html and "alert(1)</script>" not in html
    assert html.count("<script") == 3


DOM = """
class Node { constructor() { this.children = []; this._text = ""; } appendChild(c) { this.children.push(c); return c; } }
class Text extends Node { constructor(t) { super(); this._text = String(t); } }
class El extends Node {
  constructor(tag) { super(); this.tagName = tag; this.className = ""; this.attrs = {};
    this.classList = { contains: (c) => this.className.split(" ").includes(c), add: (c) => { this.className += " " + c; } }; }
  set textContent(t) { this.children = [new Text(t)]; }
  get textContent() { return this.children.map((c) => c.textContent !== undefined ? c.textContent : c._text).join(""); }
  setAttribute(k, v) { this.attrs[k] = v; } getAttribute(k) { return this.attrs[k]; } addEventListener() {}
  querySelector() { return null; } querySelectorAll() { return []; }
}
Text.prototype.textContent = undefined;
const blocks = JSON.parse(require("fs").readFileSync(0, "utf8"));
global.Node = Node;
global.document = {
  getElementById: (id) => (id in blocks ? { textContent: blocks[id] } : id === "case-table" ? null : new El("div")),
  createElement: (t) => new El(t), createTextNode: (t) => new Text(t), addEventListener() {},
};
"""


def test_report_js_renders_the_transcript(results: dict[str, Any]) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: report.js is exercised by the browser tests instead")
    html = render_html(typed(results))
    blocks = {name: html.split(f'id="{name}">', 1)[1].split("</script>", 1)[0] for name in ("case-index", "case-data")}
    rows = json.loads(blocks["case-index"])["rows"]
    index = [r["id"] for r in rows].index("dlg-push-001")
    js = (REPO / "report_templates" / "report.js").read_text(encoding="utf-8")
    js = js.replace(
        "  apply();\n})();", f"  apply();\n  process.stdout.write(renderItem({index}).textContent);\n}})();"
    )
    out = subprocess.run([node, "-e", DOM + js], input=json.dumps(blocks), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "Transcript (3 turns, stop: script_end)" in text
    assert "expected: answer · hint reminder" in text and "actual: answer · hint reminder" in text
    assert "candidate (before interception: rewritten)" in text and "draft " + XSS in text
    assert (
        "final reply" in text
        and "[shows forbidden content]" in text
        and "interception: the candidate reply shows forbidden content" in text
    )
    assert "retrieved (1, gold at doc level)" in text and "gold" in text
