"""Progress of index builds: a caller's callable, a forced or automatic tqdm bar, RAG_PROGRESS."""

from __future__ import annotations

import io

import pytest

from rag_app.errors import ConfigError
from rag_app.index.progress import ENV, from_env, progress_reporter


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(progress: object, stream: io.StringIO, total: int = 300) -> None:
    with progress_reporter(progress, "index abc: embedding", total, stream=stream) as report:  # type: ignore[arg-type]
        for done in range(100, total + 1, 100):
            report(done, total)


def test_forced_bar_shows_done_total_rate_and_eta_even_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    stream = io.StringIO()  # not a TTY
    _run(True, stream)
    text = stream.getvalue()
    assert "index abc: embedding" in text and "300/300" in text
    assert "chunk/s" in text and "<" in text  # tqdm's rate and "elapsed<remaining"


def test_auto_is_silent_without_a_terminal_and_shows_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    piped = io.StringIO()
    _run(None, piped)
    assert piped.getvalue() == ""
    terminal = _Terminal()
    _run(None, terminal)
    assert "300/300" in terminal.getvalue()


def test_off_and_a_callable_write_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    terminal = _Terminal()
    _run(False, terminal)
    seen: list[tuple[int, int]] = []
    _run(lambda d, t: seen.append((d, t)), terminal)
    assert terminal.getvalue() == "" and seen == [(0, 300), (100, 300), (200, 300), (300, 300)]


def test_the_environment_forces_or_silences_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "on")
    piped = io.StringIO()
    _run(None, piped)
    assert "300/300" in piped.getvalue()
    monkeypatch.setenv(ENV, "off")
    terminal = _Terminal()
    _run(None, terminal)
    assert terminal.getvalue() == ""
    assert (from_env({ENV: "auto"}), from_env({}), from_env({ENV: "1"})) == (None, None, True)
    with pytest.raises(ConfigError, match="RAG_PROGRESS='sometimes': use auto, on or off"):
        from_env({ENV: "sometimes"})
