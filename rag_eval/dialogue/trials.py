"""Repeated trials over dialogues (METRICS.md, "Repeated trials over dialogues").

k independent replays of each dialogue from the same initial context, each with a fresh
student session. PASS@k = dialogues with at least one passing replay ÷ dialogues with k
finished replays; PASS^k = dialogues with all k passing ÷ the same. Replays that did not
finish (error outcomes) are listed apart; a dialogue left with fewer than k finished
replays is not in the denominator.

Per dialogue the c/n, Wilson interval and stable/flaky class come from
``rag_eval.metrics.passk.summarize``; with exactly k finished replays its pass@k is 1
when c ≥ 1 and its pass^k is 1 when c = k, so the sums below are the counts above. With
more than k finished replays they are the unbiased estimators averaged over dialogues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_eval.dialogue.model import DialogueItem
from rag_eval.dialogue.rate import Rate
from rag_eval.dialogue.replay import replay
from rag_eval.dialogue.simulator import Simulator
from rag_eval.dialogue.transcript import Transcript
from rag_eval.dialogue.verdict import CaseVerdict
from rag_eval.metrics.passk import TrialSummary, summarize


def replays(
    system: Any, item: DialogueItem, k: int, simulator: Simulator | None = None, *, limit: int | None = None
) -> list[Transcript]:
    """k independent replays of ``item`` (a new simulator session each; the system's own memory is its business)."""
    if k < 1:
        raise ValueError(f"replays: k={k} must be at least 1; set k to a positive number of replays")
    return [replay(system, item, simulator, limit=limit) for _ in range(k)]


@dataclass(frozen=True)
class DialoguePassK:
    k: int
    pass_at_k: Rate
    pass_hat_k: Rate
    per_dialogue: Mapping[str, TrialSummary] = field(default_factory=dict)
    not_finished: Mapping[str, int] = field(default_factory=dict)  # dialogue id -> replays that did not finish

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            f"pass@{self.k}": self.pass_at_k.to_dict(),
            f"pass^{self.k}": self.pass_hat_k.to_dict(),
            "per_dialogue": {d: {"n": s.n, "c": s.c, **s.to_metrics()} for d, s in self.per_dialogue.items()},
            "not_finished": dict(self.not_finished),
        }


def dialogue_pass_k(verdicts: Mapping[str, Sequence[CaseVerdict]], k: int) -> DialoguePassK:
    """PASS@k and PASS^k from each dialogue's replay verdicts."""
    if k < 1:
        raise ValueError(f"dialogue_pass_k: k={k} must be at least 1")
    summaries: dict[str, TrialSummary] = {}
    not_finished: dict[str, int] = {}
    short: list[str] = []
    for dialogue_id, runs in verdicts.items():
        finished = [v for v in runs if v.outcome != "error"]
        if len(finished) < len(runs):
            not_finished[dialogue_id] = len(runs) - len(finished)
        if len(finished) < k:
            short.append(dialogue_id)
            continue
        summaries[dialogue_id] = summarize([v.passed for v in finished], k)
    excluded = {f"fewer_than_{k}_finished": tuple(short)} if short else {}
    n = len(verdicts)
    return DialoguePassK(
        k,
        Rate(f"pass@{k}", sum(s.pass_at_k for s in summaries.values()), len(summaries), n, excluded),
        Rate(f"pass^{k}", sum(s.pass_hat_k for s in summaries.values()), len(summaries), n, excluded),
        summaries,
        not_finished,
    )
