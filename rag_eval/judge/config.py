"""Where the judge lives, which engine grades, what it may spend, where it caches.

The judge endpoint is configured apart from the generator (``RAG_JUDGE_*`` variables,
falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, see
:mod:`rag_eval.llm.endpoint`), because grading with the generator's own model inflates
scores; :meth:`JudgeConfig.same_model_warning` makes that case visible instead of
forbidding it (a single local model may be all a developer has).

How long the judge may take is configured the same way and checked at start-up (a bad
value is a ``ConfigError`` naming the variable):

=========================  =======  ===================================================
variable                   default  meaning
=========================  =======  ===================================================
``RAG_JUDGE_TIMEOUT``      30       seconds per attempt
``RAG_JUDGE_MAX_RETRIES``  3        retries after the first attempt
``RAG_JUDGE_BREAKER``      5        consecutive failed calls before the endpoint is
                                    given up for the rest of the run (0 = never)
``RAG_JUDGE_MAX_TOKENS``   1500     completion budget of one verdict (doubled once
                                    when a reply is cut off)
=========================  =======  ===================================================

A missing judge is not an error: judge cases are *skipped* with the one sentence from
:meth:`JudgeConfig.missing_reason`, which names the variables to set.

Prices live in a TOML file so they can be updated without a code change::

    [prices."gpt-4o-mini"]
    prompt = 0.15        # USD per 1M prompt tokens
    completion = 0.60    # USD per 1M completion tokens
"""

from __future__ import annotations

import math
import os
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval.core.errors import ConfigError
from rag_eval.llm.endpoint import Endpoint
from rag_eval.llm.policy import CallPolicy, env_number
from rag_eval.util.utf8 import NotUtf8Error, read_text

if TYPE_CHECKING:
    from rag_eval.llm.client import LLMClient
    from rag_eval.util.redact import Redactor

PREFIX = "RAG_JUDGE"
ENGINES: tuple[str, ...] = ("native", "deepeval")
PRICE_FIELDS: tuple[str, ...] = ("prompt", "completion")
MAX_TOKENS_VAR = f"{PREFIX}_MAX_TOKENS"
DEFAULT_MAX_TOKENS = 1500

Prices = Mapping[str, tuple[float, float]]  # model -> (USD per 1M prompt, per 1M completion tokens)


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    """Everything needed to build the judge client; the key stays inside ``endpoint``.

    ``repr`` is safe to log: :class:`~rag_eval.llm.endpoint.Endpoint` shows no key.
    """

    endpoint: Endpoint
    cache_dir: Path
    policy: CallPolicy = field(default_factory=lambda: CallPolicy.from_env(PREFIX, {}))
    max_tokens: int = DEFAULT_MAX_TOKENS
    engine: str = "native"
    prices: Prices = field(default_factory=dict)
    budget_usd: float | None = None
    budget_tokens: int | None = None
    fresh: bool = False

    def __post_init__(self) -> None:
        # Validated here so a typo fails at start-up, not after half the judge calls.
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown judge engine {self.engine!r}; valid judge engines: {', '.join(ENGINES)}")
        if self.budget_usd is not None and not (math.isfinite(self.budget_usd) and self.budget_usd >= 0):
            raise ConfigError(f"judge budget_usd must be a number >= 0, got {self.budget_usd!r}")
        if self.budget_tokens is not None and (isinstance(self.budget_tokens, bool) or self.budget_tokens < 0):
            raise ConfigError(f"judge budget_tokens must be an integer >= 0, got {self.budget_tokens!r}")
        object.__setattr__(self, "prices", validate_prices(self.prices, where="JudgeConfig.prices"))
        object.__setattr__(self, "cache_dir", Path(self.cache_dir))

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] = os.environ,
        *,
        cache_dir: Path,
        fresh: bool = False,
        prices: Prices | None = None,
        budget_usd: float | None = None,
        budget_tokens: int | None = None,
        engine: str = "native",
        concurrency: int | None = None,
    ) -> JudgeConfig:
        """Read ``RAG_JUDGE_BASE_URL/MODEL/API_KEY`` (URL and key fall back to ``OPENAI_*``).

        Never raises for a missing endpoint: check :meth:`missing_reason` and skip. A bad
        ``RAG_JUDGE_TIMEOUT`` / ``_MAX_RETRIES`` / ``_BREAKER`` / ``_MAX_TOKENS`` raises
        ``ConfigError`` naming the variable. ``concurrency``: requests in flight when
        ``RAG_JUDGE_CONCURRENCY`` is unset (the run's ``--rag-concurrency``).
        """
        max_tokens = int(
            env_number(env, MAX_TOKENS_VAR, DEFAULT_MAX_TOKENS, "an integer >= 16, e.g. 1500", int, minimum=16)
        )
        return cls(
            endpoint=Endpoint.from_env(PREFIX, env),
            policy=CallPolicy.from_env(PREFIX, env, concurrency=concurrency),
            max_tokens=max_tokens,
            cache_dir=Path(cache_dir),
            engine=engine,
            prices=dict(prices or {}),
            budget_usd=budget_usd,
            budget_tokens=budget_tokens,
            fresh=fresh,
        )

    @property
    def model(self) -> str:
        return self.endpoint.model

    def missing_reason(self) -> str | None:
        """One sentence naming the variables to set, or None when the judge is usable."""
        problem = self.endpoint.problem()
        return f"judge not configured: {problem}" if problem else None

    def same_model_warning(self, generator_model: str | None) -> str | None:
        """The warning to show when the judge grades with the generator's own model."""
        judge = self.endpoint.model.strip()
        if not judge or not generator_model or judge.casefold() != generator_model.strip().casefold():
            return None
        return (
            f"judge model {judge!r} is also the generator model: a model grading its own answers "
            f"inflates scores; set {PREFIX}_MODEL to a different model"
        )

    def price_of(self, model: str) -> tuple[float, float] | None:
        return self.prices.get(model)


def validate_prices(prices: Mapping[str, Any], *, where: str) -> dict[str, tuple[float, float]]:
    """Check a ``model -> (prompt, completion)`` mapping: two finite numbers >= 0 each."""
    out: dict[str, tuple[float, float]] = {}
    for model, pair in prices.items():
        if not isinstance(model, str) or not model:
            raise ConfigError(f"{where}: model names must be non-empty strings, got {model!r}")
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ConfigError(f"{where}[{model!r}]: expected (prompt, completion) USD per 1M tokens, got {pair!r}")
        for name, value in zip(PRICE_FIELDS, pair):
            _check_price(value, f"{where}[{model!r}].{name}")
        out[model] = (float(pair[0]), float(pair[1]))
    return out


def load_prices(path: Path | str) -> dict[str, tuple[float, float]]:
    """Read ``[prices."model"] prompt = .., completion = ..`` (USD per 1M tokens) from TOML.

    Errors name the file and the key, e.g. ``prices.toml: [prices."gpt-4o"] is missing
    'completion'``.
    """
    p = Path(path)
    try:
        data = tomllib.loads(read_text(p))
    except NotUtf8Error as exc:
        raise ConfigError(f"{exc} (the price file)") from None
    except RecursionError:
        raise ConfigError(f"{p}: invalid TOML: nested too deeply") from None
    except FileNotFoundError:
        raise ConfigError(f"{p}: price file not found; create it or drop the prices option") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read price file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    unknown = sorted(set(data) - {"prices"})
    if unknown:
        raise ConfigError(f'{p}: unknown top-level key(s) {unknown}; only a [prices."<model>"] table is allowed')
    table = data.get("prices")
    if table is None:
        raise ConfigError(f'{p}: no [prices] table; add e.g. [prices."gpt-4o-mini"] prompt = 0.15, completion = 0.6')
    if not isinstance(table, dict):
        raise ConfigError(f"{p}: 'prices' must be a table of models, got {type(table).__name__}")
    out: dict[str, tuple[float, float]] = {}
    for model, entry in table.items():
        where = f"{p}: [prices.{_quote(model)}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be a table with 'prompt' and 'completion', got {entry!r}")
        extra = sorted(set(entry) - set(PRICE_FIELDS))
        if extra:
            raise ConfigError(f"{where}: unknown key(s) {extra}; valid keys: {', '.join(PRICE_FIELDS)}")
        missing = [k for k in PRICE_FIELDS if k not in entry]
        if missing:
            raise ConfigError(f"{where} is missing {', '.join(repr(k) for k in missing)} (USD per 1M tokens)")
        out[model] = (
            _check_price(entry["prompt"], f"{where}.prompt"),
            _check_price(entry["completion"], f"{where}.completion"),
        )
    return out


def make_chat_client(
    cfg: JudgeConfig,
    *,
    redactor: Redactor | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LLMClient:
    """The client for the judge endpoint under ``cfg.policy``; ``ConfigError`` if unset."""
    reason = cfg.missing_reason()
    if reason:
        raise ConfigError(reason)
    from rag_eval.llm.client import LLMClient  # the openai SDK costs ~1 s to import: only when judging

    return LLMClient(cfg.endpoint, cfg.policy, redactor=redactor, sleep=sleep)


def _check_price(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where} must be a number >= 0 (USD per 1M tokens), got {value!r}")
    return float(value)


def _quote(model: str) -> str:
    return f'"{model}"'
