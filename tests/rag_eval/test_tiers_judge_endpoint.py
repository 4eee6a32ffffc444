"""The judge tier reads the run's judge endpoint from its own options (``--rag-judge-*``):
the cache under the project by default, a bad value a ConfigError naming it, and the
spending ledger made once on the controller, handed to each xdist worker and removed at
the end (``Tier.worker_input`` / ``Tier.close``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rag_eval.adapters import PipelineSpec
from rag_eval.core.errors import ConfigError
from rag_eval.dataset import DatasetPaths
from rag_eval.session import EvalConfig
from rag_eval.tiers.judge.endpoint import LEDGER_KEY
from rag_eval.tiers.judge.tier import JUDGE

DEFAULTS: dict[str, Any] = {
    "rag_judge_engine": "native",
    "rag_fresh": False,
    "rag_judge_cache": None,
    "rag_judge_prices": None,
    "rag_judge_budget_usd": None,
    "rag_judge_budget_tokens": None,
    "rag_deepeval_metrics": "faithfulness",
    "rag_geval_criteria": None,
}


@dataclass(frozen=True)
class Values:
    """``OptionValues`` as the plugin gives them."""

    base: Path
    options: Mapping[str, Any] = field(default_factory=dict)
    concurrency: int = 3
    handed: Mapping[str, Any] | None = None

    def getoption(self, name: str) -> Any:
        return {**DEFAULTS, **self.options}[name]

    def getini(self, name: str) -> Any:
        return ""


def config_of(values: Values) -> EvalConfig:
    paths = DatasetPaths(values.base, None, values.base / "golden.jsonl")
    return EvalConfig(paths, tier_args={JUDGE.name: JUDGE.read_options(values)}, pipeline=PipelineSpec("python"))


def test_the_endpoint_comes_from_the_environment_and_the_judge_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_JUDGE_MODEL", "judge-m")
    monkeypatch.delenv("RAG_JUDGE_CONCURRENCY", raising=False)
    config = config_of(Values(tmp_path, {"rag_fresh": True}))
    judge = JUDGE.endpoint(config)
    assert judge is not None
    assert judge.cache_dir == tmp_path / ".rag_cache" / "judge" and judge.fresh
    assert judge.policy.concurrency == 3  # the run's --rag-concurrency
    assert JUDGE.ledger(config) is None  # no budget: no ledger
    assert JUDGE.worker_input(config) == {LEDGER_KEY: ""}


def test_without_a_command_line_there_is_no_endpoint(tmp_path: Path) -> None:
    config = EvalConfig(DatasetPaths(tmp_path, None, tmp_path / "g.jsonl"), pipeline=PipelineSpec("python"))
    assert JUDGE.endpoint(config) is None and JUDGE.ledger(config) is None


def test_a_bad_value_names_the_judge_configuration(tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text("not toml [", encoding="utf-8")
    with pytest.raises(ConfigError, match="^judge configuration: .*prices.toml"):
        JUDGE.read_options(Values(tmp_path, {"rag_judge_prices": str(prices)}))


def test_a_budget_makes_one_ledger_handed_to_the_workers_and_removed_at_the_end(tmp_path: Path) -> None:
    controller = config_of(Values(tmp_path, {"rag_judge_budget_tokens": 1000}))
    ledger = JUDGE.ledger(controller)
    assert ledger is not None and ledger.is_dir()
    handed = dict(JUDGE.worker_input(controller))
    assert handed == {LEDGER_KEY: str(ledger)}

    worker = config_of(Values(tmp_path, {"rag_judge_budget_tokens": 1000}, handed={"workerid": "gw0", **handed}))
    assert JUDGE.ledger(worker) == ledger  # the controller's folder, not one of its own

    JUDGE.close(controller)
    assert not ledger.exists()
