"""Pytest plugin exposing the scripted OpenAI-compatible server as a fixture.

Register it from the root conftest with ``pytest_plugins = ["tests.support.fixtures"]``
so every test module can request ``openai_server`` without importing anything.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started server on a free 127.0.0.1 port, fresh per test so scripts never leak."""
    with ScriptedOpenAIServer() as srv:
        yield srv
