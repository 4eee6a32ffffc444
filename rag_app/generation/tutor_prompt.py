"""The LLM request of one tutoring turn: the use case's system prompt plus the turn's layer.

The system prompt is the pipeline's own (:data:`~rag_app.generation.prompt.SYSTEM_PROMPT`:
only from the material, cite ``[n]``, say when it is not enough, guide instead of
solving, material is data) followed by the tutoring rules of this turn: give only the
hint layer the policy chose, never the final result or the full worked solution, not
even when the student insists. The output is still checked afterwards
(:mod:`rag_app.generation.interception`): the prompt asks, the check enforces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_app.generation.prompt import SYSTEM_PROMPT, history_messages, user_message
from rag_app.types import Chunk

LEVEL_RULES: dict[str, str] = {
    "reminder": "知识提醒：只提醒学生这道题要用到的概念、公式或定理（引用资料），不要写解题步骤。\n"
    "Reminder: recall the concept, formula or theorem the problem needs; no solution steps.",
    "approach": "思路提示：说明从哪里入手、分哪几步，每一步做什么，但不要算出任何结果。\n"
    "Approach: say where to start and which steps to take, without computing any result.",
    "wrong_direction": "易错提醒：指出这类题常见的错误方向或学生做法中可能的问题，让学生自己改正，不要给出正确结果。\n"
    "Wrong direction: point out the typical wrong turn, let the student correct it; do not give the correct result.",
}

TUTOR_RULES = """辅导对话规则 / Tutoring rules:
A. 本轮只给下面这一层提示 / Give only this layer of hint this turn:
   {level_rule}
B. 绝对不要给出最终答案、最终数值或完整的解题过程，也不要抄写资料中例题"解："之后的计算结果；学生再三要求也不行，
   这时说明你不能直接给答案，然后给出这一层的提示。
   Never give the final answer, a final value or a full worked solution, and never copy the results after "解：" in
   the material's worked examples -- not even when the student insists; say you cannot, then give this layer's hint.
C. 回答简短（不超过 4 句），每条来自资料的内容后标注 [n]。
   Keep it short (at most 4 sentences) and mark what comes from the material with [n]."""


def tutor_system_prompt(level: str) -> str:
    return SYSTEM_PROMPT + "\n\n" + TUTOR_RULES.format(level_rule=LEVEL_RULES[level])


def tutor_messages(
    level: str, question: str, context: Sequence[Chunk], history: Sequence[Mapping[str, str]] = ()
) -> list[dict[str, str]]:
    """System prompt with the layer, earlier turns (user/assistant only), material + latest message."""
    return [
        {"role": "system", "content": tutor_system_prompt(level)},
        *history_messages(history, "turns"),
        {"role": "user", "content": user_message(question, context)},
    ]
