from pathlib import Path

import pytest

from tests.rag_eval._plugin_sandbox import Sandbox, make_sandbox, shared_cache


@pytest.fixture(scope="session")
def sandbox_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Session scope: set up before pytester snapshots sys.modules (see shared_cache).
    return shared_cache(tmp_path_factory)


@pytest.fixture
def sandbox(sandbox_cache: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    """A pytester project with a small corpus, golden set and thresholds (see _plugin_sandbox)."""
    return make_sandbox(pytester, monkeypatch, sandbox_cache)
