"""The run's judge endpoint: where the judge lives (``RAG_JUDGE_*``), its engine, cache,
prices and budgets (``--rag-judge-*``), and the spending ledger that makes a budget hold
across xdist workers. Declared and read by the judge tier (``JudgeTier.add_options`` /
``read_options``); the tiers that call a judge (the judge tier, passk's judged trials,
dialogue's hints and LLM student) get it from ``JUDGE.endpoint(config)``."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from rag_eval.core.errors import ConfigError
from rag_eval.judge.config import JudgeConfig, load_prices
from rag_eval.tiers.base import Options, OptionValues

LEDGER_KEY = "rag_eval_judge_ledger"  # what a worker is handed: the controller's ledger folder ("" for none)


@dataclass(frozen=True)
class JudgeEndpoint:
    """The endpoint of the run (``config``) and its ledger folder (None without a budget)."""

    config: JudgeConfig
    ledger: Path | None = None


def add_endpoint_options(options: Options) -> None:
    """``--rag-judge-engine``, ``--rag-fresh``, ``--rag-judge-cache``, ``--rag-judge-prices``
    and the two budgets."""
    options.addoption(
        "--rag-judge-engine",
        choices=("native", "deepeval"),
        default="native",
        help="native: one call per case (default); deepeval: deepeval's metrics on the same client",
    )
    options.addoption(
        "--rag-fresh", action="store_true", help="ignore the judge response cache (answers are still stored)"
    )
    options.addoption(
        "--rag-judge-cache",
        default=None,
        help="judge response cache folder (default .rag_cache/judge; keep it between CI runs)",
    )
    options.addoption(
        "--rag-judge-prices",
        default=None,
        metavar="TOML",
        help='[prices."model"] prompt = USD per 1M tokens, completion = ...',
    )
    options.addoption(
        "--rag-judge-budget-usd", type=float, default=None, help="stop issuing judge calls once this is spent"
    )
    options.addoption(
        "--rag-judge-budget-tokens",
        type=int,
        default=None,
        help="stop issuing judge calls once this many tokens are used",
    )


def read_endpoint(values: OptionValues) -> JudgeEndpoint:
    """The endpoint from the environment and the options; a bad value is a ``ConfigError``."""
    cache = Path(values.getoption("rag_judge_cache") or values.base / ".rag_cache" / "judge")
    prices_path = values.getoption("rag_judge_prices")
    try:
        config = JudgeConfig.from_env(
            cache_dir=cache,
            fresh=values.getoption("rag_fresh"),
            prices=load_prices(prices_path) if prices_path else None,
            budget_usd=values.getoption("rag_judge_budget_usd"),
            budget_tokens=values.getoption("rag_judge_budget_tokens"),
            engine=values.getoption("rag_judge_engine"),
            concurrency=values.concurrency,
        )
    except (ConfigError, ValueError, OSError) as exc:
        raise ConfigError(f"judge configuration: {exc}") from None
    return JudgeEndpoint(config, _ledger(values))


def _ledger(values: OptionValues) -> Path | None:
    """One spending ledger for the whole run, so a judge budget holds across xdist workers:
    made on the controller when a budget is set, handed to each worker."""
    if values.handed is not None:
        path = values.handed.get(LEDGER_KEY)
        return Path(path) if path else None
    if values.getoption("rag_judge_budget_usd") is None and values.getoption("rag_judge_budget_tokens") is None:
        return None
    return Path(tempfile.mkdtemp(prefix="rag-eval-judge-ledger-"))
