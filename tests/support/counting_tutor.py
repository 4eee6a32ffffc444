"""The oracle tutor of the dialogue tests (tests/rag_eval/_dialogue_systems.py), counting
how many of its calls overlap: a system that declares no ``concurrency``, for the
dialogue concurrency test and bench/dialogue_concurrency.py.

``--rag-pipeline tests.support.counting_tutor:tutor`` over the demo dialogues, or with
``[options] dialogues = "<path>"`` over another set; ``hold_s`` (default 0.02) is how long
each call is held while counted; ``concurrency`` (default: none) is what it declares.
After every call the most calls held at once so far is
written to ``system_most.txt`` in the working directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag_eval.dialogue.load import load_dialogue_set
from rag_eval.dialogue.model import DialogueItem
from tests.rag_eval._dialogue_systems import OracleTutor, demo_items
from tests.support.in_flight import InFlight

MOST_FILE = "system_most.txt"


class CountingTutor(OracleTutor):
    """Without ``concurrency`` the framework calls it one call at a time."""

    def __init__(self, items: Sequence[DialogueItem], hold_s: float, concurrency: int | None = None) -> None:
        super().__init__(items)
        self.gauge = InFlight(hold_s)
        if concurrency is not None:
            self.concurrency = concurrency

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
        self.gauge.hold()
        Path(MOST_FILE).write_text(str(self.gauge.most), encoding="utf-8")
        return super().dialogue(turns, context)


def tutor(options: Mapping[str, Any]) -> CountingTutor:
    """The pipeline factory (module doc)."""
    path = options.get("dialogues")
    items = load_dialogue_set(Path(str(path))) if path else demo_items()
    declared = options.get("concurrency")
    return CountingTutor(items, float(options.get("hold_s", 0.02)), int(declared) if declared is not None else None)
