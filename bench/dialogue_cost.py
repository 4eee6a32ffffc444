"""What the dialogue tier costs per dialogue, next to the single-question deterministic tier.

    python bench/dialogue_cost.py [--repeats 3]

Offline, in one process, on the demo dataset with rag_app's default settings (the index
is built first in a temporary cache folder, untimed; the repo's ``.rag_cache`` is not used). Per repeat, in this order:

1. **deterministic tier** (the reference): ``EvalSession.run_case("deterministic", item)``
   for every golden item (97): one rag_app ``chat`` per case, then the checks.
2. **dialogue tier, rag_app tutor**: ``run_case("dialogue", item)`` for every demo
   dialogue (40) against a tutor that takes each turn's decision from the item's labels
   (as the scripted Oracle tutor does) and, on every answer turn, asks rag_app's ``chat``
   with the conversation so far: the per-turn cost of a RAG tutor built on this pipeline.
   The scripted student plays; each answer turn's retrieval is checked against gold.
3. **dialogue tier, scripted tutor**: the same with the Oracle tutor alone (no rag_app
   call): the framework's own cost per dialogue (replay, student, verdict, rates).

Reported: wall time per case of each, the ratio of a dialogue to a single question, and
per dialogue the turns, system calls, rag_app calls and student replies (from the cases'
``details.calls``). Writes ``bench/results/dialogue_cost.json``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import md_table, ratio, run_header, write_results  # noqa: E402
from rag_eval.adapters import PipelineSpec  # noqa: E402
from rag_eval.adapters.rag_app import RagAppSystem  # noqa: E402
from rag_eval.dataset import find_paths  # noqa: E402
from rag_eval.dialogue.load import load_dialogue_set  # noqa: E402
from rag_eval.dialogue.model import DialogueItem, ExpectedTurn  # noqa: E402
from rag_eval.session import EvalConfig, EvalSession  # noqa: E402
from tests.rag_eval._dialogue_systems import OracleTutor  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "golden_sets" / "demo_maths"


class RagAppTutor(OracleTutor):
    """The Oracle's decisions; every answer turn is rag_app's answer to the conversation."""

    def __init__(self, items: Sequence[DialogueItem], rag: RagAppSystem) -> None:
        super().__init__(items)
        self.rag = rag
        self.rag_calls = 0

    def hint(
        self, item: DialogueItem, level: str | None, message: str = "", turns: Sequence[Mapping[str, str]] = ()
    ) -> dict[str, Any]:
        return {"action": "answer", "message": message, "intent": item.target_intent, "hint_level": level}

    def reply(
        self, item: DialogueItem, position: int, expected: ExpectedTurn, turns: Sequence[Mapping[str, str]]
    ) -> dict[str, Any]:
        if expected.action != "answer":
            return super().reply(item, position, expected, turns)
        self.rag_calls += 1
        answer = self.rag.chat(turns[-1]["content"], None, list(turns[:-1]))
        items = [{"id": c.id, "text": c.text, "metadata": dict(c.metadata)} for c in answer.context]
        return {**self.hint(item, expected.hint_level, answer.answer), "retrieval": {"items": items}}


def timed(session: EvalSession, tier: str, items: Sequence[Any]) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    cases = [session.run_case(tier, i) for i in items]
    return time.perf_counter() - t0, cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    header = run_header("dialogue_cost", sys.argv[1:])
    paths = find_paths(DATASET)
    dialogues = load_dialogue_set(DATASET / "dialogues.jsonl")
    cache = Path(tempfile.mkdtemp(prefix="dialogue-cost-"))  # never the repo's .rag_cache
    config = EvalConfig(
        paths=paths, settings_overrides={"cache_dir": str(cache)}, project_root=REPO, pipeline=PipelineSpec("rag_app")
    )
    rag = EvalSession(config)  # the reference session; its system is the tutor's rag_app too
    golden = list(rag.dataset.items)
    t0 = time.perf_counter()
    rag.system.retrieve(golden[0].question)  # build or load the index, untimed
    warm = time.perf_counter() - t0
    tutor = RagAppTutor(dialogues, rag.system)  # type: ignore[arg-type]
    with_rag = EvalSession(config, lambda: tutor)  # type: ignore[arg-type,return-value]
    scripted = EvalSession(config, lambda: OracleTutor(dialogues))  # type: ignore[arg-type,return-value]
    for s in (with_rag, scripted):
        s.__dict__["dataset"] = rag.dataset
        s.__dict__["gold_space"] = rag.gold_space  # one gold space: corpus chunks built once, outside the timing
    timed(scripted, "dialogue", dialogues[:2])  # warm the dialogue code paths
    runs: list[dict[str, float]] = []
    calls: dict[str, Any] = {}
    for _ in range(args.repeats):
        rag._chats.clear()  # the session keeps one answer per item for the judge tier: generate afresh
        det_s, det_cases = timed(rag, "deterministic", golden)
        tutor.rag_calls = 0
        dlg_s, dlg_cases = timed(with_rag, "dialogue", dialogues)
        rag_calls = tutor.rag_calls
        own_s, _ = timed(scripted, "dialogue", dialogues)
        runs.append(
            {
                "deterministic_ms_per_question": det_s / len(golden) * 1e3,
                "dialogue_ms_per_dialogue": dlg_s / len(dialogues) * 1e3,
                "framework_ms_per_dialogue": own_s / len(dialogues) * 1e3,
            }
        )
        totals = {
            k: sum(c.details["calls"][k] for c in dlg_cases) for k in ("turns", "system_calls", "student_replies")
        }
        calls = {
            **{f"{k}_per_dialogue": v / len(dialogues) for k, v in totals.items()},
            "rag_app_chat_per_dialogue": rag_calls / len(dialogues),
            "outcomes": {o: sum(c.outcome == o for c in dlg_cases) for o in ("pass", "fail", "error", "skip")},
            "deterministic_outcomes": {
                o: sum(c.outcome == o for c in det_cases) for o in ("pass", "fail", "error", "skip")
            },
        }
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    ratios = {
        "dialogue_over_question": ratio(med["dialogue_ms_per_dialogue"], med["deterministic_ms_per_question"]),
        "dialogue_per_rag_call_over_question": ratio(
            med["dialogue_ms_per_dialogue"] / calls["rag_app_chat_per_dialogue"], med["deterministic_ms_per_question"]
        ),
        "framework_share_of_dialogue": ratio(med["framework_ms_per_dialogue"], med["dialogue_ms_per_dialogue"]),
    }
    payload = {
        **header,
        "index_warm_s": warm,
        "questions": len(golden),
        "dialogues": len(dialogues),
        "repeats": runs,
        "median": med,
        "calls": calls,
        "ratios": ratios,
    }
    path = write_results("dialogue_cost", payload)
    shutil.rmtree(cache, ignore_errors=True)
    print(md_table(["measure", "median ms per case"], [[k, v] for k, v in med.items()]))
    print(md_table(["per dialogue", "count"], [[k, v] for k, v in calls.items() if isinstance(v, float)]))
    print(md_table(["ratio", "value"], [[k, v] for k, v in ratios.items()]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
