"""An adapter kind of one's own, registered from a conftest (issue 32: a built-in adapter
is one module plus one registration): chosen by its bare name, its gold modes checked,
its description written under each case's ``details.system`` as it reports it, and its
keys compared by ``python -m rag_eval merge`` (every key both shards report, except the
per-process state the kind declares, which each results file names in ``run.system_state``
for a merge that never loads the conftest). No file of rag_eval is edited."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_eval.adapters import kinds
from rag_eval.cli import main
from tests.rag_eval._plugin_sandbox import IDS, Sandbox

CONFTEST = '''
import json
import os
from pathlib import Path

from rag_eval.adapters import AdapterKind, register
from rag_eval.adapters.kinds import COMMON_KEYS
from rag_eval.core.contract import Retrieval, RetrievedItem


class Shelf:
    """Ranks the dataset's documents by the characters they share with the question."""

    answers = False

    def __init__(self, corpus):
        rows = [json.loads(line) for line in Path(corpus).read_text(encoding="utf-8").splitlines()]
        self.docs = {r["doc_id"]: r["title"] + " " + r["text"] for r in rows}

    def retrieve(self, question, top_k=None):
        score = {d: len(set(question) & set(text)) for d, text in self.docs.items()}
        ranked = sorted(self.docs, key=lambda d: (-score[d], d))[: top_k or 5]
        return Retrieval(tuple(RetrievedItem(d, self.docs[d], float(score[d]), {"doc_id": d}) for d in ranked))

    def describe(self):
        return {"adapter": "shelf", "model": os.environ["SHELF_MODEL"], "loaded_by": os.environ["SHELF_PROCESS"]}


register(
    AdapterKind(
        "shelf",
        lambda spec, context: Shelf(context.corpus),
        COMMON_KEYS,
        ("ids", "text"),
        state_keys=("loaded_by",),  # which process loaded the shelf: not which system it is
    )
)
'''

THRESHOLDS = '[retrieval]\nerror_rate = { max = 0.0 }\n"doc.recall@5" = { min = 0.0 }\n'


@pytest.fixture(autouse=True)
def _registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pytester runs in this process: the conftest's kind goes to a copy of the registry."""
    monkeypatch.setattr(kinds, "_KINDS", dict(kinds._KINDS))
    yield


def _shard(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, index: int, model: str) -> str:
    monkeypatch.setenv("SHELF_MODEL", model)
    monkeypatch.setenv("SHELF_PROCESS", f"runner-{index}")
    path = sandbox.root / "reports" / f"shard-{index}.json"
    result = sandbox.run(
        "--rag-pipeline", "shelf", "-m", "retrieval", "--rag-shard", f"{index}/2", "--rag-results", str(path)
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return str(path)


def test_a_kind_from_a_conftest_runs_and_its_description_is_each_case_s_system(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.write_conftest(CONFTEST)
    sandbox.write_thresholds(THRESHOLDS)
    monkeypatch.setenv("SHELF_MODEL", "m-1")
    monkeypatch.setenv("SHELF_PROCESS", "runner-1")

    result = sandbox.run("--rag-pipeline", "shelf", "-m", "retrieval")

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=len(IDS), deselected=len(IDS))
    data = sandbox.results()
    assert data["run"]["system"] == {"adapter": "shelf", "gold": "ids", "model": "m-1", "loaded_by": "runner-1"}
    for case in data["cases"]:
        # the framework's own keys (null where nothing says), then what the adapter reports: no other system's keys
        assert case["details"]["system"] == {
            "adapter": "shelf",
            "endpoint": None,
            "gold": "ids",
            "generator": None,
            "info_error": None,
            "model": "m-1",
            "loaded_by": "runner-1",
        }


def test_a_gold_mode_the_kind_does_not_offer_is_refused_naming_the_file(sandbox: Sandbox) -> None:
    sandbox.write_conftest(CONFTEST)
    config = sandbox.root / "shelf.toml"
    config.write_text('pipeline = "shelf"\ngold = "corpus"\n', encoding="utf-8")

    result = sandbox.run("--rag-pipeline-config", str(config), "-m", "retrieval")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*{config}: gold = 'corpus' is not offered by pipeline 'shelf'*valid here: ids, text"]
    )


def test_merge_compares_the_kind_s_keys_and_ignores_its_per_process_state(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox.write_conftest(CONFTEST)
    sandbox.write_thresholds(THRESHOLDS)
    first = _shard(sandbox, monkeypatch, 1, "m-1")
    same = _shard(sandbox, monkeypatch, 2, "m-1")  # loaded_by differs (runner-2): per-process state
    out = sandbox.root / "reports" / "merged.json"
    assert json.loads(Path(first).read_text(encoding="utf-8"))["run"]["system_state"] == ["loaded_by"]
    # `python -m rag_eval merge` is its own command: it loads no conftest, so the shelf kind is
    # unknown to it and its per-process state is known by what the shards wrote
    monkeypatch.setattr(kinds, "_KINDS", {name: k for name, k in kinds._KINDS.items() if name != "shelf"})
    capsys.readouterr()

    assert main(["merge", first, same, "--out", str(out), "--rag-no-report"]) == 0, capsys.readouterr().err
    assert json.loads(out.read_text(encoding="utf-8"))["run"]["system"]["model"] == "m-1"

    other = _shard(sandbox, monkeypatch, 2, "m-2")  # the same shard against another model
    capsys.readouterr()
    assert main(["merge", first, other, "--out", str(out), "--rag-no-report"]) == 2
    err = capsys.readouterr().err
    assert f"run.system.model is 'm-1' in {first} but 'm-2' in {other}" in err
