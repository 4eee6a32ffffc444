"""The grid file is checked before anything runs (rag_eval/grid/spec.py): each bad file is
refused with the file, the key and the fix, and the command exits 2 having run no job."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.cli import main
from rag_eval.grid.spec import GridError, load_grid

GOOD = '[grid]\npipeline = "rag_app"\n\n[axes]\ntop_k = [3, 5]\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grid.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[grid\n", r"not valid TOML"),
        (GOOD + "[extra]\n", r"the file has unknown key\(s\) 'extra'; valid: grid, axes, blocks"),
        (GOOD.replace('pipeline = "rag_app"', 'pipline = "rag_app"'), r"\[grid\] has unknown key\(s\) 'pipline'"),
        ("[grid]\n\n[axes]\ntop_k = [3]\n", r'names no system: set pipeline = "rag_app"'),
        ('[grid]\npipeline = "rag_app"\n', r"no \[axes\] table"),
        (GOOD.replace("top_k = [3, 5]", "top_k = [3, 3]"), r"\[axes\] top_k lists a value twice"),
        (GOOD.replace("top_k = [3, 5]", 'top_k = [3, "5"]'), r"\[axes\] top_k must hold positive integers"),
        (GOOD + 'chunking = ["a"]\n', None),  # a plain axis needs no block
        (
            GOOD + 'chunking = ["a"]\n[blocks.chunking.b]\nchunk_size = 1\n',
            r"no \[blocks\.chunking\.a\] settings block",
        ),
        (GOOD + "[blocks.size.a]\nx = 1\n", r"\[blocks\.size\] names no axis"),
        (GOOD.replace("[axes]", "reference = { top_k = 4 }\n\n[axes]"), r"reference = \{\"top_k\": 4\} is not one of"),
        (
            GOOD.replace("[axes]", 'pytest_args = ["--rag-top-k=3"]\n\n[axes]'),
            r"--rag-top-k=3 is set by the grid itself",
        ),
        (GOOD.replace("[axes]", "k = 0\n\n[axes]"), r"\[grid\] k must be a positive integer, got 0"),
        (GOOD.replace("[axes]", 'split = "dev"\n\n[axes]'), r"\[grid\] split = 'dev'; valid: tune, holdout, all"),
        (
            GOOD.replace("[axes]", 'pipeline_config = "none.toml"\n\n[axes]'),
            r"pipeline_config = 'none.toml': no such file",
        ),
    ],
)
def test_a_bad_grid_file_names_the_file_and_the_key(tmp_path: Path, text: str, message: str | None) -> None:
    path = write(tmp_path, text)
    if message is None:
        assert [c.name for c in load_grid(path).configurations()] == ["top_k=3,chunking=a", "top_k=5,chunking=a"]
        return
    with pytest.raises(GridError, match=message) as caught:
        load_grid(path)
    assert str(path) in str(caught.value)


def test_the_command_exits_2_and_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD.replace("top_k = [3, 5]", "top_k = []"))
    assert main(["grid", str(path)]) == 2
    assert "[axes] top_k must be a non-empty list" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


def test_a_missing_grid_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(GridError, match=r"no such grid file"):
        load_grid(tmp_path / "absent.toml")
