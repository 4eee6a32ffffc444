"""The drafting recipes: one per scenario, each a prompt (Chinese or English) and what a
reply must hold.

Every reply is one JSON object. The keys a recipe reads:

=================  =========================================  ============================
recipe             shown to the model                         reply
=================  =========================================  ============================
standard           one passage                                question, answer_points, quote
colloquial         an existing item and its gold quote        question (gold: the item's)
no-term            one passage                                question, answer_points, quote
missing-condition  one passage                                question, answer_points, quote
                                                              (expected action: clarify)
cross-topic        two passages of different documents        question, answer_points, quotes
                                                              (one per passage, both gold)
multi-chunk        two consecutive passages of one document   question, answer_points, quote
                                                              (crossing from one to the next)
similar-stem       an existing item and its passage           question, answer_points, quote
negative           one passage (the topic)                    question (no gold: refuse)
=================  =========================================  ============================
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# (recipe, what it is given) in the order `draft` runs them; colloquial and similar-stem
# rewrite items, so they run after the recipes that write items from passages.
RECIPES: tuple[str, ...] = (
    "standard",
    "no-term",
    "missing-condition",
    "cross-topic",
    "multi-chunk",
    "negative",
    "colloquial",
    "similar-stem",
)
NEEDS: Mapping[str, str] = {
    "standard": "passage",
    "no-term": "passage",
    "missing-condition": "passage",
    "negative": "passage",
    "cross-topic": "pair",
    "multi-chunk": "adjacent",
    "colloquial": "item",
    "similar-stem": "item",
}
ACTION: Mapping[str, str] = {"missing-condition": "clarify", "negative": "refuse"}
UNPARSEABLE = "rejected: unparseable"
# How a reply's JSON is asked for, best first (as the judge: rag_eval.judge.native): a mode
# the server refuses moves the run to the next one for every later call.
FORMAT_MODES: tuple[str, ...] = ("json_schema", "json_object", "text")

_SYSTEM = {
    "zh": "你是为检索增强问答系统编写评测题的助手。只根据给出的材料出题，只输出一个 JSON 对象，不要输出其他文字。",
    "en": "You write evaluation questions for a retrieval-augmented QA system. Use only the material given. "
    "Reply with one JSON object and nothing else.",
}
_QUOTE_RULE = {
    "zh": "quote 必须是材料中一字不差的连续原文（可以只取一句），不要改写。",
    "en": "quote must be copied verbatim from the material (one contiguous span, a sentence is enough); "
    "do not reword it.",
}
TASKS = {
    "zh": {
        "standard": "根据下面的材料，写一个学生会问、且能由材料回答的问题，列出参考答案的要点，并给出支持答案的原文。",
        "no-term": "根据下面的材料，写一个能由材料回答的问题，但问题里不出现材料中的专业术语、定理名称或题号，"
        "用学生自己的描述代替。列出参考答案的要点，并给出支持答案的原文。",
        "missing-condition": "根据下面的材料，写一个缺少关键条件的问题：不补充条件就无法确定答案，"
        "好的回答应当先追问这个条件。列出回答应追问的条件作为要点，并给出相关的原文。",
        "cross-topic": "下面有两段来自不同章节的材料。写一个需要同时用到两段材料才能回答的比较或联系类问题，"
        "列出答案要点，并从每段材料各取一段原文，按材料顺序放进 quotes。",
        "multi-chunk": "下面是同一文档中相邻的两段材料。写一个需要两段内容才能完整回答的问题，"
        "列出答案要点，并给出一段从第一段末尾延续到第二段开头的连续原文。",
        "negative": "下面的材料只用来确定主题。写一个与该主题相关、但这份教材不可能回答的问题"
        "（例如超纲内容或教材之外的事实）。",
        "colloquial": "把下面这个问题改写成学生口语化的问法（可以啰嗦、省略、用口头语），意思和答案都不能变。",
        "similar-stem": "下面是一个已有问题和它的材料。写一个题干相似、但改变了一个条件、因而答案不同的新问题，"
        "答案仍要能由材料回答。列出新问题的答案要点，并给出支持它的原文。",
    },
    "en": {
        "standard": "From the material below, write a question a student would ask that the material answers, "
        "list the points of the reference answer, and quote the text that supports it.",
        "no-term": "From the material below, write a question the material answers, but without the technical "
        "terms, theorem names or problem numbers of the material: describe them as a student would. "
        "List the answer's points and quote the supporting text.",
        "missing-condition": "From the material below, write a question that lacks a condition needed to answer "
        "it: a good reply asks for the condition first. List the condition to ask for as the points, and "
        "quote the relevant text.",
        "cross-topic": "Below are two passages of different documents. Write a comparison or connection question "
        "that needs both to answer, list the answer's points, and put one quote from each passage, in order, "
        "in quotes.",
        "multi-chunk": "Below are two consecutive passages of one document. Write a question that needs both to "
        "answer fully, list the answer's points, and quote one contiguous span that runs from the end of the "
        "first passage into the start of the second.",
        "negative": "The material below only sets the topic. Write a question on that topic which this corpus "
        "cannot answer (beyond its scope, or a fact it does not hold).",
        "colloquial": "Rewrite the question below the way a student would casually ask it (wordy, elliptical, "
        "informal); its meaning and answer must not change.",
        "similar-stem": "Below are an existing question and its material. Write a new question with a similar "
        "stem but one condition changed, so that its answer differs, still answered by the material. List "
        "the new answer's points and quote the supporting text.",
    },
}
_SHAPE = {
    "quote": '{"question": "…", "answer_points": ["…"], "quote": "…"}',
    "quotes": '{"question": "…", "answer_points": ["…"], "quotes": ["…", "…"]}',
    "question": '{"question": "…"}',
}
_LABELS = {
    "zh": {"material": "材料", "question": "问题", "gold": "原文", "shape": "输出格式", "hint": "要求"},
    "en": {
        "material": "Material",
        "question": "Question",
        "gold": "Quoted text",
        "shape": "Reply format",
        "hint": "Also",
    },
}


def reply_shape(recipe: str) -> str:
    if recipe == "cross-topic":
        return "quotes"
    return "question" if recipe in ("colloquial", "negative") else "quote"


def reply_schema(recipe: str) -> dict[str, Any]:
    """The JSON Schema of a recipe's reply (strict: every key required, no other key)."""
    text, texts = {"type": "string"}, {"type": "array", "items": {"type": "string"}}
    props: dict[str, Any] = {"question": text}
    shape = reply_shape(recipe)
    if shape != "question":
        props["answer_points"] = texts
        props[shape] = text if shape == "quote" else {**texts, "minItems": 2, "maxItems": 2}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def response_format(recipe: str, mode: str) -> dict[str, Any] | None:
    """The ``response_format`` of a call in ``mode`` (``FORMAT_MODES``, best first, as the judge's)."""
    if mode == "json_schema":
        name = "rag_draft_" + re.sub(r"\W", "_", recipe)
        return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": reply_schema(recipe)}}
    if mode == "json_object":  # llama.cpp-style servers decode under the schema's grammar
        return {"type": "json_object", "schema": reply_schema(recipe)}
    return None


@dataclass(frozen=True)
class PromptInput:
    """What a recipe shows the model: passages' texts, an existing question and its quote, hints."""

    passages: Sequence[str] = ()
    question: str = ""
    quote: str = ""
    hints: Mapping[str, str] | None = None  # tag -> value the draft should have (--fill-gaps)


def messages(recipe: str, lang: str, given: PromptInput) -> list[dict[str, str]]:
    """The chat messages of one drafting call."""
    lab = _LABELS[lang]
    parts = [TASKS[lang][recipe]]
    if given.question:
        parts.append(f"{lab['question']}：{given.question}" if lang == "zh" else f"{lab['question']}: {given.question}")
    if given.quote:
        parts.append(f"{lab['gold']}：{given.quote}" if lang == "zh" else f"{lab['gold']}: {given.quote}")
    for n, text in enumerate(given.passages, 1):
        title = lab["material"] + (f" {n}" if len(given.passages) > 1 else "")
        parts.append(f"<<<{title}\n{text}\n>>>")
    if given.hints:
        parts.append(f"{lab['hint']}: " + ", ".join(f"{k}={v}" for k, v in sorted(given.hints.items())))
    if reply_shape(recipe) != "question":
        parts.append(_QUOTE_RULE[lang])
    parts.append(f"{lab['shape']}: {_SHAPE[reply_shape(recipe)]}")
    return [{"role": "system", "content": _SYSTEM[lang]}, {"role": "user", "content": "\n\n".join(parts)}]


@dataclass(frozen=True)
class ParsedReply:
    question: str
    answer_points: tuple[str, ...]
    quotes: tuple[str, ...]


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_reply(recipe: str, content: str) -> ParsedReply | str:
    """The reply's fields, or why it cannot be read (a sentence)."""
    match = _OBJECT.search(content)
    if match is None:
        return "no JSON object in the reply"
    try:
        raw: Any = json.loads(match.group(0))
    except (json.JSONDecodeError, RecursionError):
        return "the reply's JSON object does not parse"
    if not isinstance(raw, dict):
        return "the reply is not a JSON object"
    question = raw.get("question")
    if not isinstance(question, str) or not question.strip():
        return "the reply has no 'question'"
    points = raw.get("answer_points", [])
    if isinstance(points, str):
        points = [points]
    if not isinstance(points, list) or not all(isinstance(p, str) for p in points):
        return "'answer_points' is not a list of strings"
    shape = reply_shape(recipe)
    quotes: list[Any] = []
    if shape == "quote":
        quotes = [raw.get("quote")]
    elif shape == "quotes":
        quotes = raw["quotes"] if isinstance(raw.get("quotes"), list) else [None]
        if len(quotes) != 2:
            return "'quotes' must hold two quotes, one per passage"
    if not all(isinstance(q, str) and q.strip() for q in quotes):
        return f"the reply has no {shape!r}"
    return ParsedReply(question.strip(), tuple(p.strip() for p in points if p.strip()), tuple(quotes))


def accepts(recipe: str) -> Any:
    """The client's ``accept`` check for a recipe: a reply that does not parse comes back
    marked ``rejected`` at once (never asked again identically: rag_eval.llm.client) and
    is never cached."""

    def check(content: str) -> str | None:
        parsed = parse_reply(recipe, content)
        return parsed if isinstance(parsed, str) else None

    return check
