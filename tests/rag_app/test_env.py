from rag_app.env import EndpointConfig
from rag_app.retrieval.rerank_http import HttpReranker
from rag_app.settings import Settings


def test_without_fallback_the_openai_key_and_url_are_not_borrowed() -> None:
    env = {"OPENAI_API_KEY": "sk-openai-secret", "OPENAI_BASE_URL": "https://api.openai.com/v1"}
    cfg = EndpointConfig.from_env("RAG_RERANKER", env, fallback=False)
    assert (cfg.base_url, cfg.api_key) == ("", "")
    assert cfg.missing("base_url", "api_key") == ["RAG_RERANKER_BASE_URL", "RAG_RERANKER_API_KEY"]


def test_reranker_never_sends_openai_key_to_its_own_host() -> None:
    env = {
        "OPENAI_API_KEY": "sk-openai-secret",
        "RAG_RERANKER_BASE_URL": "http://127.0.0.1:9",
        "RAG_RERANKER_FLAVOUR": "tei",
    }
    reranker = HttpReranker.from_env(Settings(reranker="http"), env)
    assert "sk-openai-secret" not in repr(vars(reranker))


def test_with_fallback_the_openai_variables_are_used_and_named() -> None:
    cfg = EndpointConfig.from_env("RAG_JUDGE", {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://h:1/v1"})
    assert (cfg.base_url, cfg.api_key, cfg.api_key_var) == ("http://h:1/v1", "k", "OPENAI_API_KEY")
    assert cfg.missing() == ["RAG_JUDGE_MODEL"]
