"""adapters/__init__: the system a spec names is built through the BUILDERS registry."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rag_eval.adapters import BUILDERS, AdapterConfigError, PipelineSpec, SystemContext, build_system, load_spec
from rag_eval.adapters.python import PythonSystem
from rag_eval.adapters.spec import KEYS_BY_KIND


def test_every_kind_the_spec_accepts_has_a_builder() -> None:
    assert set(BUILDERS) == set(KEYS_BY_KIND)


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
    with pytest.raises(AdapterConfigError, match=r"'grpc' system; known: python, http, dify, rag_app"):
        build_system(PipelineSpec("grpc"), SystemContext())


def test_a_registered_builder_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    def fake(spec: PipelineSpec, context: SystemContext) -> PythonSystem:
        built.append(spec.kind)
        raise RuntimeError("built by the registered builder")

    monkeypatch.setitem(BUILDERS, "grpc", fake)
    with pytest.raises(RuntimeError, match="registered builder"):
        build_system(PipelineSpec("grpc"), SystemContext())
    assert built == ["grpc"]
