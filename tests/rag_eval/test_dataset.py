"""The dataset is its folder: corpus and golden files that resolve outside it (a symlink,
``..``) are refused with the path unless --rag-allow-outside-dataset / --allow-outside-dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_eval.cli import main
from rag_eval.dataset import find_paths
from rag_eval.golden.load import GoldenSetError

ITEM = {"id": "q1", "question": "what is in d1?", "evidence": [{"doc_id": "d1"}], "expected_action": "answer"}


def dataset(tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    (ds / "corpus").mkdir(parents=True)
    (ds / "golden.jsonl").write_text(json.dumps(ITEM) + "\n", encoding="utf-8")
    (ds / "corpus" / "d1.md").write_text("# d1\n\ntext of d1\n", encoding="utf-8")
    return ds


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "secret.md"
    path.parent.mkdir()
    path.write_text("# secret\n\nnot part of the dataset\n", encoding="utf-8")
    return path


def test_a_corpus_file_linked_from_outside_is_refused_with_both_paths(tmp_path: Path, secret: Path) -> None:
    ds = dataset(tmp_path)
    link = ds / "corpus" / "d2.md"
    link.symlink_to(secret)
    with pytest.raises(GoldenSetError, match="outside the dataset folder") as err:
        find_paths(ds)
    assert str(link) in str(err.value) and str(secret) in str(err.value)
    assert "--rag-allow-outside-dataset" in str(err.value)
    assert find_paths(ds, allow_outside=True).corpus == ds / "corpus"


def test_a_corpus_folder_or_golden_file_linked_from_outside_is_refused(tmp_path: Path, secret: Path) -> None:
    ds = tmp_path / "ds2"
    ds.mkdir()
    (ds / "corpus").symlink_to(secret.parent, target_is_directory=True)
    outside_golden = tmp_path / "golden-elsewhere.jsonl"
    outside_golden.write_text(json.dumps(ITEM) + "\n", encoding="utf-8")
    (ds / "golden.jsonl").symlink_to(outside_golden)
    with pytest.raises(GoldenSetError, match="outside the dataset folder"):
        find_paths(ds)


def test_a_dotdot_path_out_of_the_folder_is_refused(tmp_path: Path, secret: Path) -> None:
    ds = dataset(tmp_path)
    (ds / "corpus" / "up").symlink_to(Path("..") / ".." / "elsewhere", target_is_directory=True)
    with pytest.raises(GoldenSetError, match="outside the dataset folder"):
        find_paths(ds)


def test_a_dataset_folder_that_is_itself_a_link_is_its_own_folder(tmp_path: Path) -> None:
    ds = dataset(tmp_path)
    link = tmp_path / "linked-ds"
    link.symlink_to(ds, target_is_directory=True)
    assert find_paths(link).golden == link / "golden.jsonl"


def test_a_golden_file_given_by_its_own_path_is_read_where_it_is(tmp_path: Path) -> None:
    ds = dataset(tmp_path)
    golden = tmp_path / "mine.jsonl"
    golden.write_text(json.dumps(ITEM) + "\n", encoding="utf-8")
    assert find_paths(ds, golden).golden == golden


def test_the_commands_refuse_it_and_the_option_allows_it(
    tmp_path: Path, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = dataset(tmp_path)
    (ds / "corpus" / "d2.md").symlink_to(secret)
    assert main(["corpus-hash", "--dataset", str(ds)]) == 2
    assert "outside the dataset folder" in capsys.readouterr().err
    assert main(["coverage", "--dataset", str(ds)]) == 2
    capsys.readouterr()
    assert main(["corpus-hash", "--dataset", str(ds), "--allow-outside-dataset"]) == 0
    assert len(capsys.readouterr().out.strip()) == 64  # a sha256, of the corpus with the linked file
