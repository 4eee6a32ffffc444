"""session.EvalSession.top_k: EvalConfig.top_k (set by --rag-top-k) is the call's top_k for
every adapter, rag_app included; a rag_app setting (--rag-set rerank_top_n=...) is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.adapters.spec import PipelineSpec
from rag_eval.dataset import DatasetPaths
from rag_eval.session import EvalConfig, EvalSession

PATHS = DatasetPaths(Path("."), None, Path("golden.jsonl"))


@pytest.mark.parametrize("kind", ["rag_app", "python", "http"])
def test_the_configs_top_k_is_the_calls_top_k_for_every_adapter(kind: str) -> None:
    assert EvalSession(EvalConfig(PATHS, top_k=4, pipeline=PipelineSpec(kind))).top_k == 4


def test_a_rag_app_setting_is_not_the_calls_top_k() -> None:
    # rerank_top_n is rag_app's own setting: rag_app applies it itself when the call has no top_k
    assert EvalSession(EvalConfig(PATHS, {"rerank_top_n": 4}, pipeline=PipelineSpec("rag_app"))).top_k is None
    assert EvalSession(EvalConfig(PATHS, pipeline=PipelineSpec("rag_app"))).top_k is None


def test_a_config_names_its_pipeline() -> None:
    with pytest.raises(TypeError, match="pipeline"):
        EvalConfig(PATHS)  # type: ignore[call-arg]
