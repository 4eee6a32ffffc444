"""The collector during a run (rag_eval.util.heap): the heap frozen after warm-up and released
at the end, only by the run that froze it first; the collector paused while the controller
writes its outputs and restored afterwards."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest

from rag_eval.util.heap import Heap, paused
from tests.rag_eval._plugin_sandbox import Sandbox


@pytest.fixture
def thawed() -> Iterator[None]:
    """Nothing frozen during the test (the outer test run may have frozen its heap); its
    state given back afterwards."""
    was_frozen = gc.get_freeze_count() > 0
    gc.unfreeze()
    yield
    gc.unfreeze()
    if was_frozen:
        gc.freeze()


@pytest.mark.usefixtures("thawed")
def test_freeze_moves_the_heap_out_of_the_scans_until_release() -> None:
    heap = Heap()
    heap.freeze()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    kept = [[] for _ in range(10)]  # alive after warm-up (tracked containers): frozen by the next freeze
    heap.freeze()
    assert gc.get_freeze_count() >= frozen + len(kept)
    heap.release()
    assert gc.get_freeze_count() == 0
    heap.release()  # twice: nothing more


@pytest.mark.usefixtures("thawed")
def test_a_heap_frozen_by_someone_else_is_left_alone() -> None:
    gc.freeze()  # an outer run
    before = gc.get_freeze_count()
    heap = Heap()
    heap.freeze()
    garbage = [[] for _ in range(100)]
    heap.freeze()
    assert gc.get_freeze_count() == before  # froze nothing more
    heap.release()
    assert gc.get_freeze_count() == before  # and did not unfreeze theirs
    del garbage


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_restores_the_collector_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), paused():
            raise RuntimeError("a write failed")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_run_freezes_during_its_tests_and_pauses_the_collector_while_writing(sandbox: Sandbox) -> None:
    """A fresh process (a subprocess run): frozen while the tests run, paused while the
    controller writes, results as always."""
    sandbox.write_conftest(
        "import gc, json\n"
        "from pathlib import Path\n"
        "import rag_eval.plugin.controller as controller\n"
        "_write = controller.write_outputs\n"
        "def _recording(*args, **kwargs):\n"
        "    Path('gc_writing.json').write_text(json.dumps(gc.isenabled()))\n"
        "    return _write(*args, **kwargs)\n"
        "controller.write_outputs = _recording\n"
        "def pytest_runtest_call(item):\n"
        "    Path('frozen_in_tests.json').write_text(json.dumps(gc.get_freeze_count()))\n"
    )
    result = sandbox.run_subprocess("-m", "retrieval")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert json.loads((sandbox.root / "frozen_in_tests.json").read_text()) > 1000
    assert json.loads((sandbox.root / "gc_writing.json").read_text()) is False
    assert len(sandbox.cases()) == 9
