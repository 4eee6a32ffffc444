"""Each golden item becomes one case per tier; thresholds.toml gates the whole run.

Select tiers with markers: ``pytest eval_tests -m retrieval``.
"""

import pytest

from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import GoldenItem
from rag_eval.plugin.runner import CaseRunner


@pytest.mark.retrieval
def test_retrieval(golden_case: GoldenItem, rag_eval: CaseRunner) -> None:
    rag_eval.retrieval(golden_case)


@pytest.mark.deterministic
def test_deterministic(golden_case: GoldenItem, rag_eval: CaseRunner) -> None:
    rag_eval.deterministic(golden_case)


@pytest.mark.judge
def test_judge(golden_case: GoldenItem, rag_eval: CaseRunner) -> None:
    rag_eval.judge(golden_case)


@pytest.mark.passk
def test_passk(golden_case: GoldenItem, rag_eval: CaseRunner) -> None:
    rag_eval.passk(golden_case)


@pytest.mark.dialogue
def test_dialogue(dialogue_case: DialogueItem, rag_eval: CaseRunner) -> None:
    rag_eval.dialogue(dialogue_case)


@pytest.mark.passk
def test_passk_dialogue(dialogue_case: DialogueItem, rag_eval: CaseRunner) -> None:
    rag_eval.passk(dialogue_case)
