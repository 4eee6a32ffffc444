"""The dataset is its folder: corpus and golden files that resolve outside it (a symlink,
``..``) are refused with the path unless --rag-allow-outside-dataset / --allow-outside-dataset."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rag_eval.cli import main
from rag_eval.core.records import Document
from rag_eval.corpus import corpus_hash, load_documents
from rag_eval.dataset import DatasetPaths, find_paths, load_dataset
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


# --- the corpus pin: one set of files, however the run's system reads them ---------------
PAGED = "---\ndoc_id: d1\n---\n\n# d1\n\n<!-- page: 2 -->\ntext of d1\n"


def _without_page_marks(path: Path) -> tuple[Document, ...]:
    """A second reading of the same files, as a system with its own loader makes one."""
    return tuple(replace(d, text=d.text.replace("<!-- page: 2 -->\n", "")) for d in load_documents(path))


def _pinned(tmp_path: Path, sha: str) -> DatasetPaths:
    ds = tmp_path / "ds" if (tmp_path / "ds").is_dir() else dataset(tmp_path)
    (ds / "corpus" / "d1.md").write_text(PAGED, encoding="utf-8")
    item = dict(ITEM, corpus={"name": "ds", "sha256": sha})
    (ds / "golden.jsonl").write_text(json.dumps(item) + "\n", encoding="utf-8")
    return find_paths(ds)


def _hashes(paths: DatasetPaths) -> tuple[str, str]:
    """(this run's reading, the other reading) of the dataset's corpus."""
    assert paths.corpus is not None
    return corpus_hash(load_documents(paths.corpus)), corpus_hash(_without_page_marks(paths.corpus))


def test_a_pin_of_the_corpus_as_another_reading_sees_it_is_the_same_corpus(tmp_path: Path) -> None:
    own, other = _hashes(_pinned(tmp_path, "0" * 64))
    assert own != other  # the two readings of these files differ
    calls: list[Path] = []

    def pin_reading(path: Path) -> tuple[Document, ...]:
        calls.append(path)
        return _without_page_marks(path)

    paths = _pinned(tmp_path, other)
    data = load_dataset(paths, load_documents, pinned_by=pin_reading)
    assert [d.text for d in data.documents] == ["# d1\n\n<!-- page: 2 -->\ntext of d1\n"]  # the run's own reading
    assert (data.corpus_hash, calls) == (own, [paths.corpus])
    calls.clear()  # a pin of the run's own reading never works out the other
    assert load_dataset(_pinned(tmp_path, own), load_documents, pinned_by=pin_reading).corpus_hash == own
    assert calls == []


def test_a_pin_of_neither_reading_is_refused_naming_the_command_for_this_reading(tmp_path: Path) -> None:
    paths = _pinned(tmp_path, "0" * 64)
    with pytest.raises(GoldenSetError) as err:
        load_dataset(paths, load_documents, pinned_by=_without_page_marks, rehash="--gold ids")
    message = str(err.value)
    assert "'q1' was written against corpus 0000000000000000…" in message
    assert f"python -m rag_eval corpus-hash --rag-dataset {paths.root} --gold ids prints it" in message


def test_a_reading_that_cannot_be_made_leaves_the_run_s_own(tmp_path: Path) -> None:
    def not_installed(path: Path) -> tuple[Document, ...]:
        raise ImportError("No module named 'rag_app'")

    with pytest.raises(GoldenSetError, match="written against corpus 1111111111111111"):
        load_dataset(_pinned(tmp_path, "1" * 64), load_documents, pinned_by=not_installed)
    own, _ = _hashes(_pinned(tmp_path, "1" * 64))
    assert load_dataset(_pinned(tmp_path, own), load_documents, pinned_by=not_installed).items[0].id == "q1"
