"""The dialogue tier's metric a person can label, ``dialogue.hint_success``: the hint
judge's verdict of one dialogue (``details.hint_verdict``: success true 1, false 0; a
verdict without a success is the judge's error, no value), and the transcript shown."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.tiers.base import JudgedValues, LabelQuestion, LabelView

QUESTIONS: Mapping[str, LabelQuestion] = {
    "hint_success": LabelQuestion("Did the hints guide the student without giving the answer away?", ("yes", "no")),
}


def hint_success(case: CaseResult) -> Any:
    hint = case.details.get("hint_verdict")
    return hint.get("success") if isinstance(hint, Mapping) else None


def judged_values(case: CaseResult) -> JudgedValues | None:
    if not isinstance(case.details.get("hint_verdict"), Mapping):
        return None  # no judge configured, or a dialogue that should not be guided (not judged)
    success = hint_success(case)
    if isinstance(success, bool):
        return JudgedValues({"hint_success": 1.0 if success else 0.0})
    return JudgedValues(errors=("hint_success",))


def label_view(case: CaseResult, item: Mapping[str, Any]) -> LabelView:
    """The opening as the question, the transcript as the answer, no context."""
    turns = (case.details.get("transcript") or {}).get("turns") or ()
    question = str(item.get("opening") or (turns[0].get("student_message", "") if turns else ""))
    answer = "\n\n".join(
        f"student: {t.get('student_message', '')}\nsystem: {(t.get('turn') or {}).get('message', '')}" for t in turns
    )
    return LabelView(question, answer, ())
