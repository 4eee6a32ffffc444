"""session.EvalSession.top_k: --rag-top-k (stored as the setting rerank_top_n) is the call's
top_k for every adapter, rag_app included; EvalConfig.top_k wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.adapters.spec import PipelineSpec
from rag_eval.dataset import DatasetPaths
from rag_eval.session import EvalConfig, EvalSession

PATHS = DatasetPaths(Path("."), None, Path("golden.jsonl"))


@pytest.mark.parametrize("kind", ["rag_app", "python", "http"])
def test_rag_top_k_is_the_calls_top_k_for_every_adapter(kind: str) -> None:
    config = EvalConfig(PATHS, settings_overrides={"rerank_top_n": "4"}, pipeline=PipelineSpec(kind))
    assert EvalSession(config).top_k == 4


def test_the_configs_top_k_wins_and_none_is_none() -> None:
    assert EvalSession(EvalConfig(PATHS, {"rerank_top_n": 4}, top_k=2, pipeline=PipelineSpec("rag_app"))).top_k == 2
    assert EvalSession(EvalConfig(PATHS, pipeline=PipelineSpec("rag_app"))).top_k is None


def test_a_config_names_its_pipeline() -> None:
    with pytest.raises(TypeError, match="pipeline"):
        EvalConfig(PATHS)  # type: ignore[call-arg]
