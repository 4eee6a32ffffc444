"""PASS@k and PASS^k over dialogue replays with a scripted nondeterministic tutor; replays
that did not finish are listed apart."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from rag_eval.dialogue.model import DialogueItem, ExpectedTurn
from rag_eval.dialogue.trials import dialogue_pass_k, replays
from rag_eval.dialogue.verdict import CaseVerdict, verdict
from rag_eval.metrics.passk import pass_at_k, pass_hat_k

ITEMS = [
    DialogueItem(f"d{i}", f"问题{i}", (ExpectedTurn("answer", hint_level="reminder"),), forbidden=("答案是42",))
    for i in range(4)
]


class Flaky:
    """Leaks on dialogue i with probability LEAK[i], from a seeded generator: nondeterministic
    across replays, reproducible across runs."""

    LEAK = {"问题0": 0.0, "问题1": 1.0, "问题2": 0.5, "问题3": 0.5}

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def dialogue(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any]) -> dict[str, Any]:
        leak = self.rng.random() < self.LEAK[turns[0]["content"]]
        return {"action": "answer", "message": "答案是42" if leak else "想想定义。", "hint_level": "reminder"}


def run(k: int, seed: int = 7) -> dict[str, list[CaseVerdict]]:
    system = Flaky(seed)
    return {item.id: [verdict(t) for t in replays(system, item, k)] for item in ITEMS}


def test_pass_at_k_and_pass_hat_k_count_dialogues() -> None:
    runs = run(3)
    passes = {d: sum(v.passed for v in vs) for d, vs in runs.items()}
    assert passes["d0"] == 3 and passes["d1"] == 0  # the scripted extremes
    result = dialogue_pass_k(runs, 3)
    at_least_one = sum(c >= 1 for c in passes.values())
    all_three = sum(c == 3 for c in passes.values())
    assert (result.pass_at_k.numerator, result.pass_at_k.denominator) == (at_least_one, 4)
    assert (result.pass_hat_k.numerator, result.pass_hat_k.denominator) == (all_three, 4)
    assert result.pass_at_k.value == at_least_one / 4 and result.pass_hat_k.value == all_three / 4
    assert {d: s.cls for d, s in result.per_dialogue.items()}["d1"] == "stable_fail"
    assert result.to_dict()["pass@3"]["value"] == at_least_one / 4


def test_more_replays_than_k_use_the_estimators_per_dialogue() -> None:
    runs = run(6)
    result = dialogue_pass_k(runs, 2)
    expected = sum(pass_at_k(6, sum(v.passed for v in vs), 2) for vs in runs.values())
    assert result.pass_at_k.numerator == pytest.approx(expected)
    assert result.pass_hat_k.numerator == pytest.approx(
        sum(pass_hat_k(6, sum(v.passed for v in vs), 2) for vs in runs.values())
    )


def test_unfinished_replays_are_listed_apart() -> None:
    ok = CaseVerdict("d", "pass", "")
    bad = CaseVerdict("d", "fail", "")
    err = CaseVerdict("d", "error", "system error")
    result = dialogue_pass_k({"a": [ok, err, bad], "b": [ok, ok], "c": [err, err, ok]}, 2)
    # a: 2 finished (1 pass) counts; b: 2 of 2 pass; c: 1 finished < k=2: out of the denominator
    assert (result.pass_at_k.numerator, result.pass_at_k.denominator, result.pass_at_k.value) == (2, 2, 1.0)
    assert (result.pass_hat_k.numerator, result.pass_hat_k.value) == (1, 0.5)
    assert result.not_finished == {"a": 1, "c": 2}
    assert result.pass_at_k.excluded == {"fewer_than_2_finished": ("c",)}


def test_no_dialogue_with_k_replays_is_absent_not_zero() -> None:
    result = dialogue_pass_k({"a": [CaseVerdict("a", "error", "")]}, 1)
    assert (result.pass_at_k.value, result.pass_hat_k.value) == (None, None)


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="k=0 must be at least 1"):
        replays(Flaky(1), ITEMS[0], 0)
    with pytest.raises(ValueError, match="k=0 must be at least 1"):
        dialogue_pass_k({}, 0)
