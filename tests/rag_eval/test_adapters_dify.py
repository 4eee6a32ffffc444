"""The Dify preset against a scripted server answering Dify's documented shape
(POST /v1/datasets/{dataset_id}/retrieve -> records[].segment / score / child_chunks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters import AdapterConfigError, load_spec
from rag_eval.adapters.dify import dify_config
from rag_eval.adapters.http import HttpSystem
from tests.rag_eval._plugin_sandbox import GOLDEN, IDS, Sandbox
from tests.support.scripted_http import ScriptedJSONServer, Status

KEY = "dataset-Xy12secretKey"
DATASET = "7c1f6a52-0b9e-4d3a-a1c2-9e8f7d6c5b4a"
PATH = f"/v1/datasets/{DATASET}/retrieve"


def segment(seg_id: str, doc_id: str, content: str) -> dict[str, Any]:
    """A record as Dify documents it (fields the preset does not read included)."""
    return {
        "id": seg_id,
        "position": 1,
        "document_id": doc_id,
        "content": content,
        "answer": "",
        "word_count": 9,
        "tokens": 12,
        "keywords": ["k"],
        "index_node_id": "n1",
        "index_node_hash": "h1",
        "hit_count": 1,
        "enabled": True,
        "disabled_at": None,
        "disabled_by": None,
        "status": "completed",
        "created_by": "u",
        "created_at": 1741267200,
        "indexing_at": 1741267200,
        "completed_at": 1741267200,
        "error": None,
        "stopped_at": None,
        "document": {"id": doc_id, "data_source_type": "upload_file", "name": f"{doc_id}.txt"},
    }


def record(
    seg_id: str, doc_id: str, content: str, score: float, children: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "segment": segment(seg_id, doc_id, content),
        "child_chunks": children or [],
        "score": score,
        "tsne_position": None,
        "files": [],
        "summary": None,
    }


def answer(path: str, body: Any) -> Status:
    return Status(
        200,
        {
            "query": {"content": body["query"]},
            "records": [
                record(
                    "seg-1",
                    "doc-a",
                    "Dify is an open-source LLM app development platform.",
                    0.92,
                    [
                        {"id": "child-1", "content": "Dify is open source.", "position": 1, "score": 0.95},
                        {"id": "child-2", "content": "LLM app platform.", "position": 2, "score": 0.71},
                    ],
                ),
                record(
                    "seg-2",
                    "doc-b",
                    "Knowledge bases hold documents.",
                    0.41,
                    [{"id": "child-3", "content": "Knowledge bases.", "position": 1, "score": 0.40}],
                ),
            ],
        },
    )


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"DIFY_DATASET_ID": DATASET, "DIFY_API_KEY": KEY}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


def test_the_preset_sends_difys_documented_request(env: dict[str, str]) -> None:
    with ScriptedJSONServer(answer) as srv:
        sut = HttpSystem(dify_config({}, "dify", {**env, "DIFY_BASE_URL": srv.url}))  # "/v1" is added
        result = sut.retrieve("What is Dify?")

    req = srv.requests[0]
    assert (req.method, req.path, req.headers["authorization"]) == ("POST", PATH, f"Bearer {KEY}")
    assert req.json == {
        "query": "What is Dify?",
        "retrieval_model": {
            "search_method": "hybrid_search",
            "reranking_enable": False,
            "top_k": 10,
            "score_threshold_enabled": False,
        },
    }
    assert [(i.id, i.doc_id, i.score, i.metadata["title"]) for i in result.items] == [
        ("seg-1", "doc-a", 0.92, "doc-a.txt"),
        ("seg-2", "doc-b", 0.41, "doc-b.txt"),
    ]
    assert result.items[1].text == "Knowledge bases hold documents."
    assert KEY not in str(sut.describe()) and sut.describe()["adapter"] == "dify"
    assert not sut.answers


def test_parent_child_mode_ranks_the_child_chunks_with_their_parents_document(env: dict[str, str]) -> None:
    with ScriptedJSONServer(answer) as srv:
        sut = HttpSystem(
            dify_config({"parent_child": True, "top_k": 4}, "dify", {**env, "DIFY_BASE_URL": srv.url + "/v1"})
        )
        result = sut.retrieve("What is Dify?", 3)

    assert srv.requests[0].json["retrieval_model"]["top_k"] == 3  # the run's top-k wins over the preset's
    assert [(i.id, i.doc_id, i.metadata["parent_id"], i.score) for i in result.items] == [
        ("child-1", "doc-a", "seg-1", 0.95),
        ("child-2", "doc-a", "seg-1", 0.71),
        ("child-3", "doc-b", "seg-2", 0.40),
    ]


def test_bad_dify_options_name_the_key() -> None:
    with pytest.raises(AdapterConfigError, match=r"\[dify\]: unknown key\(s\) 'dataset'"):
        dify_config({"dataset": "x"}, "dify.toml", {})
    with pytest.raises(AdapterConfigError, match="search_method = 'vector'; valid: hybrid_search"):
        dify_config({"search_method": "vector"}, "dify.toml", {"DIFY_DATASET_ID": "d", "DIFY_API_KEY": "k"})
    with pytest.raises(AdapterConfigError, match="environment variable DIFY_API_KEY is not set"):
        dify_config({}, "dify.toml", {"DIFY_DATASET_ID": "d"})


def test_the_shipped_example_and_its_id_map_load(env: dict[str, str]) -> None:
    spec = load_spec(None, Path(__file__).parents[2] / "examples" / "dify.toml")

    assert (spec.kind, spec.gold) == ("dify", "ids")
    assert spec.id_map["a8e0e5b5-78c6-4130-a5ce-25feb0e0b4ac"].doc_id == "bixiu1"
    assert spec.http is not None and spec.http.retrieve.url == f"https://api.dify.ai/v1/datasets/{DATASET}/retrieve"


# --------------------------------------------------------------------------- through the gate

# Dify document ids of the sandbox corpus's documents, and the id map between them.
DIFY_DOC = {d: f"dify-doc-{d}" for d in ("set", "func", "seq", "trig", "prob", "vec", "deriv", "log")}
GOLD_OF = {i["question"]: i["gold_doc_ids"] for i in GOLDEN}


def by_gold(path: str, body: Any) -> Status:
    """A knowledge base that ranks the gold document's segment second (after a wrong one)."""
    gold = GOLD_OF[body["query"]] or ["vec"]
    wrong = "log" if gold[0] != "log" else "set"
    return Status(
        200,
        {
            "query": {"content": body["query"]},
            "records": [
                record(f"seg-{wrong}", DIFY_DOC[wrong], "...", 0.6),
                record(f"seg-{gold[0]}", DIFY_DOC[gold[0]], "...", 0.5),
            ],
        },
    )


def test_the_gate_scores_a_dify_knowledge_base_through_the_id_map(
    sandbox: Sandbox, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (sandbox.root / "ids.csv").write_text(
        "service_id,chunk_id,doc_id\n" + "".join(f"{v},,{k}\n" for k, v in DIFY_DOC.items()), encoding="utf-8"
    )
    (sandbox.root / "dify.toml").write_text(
        'pipeline = "dify"\ngold = "ids"\nid_map = "ids.csv"\n[dify]\ntop_k = 5\n', encoding="utf-8"
    )
    sandbox.write_thresholds('[retrieval]\n"doc.mrr" = { min = 0.5 }\nerror_rate = { max = 0.0 }\n')
    with ScriptedJSONServer(by_gold) as srv:
        monkeypatch.setenv("DIFY_BASE_URL", srv.url)
        result = sandbox.run(
            "-m", "retrieval or deterministic", "--rag-pipeline-config", str(sandbox.root / "dify.toml"), "-rs"
        )

    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    metrics = sandbox.results()["metrics"]
    assert metrics["retrieval.doc.mrr"] == 1 / 2  # every gold document at rank 2
    assert metrics["retrieval.doc.recall@1"] == 0.0 and metrics["retrieval.doc.recall@5"] == 1.0
    assert "retrieval.recall@5" not in metrics  # doc-level gold: no chunk-level keys
    assert set(sandbox.cases()) == set(IDS)
    result.stdout.fnmatch_lines(["*retrieval-only*"])
    assert KEY not in sandbox.results_path.read_text(encoding="utf-8")
    assert sandbox.results()["run"]["system"]["adapter"] == "dify"
