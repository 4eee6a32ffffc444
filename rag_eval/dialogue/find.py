"""Where a run's dialogue set is: an explicit path, else ``dialogues.jsonl`` beside the golden set.

A dataset without one simply has no dialogue cases (the dialogue tier collects nothing);
an explicit path that does not exist is a configuration error naming it.
"""

from __future__ import annotations

from pathlib import Path

from rag_eval.dialogue.load import DialogueSetError

DIALOGUE_NAMES: tuple[str, ...] = ("dialogues.jsonl",)


def find_dialogue_set(
    golden: Path | None, explicit: str | Path | None = None, where: str = "--rag-dialogues"
) -> Path | None:
    """The dialogue set of a run: ``explicit`` when given (it must exist), else the first of
    ``DIALOGUE_NAMES`` in the golden set's folder, else None."""
    if explicit is not None and str(explicit).strip():
        path = Path(explicit)
        if not path.is_file():
            raise DialogueSetError(f"{where} {path}: no such file (give a dialogue set JSONL, see docs/dialogue.md)")
        return path
    if golden is None:
        return None
    found = [golden.parent / name for name in DIALOGUE_NAMES if (golden.parent / name).is_file()]
    return found[0] if found else None
