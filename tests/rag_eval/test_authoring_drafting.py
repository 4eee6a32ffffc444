"""``python -m rag_eval draft`` against the scripted OpenAI-compatible server: every recipe
drafts from the demo corpus, quotes are checked, every other outcome is counted, the
cache and the budget hold, and an echoed key never reaches a draft."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval.authoring.drafting import ATTEMPTS_PER_DRAFT
from rag_eval.authoring.drafts import load_drafts
from rag_eval.authoring.recipes import RECIPES, TASKS
from rag_eval.cli import main
from rag_eval.corpus import load_documents
from rag_eval.golden.resolve import ChunkLookup
from tests.support.draft_replies import drafting_model, reply_for
from tests.support.openai_server import Reply, ScriptedOpenAIServer, Status

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "golden_sets" / "demo_maths"
KEY = "sk-draft-SECRET-4242"


@pytest.fixture
def model(openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> ScriptedOpenAIServer:
    openai_server.set_default("chat", drafting_model)
    monkeypatch.setenv("RAG_DRAFT_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAG_DRAFT_MODEL", "drafter-m")
    monkeypatch.setenv("RAG_DRAFT_API_KEY", KEY)
    monkeypatch.setenv("RAG_DRAFT_MAX_RETRIES", "0")
    return openai_server


def draft(tmp_path: Path, *extra: str, out: str = "drafts.jsonl") -> int:
    return main(
        [
            "draft",
            "--corpus",
            str(DEMO / "corpus"),
            "--out",
            str(tmp_path / out),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
        + list(extra)
    )


def test_every_recipe_drafts_from_the_demo_corpus_and_every_quote_is_in_its_document(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenarios = [a for r in RECIPES for a in ("--scenario", f"{r}:2")]
    assert draft(tmp_path, "--golden-set", str(DEMO / "golden.jsonl"), *scenarios) == 0
    drafts = load_drafts(tmp_path / "drafts.jsonl")
    assert sorted({d.recipe for d in drafts}) == sorted(RECIPES)
    assert len(drafts) == 2 * len(RECIPES)
    lookup = ChunkLookup(load_documents(DEMO / "corpus"), [])
    for d in drafts:
        assert d.status == "draft" and d.tags["scenario"] == d.recipe
        assert all(lookup.locate(doc, quote) for doc, quote in d.evidence), d.id
        assert d.provenance["model"] == "drafter-m" and len(str(d.provenance["prompt_sha256"])) == 64
        assert d.provenance["source_docs"] and d.provenance["time"]
    by = {d.recipe: d for d in drafts}
    assert len(by["cross-topic"].evidence) == 2 and len({doc for doc, _ in by["cross-topic"].evidence}) == 2
    assert by["missing-condition"].expected_action == "clarify"
    assert by["negative"].expected_action == "refuse" and not by["negative"].evidence and by["negative"].review_note
    assert str(by["colloquial"].provenance["source_item"]).startswith("demo-")  # the golden set's items come first
    across = by["multi-chunk"]
    (doc, start, end), (first, second) = across.provenance["spans"][0], across.passages
    assert doc == first.doc_id == second.doc_id
    assert start < first.end <= second.start < end  # the span crosses from one passage into the next
    # the demo corpus is Chinese: every prompt was Chinese
    assert all(
        r.json["messages"][-1]["content"].startswith(tuple(TASKS["zh"].values())) for r in model.requests_of("chat")
    )
    out = capsys.readouterr().out
    assert f"drafted {2 * len(RECIPES)}" in out and "skipped: too short" in out


def test_a_quote_not_in_the_document_is_rejected_and_counted(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {"question": "什么是集合？", "answer_points": ["集合"], "quote": "这句话不在任何文档里出现过"}
    model.enqueue(Reply(json.dumps(bad, ensure_ascii=False)), Reply("not json at all"))
    assert draft(tmp_path, "--scenario", "standard:3") == 0
    out = capsys.readouterr().out
    # 3 wanted: the first two replies fail (one per reason), so 5 calls make the 3 drafts
    assert "rejected: quote not found 1" in out and "rejected: unparseable 1" in out and "drafted 3" in out
    assert "'这句话不在任何文档里出现过' is not in document" in out
    assert model.calls("chat") == 3 + 2
    assert all(d.question != bad["question"] for d in load_drafts(tmp_path / "drafts.jsonl"))


def test_a_rerun_on_the_cache_makes_no_call(model: ScriptedOpenAIServer, tmp_path: Path) -> None:
    assert draft(tmp_path, "--scenario", "standard:2", "--scenario", "cross-topic:1") == 0
    calls = model.calls("chat")
    assert calls == 3
    assert draft(tmp_path, "--scenario", "standard:2", "--scenario", "cross-topic:1", out="again.jsonl") == 0
    assert model.calls("chat") == calls
    first = [d.to_dict() for d in load_drafts(tmp_path / "drafts.jsonl")]
    again = [d.to_dict() for d in load_drafts(tmp_path / "again.jsonl")]
    assert [{**d, "provenance": {**d["provenance"], "time": ""}} for d in first] == [
        {**d, "provenance": {**d["provenance"], "time": ""}} for d in again
    ]


def test_the_budget_stops_drafting_cleanly(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DRAFT_CONCURRENCY", "1")
    assert draft(tmp_path, "--scenario", "standard:4", "--scenario", "negative:2", "--budget-tokens", "1") == 1
    out = capsys.readouterr().out
    assert model.calls("chat") == 1  # the one call before the budget was reached
    assert "drafted 1" in out and "stopped: budget reached 5" in out  # 4 + 2 wanted, 1 made
    assert len(load_drafts(tmp_path / "drafts.jsonl")) == 1


def test_an_echoed_key_never_reaches_a_draft_or_the_page(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def echo(payload: dict[str, Any]) -> Reply:
        reply = reply_for(payload)
        reply["question"] += f" (key {KEY})"
        reply["answer_points"] = [f"{KEY} says hi", *reply.get("answer_points", [])]
        return Reply(json.dumps(reply, ensure_ascii=False))

    model.set_default("chat", echo)
    assert draft(tmp_path, "--scenario", "standard:2") == 0
    assert main(["review", str(tmp_path / "drafts.jsonl"), "--out", str(tmp_path / "page.html")]) == 0
    text = (tmp_path / "drafts.jsonl").read_text(encoding="utf-8")
    assert "[redacted]" in text
    for output in (text, (tmp_path / "page.html").read_text(encoding="utf-8"), capsys.readouterr().out):
        assert KEY not in output
    assert all(
        KEY not in p.read_text(encoding="utf-8", errors="replace")
        for p in (tmp_path / "cache").rglob("*")
        if p.is_file()
    )


def test_nothing_drafted_ends_with_the_reason_and_no_file(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model.set_default("chat", lambda payload: Reply("I cannot help with that."))
    assert draft(tmp_path, "--scenario", "standard:2") == 1
    out = capsys.readouterr().out
    # each wanted draft is tried ATTEMPTS_PER_DRAFT times before the run gives up on it
    assert f"rejected: unparseable {2 * ATTEMPTS_PER_DRAFT}" in out and "no draft written" in out
    assert not (tmp_path / "drafts.jsonl").exists()


def test_english_notes_get_english_prompts_and_short_passages_are_skipped(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tea.md").write_text(
        "# Tea\n\nShort line.\n\n<!-- page 1 -->\n\nGreen tea is steamed or pan-fired soon after picking, which stops "
        "oxidation and keeps the leaves green. Black tea is fully oxidised before it is dried.\n",
        encoding="utf-8",
    )
    assert main(["draft", "--corpus", str(notes), "--scenario", "standard:1", "--out", str(tmp_path / "d.jsonl"),
                 "--cache-dir", str(tmp_path / "cache")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "skipped: no content 2" in out and "skipped: too short 1" in out and "drafted 1" in out
    (req,) = model.requests_of("chat")
    assert req.json["messages"][-1]["content"].startswith(TASKS["en"]["standard"])
    (d,) = load_drafts(tmp_path / "d.jsonl")
    assert d.evidence[0][0] == "tea" and d.evidence[0][1].startswith("Green tea is steamed")


def test_an_existing_drafts_file_is_never_overwritten(
    model: ScriptedOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "drafts.jsonl").write_text("a person's edits\n", encoding="utf-8")
    assert draft(tmp_path, "--scenario", "standard:1") == 2
    assert "never overwritten" in capsys.readouterr().err
    assert (tmp_path / "drafts.jsonl").read_text(encoding="utf-8") == "a person's edits\n"
    assert model.calls("chat") == 0


def test_a_bad_scenario_names_the_valid_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert draft(tmp_path, "--scenario", "standrad:2") == 2
    assert "unknown recipe 'standrad'; valid: standard, no-term" in capsys.readouterr().err


@pytest.mark.parametrize("knows", [True, False])
def test_a_negative_is_kept_only_when_the_systems_retrieval_finds_no_support(
    knows: bool,
    model: ScriptedOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the scripted model's negative asks about renormalisation, which no demo passage covers
    text = "量子场论里的重整化群方程在高考里怎么考？这是一段讲解。" if knows else "与此无关的一段话。"
    module = f"negsys_{'knows' if knows else 'not'}"  # one module per case: imports are cached
    (tmp_path / f"{module}.py").write_text(
        "class Sut:\n"
        "    def retrieve(self, question, top_k=None):\n"
        f"        return {{'items': [{{'id': 'c1', 'text': {text!r}, 'metadata': {{'doc_id': 'x'}}}}]}}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code = draft(tmp_path, "--scenario", "negative:1", "--pipeline", f"{module}:Sut")
    out = capsys.readouterr().out
    if knows:  # the system found a chunk holding its terms: rejected on each of the tries
        assert code == 1 and f"rejected: negative answerable from the corpus {ATTEMPTS_PER_DRAFT}" in out
        assert "the system retrieved a chunk holding most of its terms" in out
    else:
        assert code == 0
        (kept,) = load_drafts(tmp_path / "drafts.jsonl")
        assert "and the system retrieved none" in kept.review_note


def test_the_reply_schema_is_asked_for_and_a_mode_the_server_refuses_is_not_asked_again(
    model: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_DRAFT_CONCURRENCY", "1")
    refused = {"error": {"message": "response_format: Input should be 'text' or 'json_object'", "type": "x"}}
    model.enqueue(Status(500, refused), Status(400, refused))
    assert draft(tmp_path, "--scenario", "standard:2") == 0
    formats = [(r.json.get("response_format") or {}).get("type") for r in model.requests_of("chat")]
    assert formats == ["json_schema", "json_object", None, None]  # each mode refused once, then plain text
    sent = model.requests_of("chat")[1].json["response_format"]["schema"]
    assert sent["required"] == ["question", "answer_points", "quote"] and sent["additionalProperties"] is False
    assert len(load_drafts(tmp_path / "drafts.jsonl")) == 2
