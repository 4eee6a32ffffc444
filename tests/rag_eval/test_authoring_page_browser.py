"""The review page in a real headless Chromium from file://: 200 drafts load; one is
accepted, one edited (its gold span re-selected in the passage), one rejected, one
near-duplicate accepted; the export merges with ``accept``, the merged set validates and
the near-duplicate is refused with both items named. Model text stays text.

Skipped with the reason without playwright or Chromium, unless RAG_EVAL_REQUIRE_BROWSER=1
(the browser fixtures of test_outputs_browser.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rag_eval.authoring.drafts import Draft, drafts_jsonl
from rag_eval.authoring.passages import passage_pool
from rag_eval.cli import main
from rag_eval.corpus import load_documents
from rag_eval.golden.load import load_golden_set
from tests.rag_eval.test_outputs_browser import browser, page  # noqa: F401  (fixtures)
from tests.support.draft_replies import sentences

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "golden_sets" / "demo_maths" / "corpus"
XSS = '</script><img src=x onerror="alert(1)">'
N = 200

SELECT = """([id, target]) => {
  const box = document.querySelector(`section.item[data-id="${id}"] .passage`);
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const at = node.textContent.indexOf(target);
    if (at >= 0) {
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + target.length);
      window.getSelection().removeAllRanges();
      window.getSelection().addRange(range);
      return true;
    }
  }
  return false;
}"""


def two_hundred_drafts() -> list[Draft]:
    """200 drafts over the demo corpus's passages (each quoting its passage's first sentence)."""
    pool = passage_pool(load_documents(DEMO_CORPUS), seed=1)
    passages = [p for p in pool.round_robin() if len(sentences(p.text)) >= 2]
    out = []
    for n in range(N):
        p = passages[n % len(passages)]
        question = f"第{n}题：{sentences(p.text)[0][:12]}是什么意思？" if n else f"第0题 {XSS}"
        out.append(
            Draft(
                id=f"draft-{n:03d}",
                recipe="standard",
                question=question,
                answer_points=(sentences(p.text)[0],),
                evidence=((p.doc_id, sentences(p.text)[0]),),
                tags={"scenario": "standard"},
                expected_action="answer",
                passages=(p,),
                provenance={"recipe": "standard", "source_docs": [p.doc_id], "model": "m", "prompt_sha256": "0" * 64},
            )
        )
    # draft-199 asks what draft-001 asks, from the same passage: a near-duplicate
    out[199] = Draft(**{**out[1].__dict__, "id": "draft-199", "question": out[1].question.replace("？", "?")})
    return out


def test_review_two_hundred_drafts_export_accept_and_validate(
    page: Any,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    drafts = two_hundred_drafts()
    (tmp_path / "drafts.jsonl").write_bytes(drafts_jsonl(drafts))
    assert main(["review", str(tmp_path / "drafts.jsonl")]) == 0
    html = tmp_path / "drafts.html"
    page.goto(html.as_uri())
    assert page.locator("section.item").count() == N
    first = page.locator('section.item[data-id="draft-000"]')
    assert XSS in first.inner_text() and page.locator("section.item img").count() == 0  # text, not markup
    assert first.locator(".passage mark").inner_text() == drafts[0].evidence[0][1]  # the gold span highlighted

    page.locator('section.item[data-id="draft-001"] h2').click()
    page.keyboard.press("a")  # accept, by keyboard
    edited = drafts[2]
    page.locator('section.item[data-id="draft-002"] h2').click()
    page.keyboard.press("e")
    second = sentences(edited.passages[0].text)[1]
    assert page.evaluate(SELECT, ["draft-002", second])
    page.keyboard.press("s")  # the selection becomes the gold span
    assert page.locator('section.item[data-id="draft-002"] .passage mark').inner_text() == second
    page.locator('section.item[data-id="draft-002"] textarea[name="question"]').fill("改过的问题：这一段说了什么？")
    page.locator('section.item[data-id="draft-003"] button[data-decision="reject"]').click()
    page.locator('section.item[data-id="draft-003"] input.reason').fill("问题太笼统")
    page.locator('section.item[data-id="draft-199"] button[data-decision="accept"]').click()
    assert page.locator("#progress").inner_text() == f"4 of {N} reviewed"

    page.reload()  # progress is kept in the browser
    assert page.locator("#progress").inner_text() == f"4 of {N} reviewed"
    assert page.locator('section.item[data-id="draft-002"] .passage mark').inner_text() == second

    page.locator("#export").click()
    assert "Write your name first" in page.locator("#status").inner_text()
    page.fill("#reviewer", "李老师")
    with page.expect_download() as info:
        page.locator("#export").click()
    decisions = tmp_path / "decisions.jsonl"
    info.value.save_as(decisions)
    rows = [json.loads(line) for line in decisions.read_text(encoding="utf-8").splitlines()]
    assert [(r["draft"], r["decision"]) for r in rows] == [
        ("draft-001", "accept"), ("draft-002", "edit"), ("draft-003", "reject"), ("draft-199", "accept")
    ]  # fmt: skip

    dataset = tmp_path / "ds"
    shutil.copytree(DEMO_CORPUS, dataset / "corpus")
    golden = dataset / "golden.jsonl"
    capsys.readouterr()
    assert main(["accept", str(decisions), "--into", str(golden), "--corpus", str(dataset / "corpus")]) == 1
    out = capsys.readouterr().out
    # refused, naming both: the near-duplicate and the item it duplicates
    assert "draft draft-199" in out and "near-duplicate of gold-standard-001" in out
    assert "2 item(s) added, 0 updated, 1 draft(s) rejected by the reviewer, 1 refused" in out
    items = load_golden_set(golden)
    assert [(i.id, i.question) for i in items] == [
        ("gold-standard-001", drafts[1].question),
        ("gold-standard-002", "改过的问题：这一段说了什么？"),
    ]
    assert items[1].evidence[0].any_of[0].quote == second
    assert [h["reviewer"] for i in items for h in i.extra["review"]] == ["李老师", "李老师"]
    assert items[1].extra["review"][0]["decision"] == "edit"
    assert main(["validate", "--dataset", str(dataset)]) == 0
    assert "2 items in" in capsys.readouterr().out

    # accepting the same export again adds nothing and keeps the file as it was
    before = golden.read_bytes()
    assert main(["accept", str(decisions), "--into", str(golden), "--corpus", str(dataset / "corpus")]) == 1
    assert golden.read_bytes() == before
    assert "already merged" in capsys.readouterr().out
