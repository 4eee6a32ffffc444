"""JudgeConfig: env fallbacks, the skip reason, the same-model warning, prices TOML."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.core.errors import ConfigError
from rag_eval.judge.config import JudgeConfig, load_prices, make_chat_client
from rag_eval.llm.client import LLMClient
from rag_eval.llm.messages import ChatRequest
from tests.support.openai_server import ScriptedOpenAIServer

KEY = "sk-test-judge-SECRET"


def cfg_from(env: dict[str, str], tmp_path: Path, **kw: object) -> JudgeConfig:
    return JudgeConfig.from_env(env, cache_dir=tmp_path / "cache", **kw)  # type: ignore[arg-type]


def test_from_env_prefers_judge_variables_and_falls_back_to_openai(tmp_path: Path) -> None:
    env = {"RAG_JUDGE_MODEL": "judge-m", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1/", "OPENAI_API_KEY": KEY}
    cfg = cfg_from(env, tmp_path)
    assert (cfg.endpoint.base_url, cfg.endpoint.model, cfg.endpoint.api_key) == (
        "http://127.0.0.1:9/v1",
        "judge-m",
        KEY,
    )
    assert cfg.endpoint.var("api_key") == "OPENAI_API_KEY"
    assert cfg.missing_reason() is None
    assert KEY not in repr(cfg)

    env.update(RAG_JUDGE_BASE_URL="http://127.0.0.1:8/v1", RAG_JUDGE_API_KEY="sk-judge-own")
    cfg2 = cfg_from(env, tmp_path)
    assert (cfg2.endpoint.base_url, cfg2.endpoint.api_key) == ("http://127.0.0.1:8/v1", "sk-judge-own")
    assert (cfg2.engine, cfg2.fresh, cfg2.budget_usd, cfg2.budget_tokens) == ("native", False, None, None)


def test_missing_reason_names_every_variable_in_one_sentence(tmp_path: Path) -> None:
    assert cfg_from({}, tmp_path).missing_reason() == (
        "judge not configured: set RAG_JUDGE_MODEL, RAG_JUDGE_BASE_URL (or OPENAI_BASE_URL) "
        "and RAG_JUDGE_API_KEY (or OPENAI_API_KEY)"
    )
    # Only what is missing is named: the OpenAI fallbacks cover URL and key.
    only_model = cfg_from({"OPENAI_BASE_URL": "http://h/v1", "OPENAI_API_KEY": KEY}, tmp_path)
    assert only_model.missing_reason() == "judge not configured: set RAG_JUDGE_MODEL"
    no_key = cfg_from(
        {"RAG_JUDGE_MODEL": "m", "RAG_JUDGE_BASE_URL": "http://h/v1", "RAG_JUDGE_API_KEY": "  "}, tmp_path
    )
    assert no_key.missing_reason() == "judge not configured: set RAG_JUDGE_API_KEY (or OPENAI_API_KEY)"


def test_missing_reason_rejects_a_non_http_base_url(tmp_path: Path) -> None:
    cfg = cfg_from({"RAG_JUDGE_MODEL": "m", "RAG_JUDGE_BASE_URL": "localhost:8000", "RAG_JUDGE_API_KEY": KEY}, tmp_path)
    reason = cfg.missing_reason()
    assert reason is not None and reason.startswith("judge not configured:")
    assert "RAG_JUDGE_BASE_URL" in reason and "http(s)" in reason and KEY not in reason


def test_same_model_warning(tmp_path: Path) -> None:
    cfg = cfg_from({"RAG_JUDGE_MODEL": "qwen2.5-7b"}, tmp_path)
    warning = cfg.same_model_warning("Qwen2.5-7B ")
    assert warning is not None
    assert "a model grading its own answers inflates scores" in warning and "RAG_JUDGE_MODEL" in warning
    assert cfg.same_model_warning("gpt-4o-mini") is None
    assert cfg.same_model_warning(None) is None
    assert cfg_from({}, tmp_path).same_model_warning("") is None


def test_engine_and_budgets_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown judge engine 'ragas'; valid judge engines: native, deepeval"):
        cfg_from({}, tmp_path, engine="ragas")
    with pytest.raises(ConfigError, match="budget_usd"):
        cfg_from({}, tmp_path, budget_usd=-1.0)
    with pytest.raises(ConfigError, match="budget_tokens"):
        cfg_from({}, tmp_path, budget_tokens=-5)
    with pytest.raises(ConfigError, match=r"prices\['m'\]\.completion"):
        cfg_from({}, tmp_path, prices={"m": (1.0, -2.0)})
    assert cfg_from({}, tmp_path, engine="deepeval", prices={"m": (1, 2)}).prices == {"m": (1.0, 2.0)}


def test_load_prices_reads_usd_per_million(tmp_path: Path) -> None:
    p = tmp_path / "prices.toml"
    p.write_text(
        '[prices."gpt-4o-mini"]\nprompt = 0.15\ncompletion = 0.6\n[prices.judge-m]\nprompt = 2\ncompletion = 8\n'
    )
    assert load_prices(p) == {"gpt-4o-mini": (0.15, 0.6), "judge-m": (2.0, 8.0)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[prices."m"]\nprompt = 1\n', r'\[prices\."m"\] is missing \'completion\''),
        ('[prices."m"]\nprompt = 1\ncompletion = "cheap"\n', r'\[prices\."m"\]\.completion must be a number'),
        ('[prices."m"]\nprompt = -1\ncompletion = 1\n', r'\[prices\."m"\]\.prompt must be a number >= 0'),
        ('[prices."m"]\nprompt = 1\ncompletion = 1\ncompletoin = 2\n', r"unknown key\(s\) \['completoin'\]"),
        ("[prices]\nm = 3\n", r'\[prices\."m"\] must be a table'),
        ('[price."m"]\nprompt = 1\n', r"unknown top-level key\(s\) \['price'\]"),
        ("", r"no \[prices\] table"),
        ('[prices."m"\nprompt = 1\n', r"invalid TOML: .*line 1"),
    ],
)
def test_load_prices_errors_name_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    p = tmp_path / "prices.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=expected) as info:
        load_prices(p)
    assert str(info.value).startswith(str(p))


def test_load_prices_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="price file not found"):
        load_prices(tmp_path / "nope.toml")


def test_make_chat_client_uses_the_judge_endpoint(tmp_path: Path, openai_server: ScriptedOpenAIServer) -> None:
    cfg = cfg_from(
        {"RAG_JUDGE_MODEL": "judge-m", "RAG_JUDGE_BASE_URL": openai_server.base_url, "RAG_JUDGE_API_KEY": KEY}, tmp_path
    )
    with make_chat_client(cfg) as client:
        assert isinstance(client, LLMClient)
        p = client.policy
        assert (p.timeout, p.max_retries, p.budget, p.breaker_after) == (30.0, 3, 150.0, 5)
        resp = client.complete(ChatRequest(cfg.model, [{"role": "user", "content": "hi"}]))
    assert resp.content == "OK"
    assert openai_server.requests_of("chat")[0].headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(ConfigError, match="judge not configured: set RAG_JUDGE_MODEL"):
        make_chat_client(cfg_from({}, tmp_path))
