"""``python -m rag_eval validate`` / ``coverage`` / ``corpus-hash``: no demo default (the
plugin's ini keys of ./pyproject.toml, else a message naming both ways), and a gold mode
like the plugin's, so a ``gold = "ids"`` set is not told its chunk ids are not in an index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval.cli import main

ITEMS = [
    {"id": f"q{n}", "question": f"question {n}?", "evidence": [{"chunk_id": f"d0{n}#1"}], "expected_action": "answer"}
    for n in range(1, 4)
] + [
    {
        "id": "q9",
        "question": "where is 东京?",
        "evidence": [{"doc_id": "d01", "quote": "东京 is here"}],
        "expected_action": "answer",
    }
]


@pytest.fixture
def user_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's repository: an own golden set with the system's chunk ids and a corpus."""
    ds = tmp_path / "evals"
    ds.mkdir()
    (ds / "golden.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    docs = [
        {"doc_id": f"d0{n}", "text": f"document {n}. 东京 is here." if n == 1 else f"document {n}."}
        for n in range(1, 4)
    ]
    (ds / "corpus.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_dataset_and_no_ini_key_names_both_ways_not_the_demo(
    user_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["validate"], ["coverage"], ["corpus-hash"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "--rag-dataset DIR" in err and "rag_eval_dataset" in err and "demo_maths" not in err


def test_the_plugins_ini_key_is_the_default(user_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (user_repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nrag_eval_dataset = "evals"\n', encoding="utf-8"
    )
    assert main(["validate", "--gold", "ids"]) == 0
    assert f"4 items in {user_repo / 'evals' / 'golden.jsonl'}: valid" in capsys.readouterr().out


def test_gold_ids_checks_doc_ids_and_quotes_but_not_the_systems_chunk_ids(
    user_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--rag-dataset", "evals", "--gold", "ids"]) == 0
    out = capsys.readouterr().out
    assert "not in the index" not in out and "gold exists: ok" in out
    header = next(line for line in out.splitlines() if line.startswith("gold = 'ids'"))
    assert header.endswith(
        "doc ids and quotes are checked against the corpus (give --rag-pipeline to look chunk ids up in the system)"
    )
    config = user_repo / "pipeline.toml"
    config.write_text('pipeline = "mysys:make"\ngold = "ids"\n', encoding="utf-8")
    assert main(["validate", "--rag-dataset", "evals", "--rag-pipeline-config", str(config)]) == 0
    capsys.readouterr()
    bad = [
        *ITEMS,
        {"id": "q8", "question": "q?", "evidence": [{"doc_id": "d07", "quote": "x"}], "expected_action": "answer"},
    ]
    (user_repo / "evals" / "golden.jsonl").write_text("".join(json.dumps(i) + "\n" for i in bad), encoding="utf-8")
    assert main(["validate", "--rag-dataset", "evals", "--gold", "ids"]) == 1
    assert "gold doc id 'd07' is not in the corpus" in capsys.readouterr().out


def test_corpus_gold_still_looks_chunk_ids_up_in_the_index(user_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("rag_app")
    assert main(["validate", "--rag-dataset", "evals", "--gold", "corpus"]) == 1
    assert "gold chunk id 'd01#1' is not in the index" in capsys.readouterr().out


def test_validate_with_a_pipeline_looks_gold_up_in_the_system_and_names_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("haystack")
    from tests.rag_eval._framework_gate import GOLDEN, TYPO

    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "False")
    golden = tmp_path / "golden.jsonl"
    system = ["--rag-pipeline", "tests.rag_eval._framework_systems:haystack_pipeline"]
    golden.write_text("".join(json.dumps(g) + "\n" for g in GOLDEN), encoding="utf-8")
    assert main(["validate", "--rag-golden-set", str(golden), "--gold", "ids", *system]) == 0
    assert (
        "gold held by --rag-pipeline tests.rag_eval._framework_systems:haystack_pipeline: ok" in capsys.readouterr().out
    )
    golden.write_text("".join(json.dumps(g) + "\n" for g in (*GOLDEN, TYPO)), encoding="utf-8")
    assert main(["validate", "--rag-golden-set", str(golden), "--gold", "ids", *system]) == 1
    out = capsys.readouterr().out
    assert "gold chunk id 'derivatives#9' (items q7) is not indexed by the system" in out
    assert "1 problem(s)" in out and not any(g["evidence"][0]["chunk_id"] in out for g in GOLDEN)


def test_corpus_hash_keeps_the_frozen_format_so_pinned_golden_sets_stay_valid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Every golden item records the hash of the corpus it was written against; the shipped
    demo's items were pinned before the hash's format tag got a neutral name in
    rag_eval.corpus (CORPUS_HASH_FORMAT_V1), and the command still prints that hash."""
    from rag_eval.golden.load import load_golden_set

    demo = Path(__file__).resolve().parents[2] / "golden_sets" / "demo_maths"
    pinned = {item.corpus_sha256 for item in load_golden_set(demo / "golden.jsonl")}
    assert main(["corpus-hash", "--rag-dataset", str(demo)]) == 0
    assert pinned == {capsys.readouterr().out.strip()}


def test_the_demo_pinned_as_rag_app_reads_it_is_the_same_corpus_to_an_ids_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The demo's Markdown books are pinned as rag_app reads them (page marks removed); a
    gold = "ids" run reads the same files with the framework's reader. The pin is of the
    files, so that run is not refused; corpus-hash --gold ids prints its own reading."""
    demo = Path(__file__).resolve().parents[2] / "golden_sets" / "demo_maths"
    assert main(["corpus-hash", "--rag-dataset", str(demo)]) == 0
    as_rag_app = capsys.readouterr().out.strip()
    assert main(["corpus-hash", "--rag-dataset", str(demo), "--gold", "ids"]) == 0
    as_ids = capsys.readouterr().out.strip()
    assert len(as_ids) == 64 and as_ids != as_rag_app
    code = main(["validate", "--rag-dataset", str(demo), "--gold", "ids"])
    out = capsys.readouterr()
    assert "written against corpus" not in out.err  # it was: exit 2 before any check ran
    assert code == 0 and "gold = 'ids'" in out.out and "\nkey facts traceable: ok\n" in out.out


def test_the_readme_validate_example_passes_on_the_bundled_demo(capsys: pytest.CaptureFixture[str]) -> None:
    """README's `validate --rag-dataset golden_sets/demo_maths --coverage`: every check ok
    (it exited 1 with 16 key facts "not traceable" while build_golden.py checked them with
    rag_app's jieba tokens instead of the terms validate reads)."""
    demo = Path(__file__).resolve().parents[2] / "golden_sets" / "demo_maths"
    code = main(["validate", "--rag-dataset", str(demo), "--coverage"])
    out = capsys.readouterr().out
    checks = [line for line in out.splitlines() if line.endswith((": ok", "problem(s)"))]
    assert code == 0, out
    assert len(checks) == 5 and all(line.endswith(": ok") for line in checks), checks


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('pipeline = "dify"\ngold = "corpus"\n', "gold = 'corpus' is not offered by pipeline 'dify'; valid: ids, text"),
        ('pipeline = "http"\n', "gold = 'ids': chunk ids are the system's own"),  # http's own default, not corpus
    ],
)
def test_validate_takes_the_gold_mode_the_configured_kind_offers(
    user_repo: Path, capsys: pytest.CaptureFixture[str], config: str, message: str
) -> None:
    path = user_repo / "p.toml"
    path.write_text(config, encoding="utf-8")
    main(["validate", "--rag-dataset", "evals", "--rag-pipeline-config", str(path)])
    captured = capsys.readouterr()
    assert message in captured.out + captured.err
