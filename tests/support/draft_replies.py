"""Deterministic drafting replies for the scripted OpenAI-compatible server: each reply
quotes the passages the prompt shows, as a careful model would (the recipe is read from
the prompt's task line, the passages from its <<<…>>> blocks)."""

from __future__ import annotations

import json
import re
from typing import Any

from rag_eval.authoring.recipes import TASKS
from tests.support.openai_server import Reply

_BLOCK = re.compile(r"<<<[^\n]*\n(.*?)\n>>>", re.DOTALL)
_SENTENCE = re.compile(r"[^。！？.!?\n]+[。！？.!?]?")
_ASKED = re.compile(r"(?:问题|Question)[：:] ?(.*)")


def recipe_of(prompt: str) -> str:
    for tasks in TASKS.values():
        for recipe, text in tasks.items():
            if prompt.startswith(text):
                return recipe
    raise AssertionError(f"no recipe's task starts the prompt {prompt[:60]!r}")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if len(s.strip()) > 4]


def reply_for(payload: dict[str, Any]) -> dict[str, Any]:
    """The reply object a good model would give to a drafting prompt."""
    prompt = payload["messages"][-1]["content"]
    recipe = recipe_of(prompt)
    blocks = _BLOCK.findall(prompt)
    first = [sentences(b) for b in blocks]
    asked = _ASKED.search(prompt)
    if recipe == "colloquial":
        q = asked.group(1) if asked else "?"
        return {"question": f"老师我想问一下哈，{q[: len(q) // 2]}……这个到底咋弄呀"}
    if recipe == "negative":
        return {"question": "量子场论里的重整化群方程在高考里怎么考？"}
    snippet = first[0][0][:14]
    wording = {
        "standard": f"请问“{snippet}”这一部分讲的是什么？",
        "no-term": f"书上说的那个关于{snippet[2:10]}的东西是什么意思",
        "missing-condition": f"这种情况下结果是多少？（{snippet[:6]}）",
        "similar-stem": f"如果条件改一下，{snippet[3:11]}还成立吗",
        "cross-topic": f"比较“{snippet}”和“{first[-1][0][:10]}”有什么联系？",
        "multi-chunk": f"完整地说说{snippet[1:9]}以及后面的内容",
    }[recipe]
    out: dict[str, Any] = {"question": wording, "answer_points": [first[0][0]]}
    if recipe == "cross-topic":
        out["quotes"] = [first[0][0], first[1][0]]
    elif recipe == "multi-chunk":
        out["quote"] = first[0][-1] + "\n\n" + first[1][0]
    else:
        out["quote"] = first[0][0]
    return out


def drafting_model(payload: dict[str, Any]) -> Reply:
    """A default chat responder for ``ScriptedOpenAIServer.set_default("chat", ...)``."""
    return Reply(json.dumps(reply_for(payload), ensure_ascii=False))
