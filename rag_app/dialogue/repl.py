"""``python -m rag_app chat``: a multi-turn tutoring conversation on the terminal.

Each line the student types is one message; the tutor answers with its tag (【需要确认】,
【知识提醒】 ...), the message and the sources it cites. An empty line, ``/quit`` or the
end of input ends the conversation. ``--json`` prints one ``DialogueTurn.to_dict()`` per
line instead (for scripts). The conversation lives in this process only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, Protocol, TextIO

from rag_app.types import DialogueTurn

QUIT = ("/quit", "/exit", "/q")


class Tutor(Protocol):
    """Anything with the dialogue call (``RagPipeline``)."""

    def dialogue(self, turns: Any, context: Mapping[str, Any] | None = None) -> DialogueTurn: ...


def format_turn(turn: DialogueTurn) -> str:
    """The tutor's turn for a terminal: action and level, message, then the cited sources."""
    head = turn.action if turn.hint_level is None else f"{turn.action}/{turn.hint_level}"
    lines = [f"tutor [{head}]: {turn.message}"]
    if turn.interception:
        lines.append(f"  (the draft reply was {turn.interception}: it contained the worked answer)")
    for s in turn.sources:
        pages = f", p{s.page_start}-{s.page_end}" if s.page_start is not None else ""
        lines.append(f"  [{s.n}] {s.book} - {s.section}{pages}")
    return "\n".join(lines)


def run_chat(
    tutor: Tutor,
    context: Mapping[str, Any],
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    as_json: bool = False,
) -> int:
    """Read student lines until an empty line / ``/quit`` / EOF; print one tutor turn each."""
    src, out = stdin or sys.stdin, stdout or sys.stdout
    interactive = src.isatty() and not as_json
    turns: list[dict[str, str]] = []
    if interactive:
        print("学生 / student: type a message, an empty line or /quit to end.", file=out, flush=True)
    while True:
        if interactive:
            print("> ", end="", file=out, flush=True)
        line = src.readline()
        text = line.strip()
        if not line or not text or text in QUIT:
            return 0
        turns.append({"role": "user", "content": text})
        turn = tutor.dialogue(turns, context)
        turns.append({"role": "assistant", "content": turn.message})
        print(json.dumps(turn.to_dict(), ensure_ascii=False) if as_json else format_turn(turn), file=out, flush=True)
