"""Answer generation: the prompt, the generators, and system-built sources.

``make_generator`` picks the generator named by ``Settings.generator``:

* ``extractive`` (default): :class:`ExtractiveGenerator`, offline and deterministic;
* ``openai``: :class:`OpenAIGenerator` against any OpenAI-compatible endpoint configured
  by ``RAG_GENERATOR_BASE_URL`` / ``RAG_GENERATOR_MODEL`` / ``RAG_GENERATOR_API_KEY``
  (falling back to ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``); how long it may take by
  ``RAG_GENERATOR_TIMEOUT`` (seconds per attempt; default ``Settings.request_timeout``,
  i.e. ``RAG_APP_REQUEST_TIMEOUT``) and ``RAG_GENERATOR_MAX_RETRIES`` (default 3). A bad
  value is a ``ConfigError`` naming the variable, at start-up.

The openai SDK is imported only when the openai generator is chosen, so the offline
path does not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from rag_app.errors import ConfigError, unknown_name
from rag_app.generation.extractive import ExtractiveGenerator, bigram_tokenize, split_sentences
from rag_app.generation.prompt import SYSTEM_PROMPT, build_messages, format_context
from rag_app.generation.sources import (
    REFUSAL_TEXT,
    build_sources,
    cited_numbers,
    is_refusal,
    math_spans,
    numbered_chunks,
)
from rag_app.interfaces import Generator
from rag_app.settings import GENERATORS, Settings

__all__ = [
    "REFUSAL_TEXT",
    "SYSTEM_PROMPT",
    "ExtractiveGenerator",
    "bigram_tokenize",
    "build_messages",
    "build_sources",
    "cited_numbers",
    "format_context",
    "is_refusal",
    "make_generator",
    "math_spans",
    "numbered_chunks",
    "split_sentences",
]

GENERATOR_ENV_PREFIX = "RAG_GENERATOR"
GENERATOR_MAX_RETRIES = 3
TIMEOUT_VAR = f"{GENERATOR_ENV_PREFIX}_TIMEOUT"
MAX_RETRIES_VAR = f"{GENERATOR_ENV_PREFIX}_MAX_RETRIES"


def make_generator(
    settings: Settings,
    tokenize: Callable[[str], list[str]] | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> Generator:
    """The generator ``settings.generator`` names; ``tokenize`` feeds the extractive one.

    For ``openai`` the endpoint is read from the environment now (``env`` overrides
    ``os.environ`` for tests), and a missing key raises ``ConfigError`` naming the
    variables to set -- before any question is asked.
    """
    if settings.generator == "extractive":
        return ExtractiveGenerator(tokenize)
    if settings.generator == "openai":
        from rag_app.env import EndpointConfig
        from rag_app.generation.openai_generator import OpenAIGenerator
        from rag_app.llm import ChatClient

        environ = os.environ if env is None else env
        config = EndpointConfig.from_env(GENERATOR_ENV_PREFIX, environ).require()
        timeout = _env_number(environ, TIMEOUT_VAR, settings.request_timeout, float, "a number of seconds > 0, e.g. 30")
        retries = int(_env_number(environ, MAX_RETRIES_VAR, GENERATOR_MAX_RETRIES, int, "an integer >= 0, e.g. 3"))
        client = ChatClient(
            config,
            timeout=timeout,
            max_retries=retries,
            timeout_setting=TIMEOUT_VAR if environ.get(TIMEOUT_VAR) else f"{TIMEOUT_VAR} (or RAG_APP_REQUEST_TIMEOUT)",
            retries_setting=MAX_RETRIES_VAR,
        )
        return OpenAIGenerator(client, config.model, settings.temperature, settings.max_answer_tokens)
    raise unknown_name("generator", settings.generator, GENERATORS, "Settings.generator / RAG_APP_GENERATOR")


def _env_number(
    env: Mapping[str, str], name: str, default: float, kind: type[int] | type[float], expected: str
) -> float:
    """A numeric variable (blank = ``default``); a bad one is a ConfigError naming it."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        value = -1
    if value < 0 or (kind is float and value == 0) or value != value:
        raise ConfigError(f"{name}={raw!r} is not valid: expected {expected}; fix or unset {name}")
    return value
