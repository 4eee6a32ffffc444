"""adapters/__init__: the system a spec names is built through the kind registry
(rag_eval.adapters.kinds); a kind registered from outside is chosen, checked and built
like a built-in one."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_eval.adapters import (
    AdapterConfigError,
    AdapterKind,
    PipelineSpec,
    SystemContext,
    build_system,
    corpus_chunker,
    kinds,
    load_spec,
    register,
    settings_check,
)
from rag_eval.adapters.kinds import COMMON_KEYS
from rag_eval.adapters.python import PythonSystem
from rag_eval.core.contract import Retrieval, RetrievedItem


def test_the_built_in_kinds_and_their_gold_modes() -> None:
    offered = {k.name: k.gold_modes for k in kinds.all_kinds()}
    assert offered == {
        "rag_app": ("corpus", "ids", "text"),  # the default first
        "python": ("ids", "text"),
        "http": ("ids", "text", "corpus"),  # corpus: rag_app behind its HTTP API
        "dify": ("ids", "text"),
    }
    assert kinds.named() == ("rag_app", "http", "dify")  # python is chosen by "package.module:factory"
    # a command with no system reads corpus gold as rag_app chunks it, ids/text with the framework's reader
    assert [kinds.native_kind(m) for m in ("corpus", "ids", "text")] == ["rag_app", "python", "python"]
    # --rag-set (and a grid's plain settings) change rag_app's own settings; http borrows them only for corpus gold
    assert [kinds.takes_settings(k) for k in ("rag_app", "python", "http", "dify", "grpc")] == [
        True,
        False,
        False,
        False,
        False,
    ]
    assert settings_check(PipelineSpec("http", "corpus")) is not None and settings_check(PipelineSpec("http")) is None
    # the per-process state a kind declares, picked out of a description (a merge ignores it; the warm-up reports it)
    info = {"embedder": "e5", "index_built": True, "vector_store": "chroma embedded:/x"}
    assert kinds.process_state("rag_app", info) == {"vector_store": "chroma embedded:/x", "index_built": True}
    assert kinds.process_state("python", info) == {} == kinds.process_state("grpc", info)


def test_a_python_spec_is_built_by_its_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reg_sut.py").write_text(
        "class Sut:\n    def retrieve(self, question, history=None):\n        return []\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "reg_sut", raising=False)
    system = build_system(load_spec("reg_sut:Sut", None), SystemContext())
    assert isinstance(system, PythonSystem)
    assert system.describe() == {"adapter": "python", "factory": "reg_sut:Sut"}


def test_an_unknown_kind_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(AdapterConfigError, match=r"'grpc' system; known: rag_app, python, http, dify"):
        build_system(PipelineSpec("grpc"), SystemContext())


class Grpc:
    """A stand-in system for the kind registered below."""

    def __init__(self, address: str) -> None:
        self.address = address

    def retrieve(self, question: str, top_k: int | None = None) -> Retrieval:
        return Retrieval((RetrievedItem("c1", "text", 1.0),))

    def describe(self) -> dict[str, str]:
        return {"adapter": "grpc", "address": self.address}


@pytest.fixture
def grpc_kind() -> Iterator[AdapterKind]:
    """A kind registered from outside rag_eval: one declaration, its keys and gold modes."""

    def parse(choice: str, data: object, source: str, path: Path | None, env: object) -> dict[str, object]:
        return {"options": {"address": "127.0.0.1:50051"}}

    kind = register(
        AdapterKind(
            "grpc",
            lambda spec, context: Grpc(str(spec.options["address"])),  # type: ignore[arg-type, return-value]
            (*COMMON_KEYS, "address"),
            ("text", "ids"),
            parse=parse,  # type: ignore[arg-type]
        )
    )
    yield kind
    kinds._KINDS.pop("grpc")


def test_a_kind_registered_from_outside_is_chosen_checked_and_built(grpc_kind: AdapterKind, tmp_path: Path) -> None:
    spec = load_spec("grpc", None)
    assert (spec.kind, spec.gold) == ("grpc", "text")  # its own default gold mode
    system = build_system(spec, SystemContext())
    assert system.describe() == {"adapter": "grpc", "address": "127.0.0.1:50051"}
    assert corpus_chunker(spec, SystemContext()) is None and settings_check(spec) is None

    config = tmp_path / "grpc.toml"
    config.write_text('pipeline = "grpc"\ngold = "corpus"\n', encoding="utf-8")
    with pytest.raises(AdapterConfigError) as err:
        load_spec(None, config)
    assert str(err.value).startswith(f"{config}: gold = 'corpus' is not offered by pipeline 'grpc'")
    assert str(err.value).endswith("valid here: text, ids")
    config.write_text('pipeline = "grpc"\nstages = ["a"]\n', encoding="utf-8")
    with pytest.raises(AdapterConfigError, match=r"key\(s\) 'stages' do not apply to pipeline 'grpc'"):
        load_spec(None, config)


def test_a_kind_that_offers_corpus_gold_must_say_how_it_chunks() -> None:
    with pytest.raises(AdapterConfigError, match=r"'nochunks' offers gold = 'corpus' but no CorpusView"):
        register(AdapterKind("nochunks", lambda spec, context: Grpc(""), COMMON_KEYS, ("corpus",)))  # type: ignore[arg-type, return-value]
    with pytest.raises(AdapterConfigError, match=r"gold_modes \('chunks',\); name one or more of corpus, ids, text"):
        register(AdapterKind("badgold", lambda spec, context: Grpc(""), COMMON_KEYS, ("chunks",)))  # type: ignore[arg-type, return-value]
    assert kinds.get("nochunks") is None and kinds.get("badgold") is None


@pytest.mark.parametrize("pipeline", ["dify", "tests_pkg.mod:make"])
def test_a_kind_without_a_corpus_view_refuses_corpus_gold_naming_the_file_and_the_fix(
    pipeline: str, tmp_path: Path
) -> None:
    config = tmp_path / "p.toml"
    config.write_text(f'pipeline = "{pipeline}"\ngold = "corpus"\n', encoding="utf-8")
    with pytest.raises(AdapterConfigError) as err:
        load_spec(None, config, env={})
    assert str(err.value) == (
        f"{config}: gold = 'corpus' is not offered by pipeline {pipeline!r} (gold located in the local corpus "
        "needs the corpus chunked as the system chunks it, and this adapter cannot do that); valid here: ids, text"
    )
