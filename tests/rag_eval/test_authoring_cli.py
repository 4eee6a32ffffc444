"""The authoring commands as docs/golden-sets.md walks through them, from an empty folder
and a user's own Markdown notes: draft, review, accept, validate; --fill-gaps; the
path rules (no output is an input)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.authoring.drafts import Draft, load_drafts
from rag_eval.cli import main
from rag_eval.golden.load import load_golden_set
from tests.support.draft_replies import drafting_model
from tests.support.openai_server import ScriptedOpenAIServer

TEA = """# Tea

Green tea is steamed or pan-fired soon after picking, which stops oxidation and keeps the leaves green.
Black tea is fully oxidised before it is dried, which gives it a darker colour and a stronger taste.

Oolong sits between the two: its leaves are partly oxidised, bruised at the edges and then fired.
"""
BREWING = """# Brewing

Water for green tea should be well below boiling, around 80 degrees, or the leaves turn bitter quickly.

Black tea takes water at a full boil and steeps for three to five minutes before the leaves are removed.
"""


@pytest.fixture
def model(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    openai_server.set_default("chat", drafting_model)
    monkeypatch.setenv("RAG_DRAFT_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_DRAFT_MODEL", "drafter-m")
    monkeypatch.setenv("RAG_DRAFT_API_KEY", "none")
    return openai_server


def exported(drafts: list[Draft], decision: str, reviewer: str = "Ana") -> str:
    """What the review page exports for ``decision`` on every draft (its export is tested in Chromium)."""
    rows: list[dict[str, Any]] = []
    for d in drafts:
        raw = d.to_dict()
        item = {k: raw[k] for k in ("question", "answer_points", "tags", "expected_action", "evidence", "history")}
        rows.append({"kind": "draft", "draft": d.id, "decision": decision, "reason": "", "reviewer": reviewer,
                     "time": "2026-12-07T12:00:00Z", "passages": raw["passages"], "provenance": raw["provenance"],
                     "item": item})  # fmt: skip
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def test_the_walkthrough_from_an_empty_folder_with_markdown_notes(
    model: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals" / "corpus").mkdir(parents=True)  # docs/golden-sets.md: the layout
    (tmp_path / "evals" / "corpus" / "tea.md").write_text(TEA, encoding="utf-8")
    (tmp_path / "evals" / "corpus" / "brewing.md").write_text(BREWING, encoding="utf-8")
    scenarios = ["--scenario", "standard:3", "--scenario", "cross-topic:1", "--scenario", "negative:1"]
    assert main(["draft", "--dataset", "evals", "--out", "evals/drafts.jsonl", *scenarios]) == 0
    drafts = load_drafts(Path("evals/drafts.jsonl"))
    assert sorted(d.recipe for d in drafts) == ["cross-topic", "negative", "standard", "standard", "standard"]
    assert main(["review", "evals/drafts.jsonl"]) == 0
    assert Path("evals/drafts.html").is_file()
    Path("review-decisions.jsonl").write_text(exported(drafts, "accept"), encoding="utf-8")
    assert main(["accept", "review-decisions.jsonl", "--into", "evals/golden.jsonl", "--dataset", "evals"]) == 0
    assert "5 item(s) added" in capsys.readouterr().out
    assert main(["validate", "--rag-dataset", "evals", "--gold", "text"]) == 0
    assert "5 items in evals/golden.jsonl: valid" in capsys.readouterr().out
    items = load_golden_set(Path("evals/golden.jsonl"))
    assert sorted(i.id for i in items) == [
        "gold-cross-topic-001", "gold-negative-001", "gold-standard-001", "gold-standard-002", "gold-standard-003"
    ]  # fmt: skip
    negative = next(i for i in items if i.scenario == "negative")
    assert negative.expected_action == "refuse" and not negative.evidence
    # every item of one document shares its split (tea.md's and brewing.md's may differ)
    by_doc: dict[str, set[str]] = {}
    for i in items:
        for doc in i.gold_doc_ids:
            by_doc.setdefault(doc, set()).add(i.split)
    assert all(len(splits) == 1 for splits in by_doc.values()), by_doc


def test_fill_gaps_drafts_the_thin_cells_with_their_tags(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "tea.md").write_text(TEA, encoding="utf-8")
    (tmp_path / "corpus" / "brewing.md").write_text(BREWING, encoding="utf-8")
    line = {"id": "t1", "question": "Why is green tea green?", "tags": {"scenario": "standard", "level": "easy"},
            "evidence": [{"doc_id": "tea", "quote": "keeps the leaves green"}]}  # fmt: skip
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(line) + "\n", encoding="utf-8")
    args = ["draft", "--corpus", str(tmp_path / "corpus"), "--golden-set", str(golden), "--fill-gaps",
            "--dimension", "level", "--min", "2", "--cache-dir", str(tmp_path / "cache"),
            "--out", str(tmp_path / "gaps.jsonl")]  # fmt: skip
    assert main(args) == 0
    (draft,) = load_drafts(tmp_path / "gaps.jsonl")  # level=easy has 1 of 2: one draft
    assert draft.tags == {"scenario": "standard", "level": "easy"}
    (req,) = model.requests_of("chat")
    assert "level=easy" in req.json["messages"][-1]["content"]
    capsys.readouterr()
    args[args.index("2")] = "1"
    args[-1] = str(tmp_path / "none.jsonl")
    assert main(args) == 0
    assert "no thin cell" in capsys.readouterr().out


def linked(kind: str, target: Path, at: Path) -> Path:
    """``target`` itself (``same``), or a ``symlink`` or a ``hardlink`` to it made at ``at``."""
    if kind == "symlink":
        at.symlink_to(target)
    elif kind == "hardlink":
        at.hardlink_to(target)
    return target if kind == "same" else at


def command_over_its_input(command: str, kind: str, tmp_path: Path) -> tuple[list[str], Path]:
    """``command``'s arguments with an output that is one of its inputs, and that input."""
    golden_text = (Path(__file__).parents[2] / "golden_sets" / "demo_maths" / "golden.jsonl").read_bytes()
    if command == "draft":
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "tea.md").write_text(TEA, encoding="utf-8")
        golden = tmp_path / "golden.jsonl"
        golden.write_bytes(golden_text)
        out = linked(kind, golden, tmp_path / "drafts.jsonl")
        return ["draft", "--corpus", "notes", "--golden-set", str(golden), "--out", str(out)], golden
    if command == "evidence":
        results = tmp_path / "results.json"
        results.write_bytes((Path(__file__).parents[2] / "tests" / "data" / "report_sample_results.json").read_bytes())
        (tmp_path / "ev").mkdir()
        candidates = tmp_path / "ev" / "evidence-candidates.jsonl"  # where evidence writes its candidates
        candidates.write_bytes(golden_text)
        golden = linked(kind, candidates, tmp_path / "golden.jsonl")
        return ["evidence", str(results), "--golden-set", str(golden), "--out", "ev"], candidates
    given = tmp_path / "given.jsonl"
    given.write_text("{}\n", encoding="utf-8")
    out = linked(kind, given, tmp_path / "out.jsonl")
    return [command, str(given), "--into" if command == "accept" else "--out", str(out)], given


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("command", ["draft", "review", "accept", "evidence"])
def test_no_output_may_be_an_input(
    command: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv, given = command_over_its_input(command, kind, tmp_path)
    before = hashlib.sha256(given.read_bytes()).hexdigest()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is the input" in err and "of the same command: it would be overwritten" in err, err
    assert "(nothing was written)" in err
    assert hashlib.sha256(given.read_bytes()).hexdigest() == before
    assert not list(tmp_path.glob("**/*.html")) and not list(tmp_path.glob("**/*.tmp*"))


def test_draft_never_replaces_an_existing_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "tea.md").write_text(TEA, encoding="utf-8")
    drafts = tmp_path / "drafts.jsonl"
    drafts.write_text('{"edited": "by a person"}\n', encoding="utf-8")
    assert main(["draft", "--corpus", str(tmp_path / "notes"), "--out", str(drafts)]) == 2
    assert f"--out {drafts} exists and may hold drafts: it is never overwritten" in capsys.readouterr().err
    assert drafts.read_text(encoding="utf-8") == '{"edited": "by a person"}\n'


def test_a_bad_decisions_line_names_file_line_and_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    decisions = tmp_path / "d.jsonl"
    decisions.write_text('{"kind": "draft", "draft": "x", "decision": "maybe", "reviewer": "a"}\n', encoding="utf-8")
    assert main(["accept", str(decisions), "--into", str(tmp_path / "g.jsonl")]) == 2
    assert f"{decisions}:1: decision 'maybe' is not one of accept, edit, reject" in capsys.readouterr().err
    assert not (tmp_path / "g.jsonl").exists()
