"""What the student's wording says: language, intent, and the cues the policy acts on.

Every rule is a short list of words a student types, in Chinese and English, matched
case- and width-insensitively; none is tied to one problem. The lists are the policy's
documented vocabulary (docs/rag_app.md, "Dialogue"):

* **intent** -- ``compare_problems``: this problem and an earlier one are both referred to
  ("这道…上次那道", "this problem … the previous one"); ``solve_problem``: the learning
  context names a problem, or the message refers to a specific problem (这道题, 例13,
  "homework problem") or states one (``y=…``, ``f(x)=…``); else ``concept``.
* **don't know** -- the student cannot give what was asked ("我不记得了", "I forgot").
* **attempt** -- the student reports a result or asks whether it is right: the hint goes
  to the wrong-direction layer.
* **method** -- the student asks how to start or which way to go: the approach layer.
* **answer demand** -- the student asks for the full answer: the tutor says it will not
  hand it over and goes one layer deeper instead.
* **filler** -- conversational words that say nothing about the topic ("我不会", "给点提示");
  they are left out of the retrieval query, and so are the don't-know phrases.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Literal

Intent = Literal["concept", "solve_problem", "compare_problems"]
Language = Literal["zh", "en"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")

EARLIER = (
    "上次",
    "上回",
    "之前那",
    "之前的那",
    "以前那",
    "上一道",
    "上一题",
    "原来那道",
    "上节课那",
    "previous",
    "earlier",
    "last time",
    "the other problem",
    "the last one",
)
THIS = ("这道", "这题", "这个", "这一题", "本题", "this problem", "this one", "this question")
PROBLEM_REFERENCE = ("这道", "那道", "这题", "那题", "一道", "有道", "道题", "本题", "原题", "例题", "作业", "练习")
#: "a homework problem", "this exercise", "the triangle problem from class": one problem of the
#: student's; "all problems solved in log space" (a plural, no determiner) is none.
_EN_REFERENCE = re.compile(
    r"\b(?:this|that|a|the|my|one|our)\s+(?:[a-z-]+\s+){0,2}(?:problem|exercise|homework)\b(?!s)|\bhomework\b"
)
_EXAMPLE_REF = re.compile(r"例\s*\d+|第\s*\d+\s*题|\b(?:example|exercise|problem)\s+\d+", re.IGNORECASE)
#: A stated problem: a function, curve or sequence is defined (``y=…``, ``f(x)=…``, ``a_n=…``).
_STATED = re.compile(r"(?<![a-zA-Z])(?:[yz]|[fgh]\s*\(\s*x\s*\)|[a-zA-Z]_\{?n\}?)\s*=\s*\S", re.IGNORECASE)

DONT_KNOW = (
    "不记得",
    "想不起",
    "不知道",
    "忘了",
    "忘记",
    "记不清",
    "没记住",
    "记不得",
    "不清楚",
    "没记全",
    "忘抄",
    "don't remember",
    "do not remember",
    "can't remember",
    "cannot remember",
    "forgot",
    "forget",
    "don't know",
    "do not know",
    "no idea",
    "not sure",
)
ATTEMPT = (
    "我算出",
    "我算的",
    "算出来是",
    "我解出",
    "我求出",
    "我得到",
    "我得出",
    "我做出",
    "结果不对",
    "算错",
    "哪里错",
    "错在哪",
    "对吗",
    "对不对",
    "这样对",
    "都要吗",
    "就结束了",
    "i got",
    "is it right",
    "is this right",
    "am i right",
    "where did i go wrong",
    "what did i do wrong",
)
METHOD = (
    "思路",
    "下手",
    "从哪",
    "入手",
    "步骤",
    "哪几步",
    "怎么分",
    "第一步",
    "能直接用",
    "能不能用",
    "可以用",
    "用什么方法",
    "how to set up",
    "how do i start",
    "where do i start",
    "approach",
    "what steps",
    "which method",
)
ANSWER_DEMAND = (
    "答案",
    "完整过程",
    "最后结果",
    "直接告诉",
    "直接给",
    "直接把",
    "算出来给我",
    "抄作业",
    "发我",
    "给我算",
    "full answer",
    "final answer",
    "just give",
    "the answer",
    "whole solution",
    "full solution",
)
FILLER = (
    "我还是不懂",
    "还是不懂",
    "我不懂",
    "不懂",
    "我不会",
    "不会做",
    "不会",
    "我做不出来",
    "做不出来",
    "看了半天",
    "没思路",
    "先给点提示",
    "给点提示",
    "给我讲讲",
    "讲讲",
    "帮我看",
    "帮我",
    "想问问",
    "问问",
    "我不知道",
    "不知道",
    "从哪下手",
    "怎么下手",
    "怎么做",
    "老师讲的",
    "老师留的",
    "老师",
    "黑板上",
    "上次",
    "上回",
    "之前那道",
    "那道题",
    "这道题",
    "有道题",
    "一道题",
    "那道",
    "这道",
    "那题",
    "这题",
    "一道",
    "有道",
    "题目",
    "我",
    "你",
    "吧",
    "啊",
    "呢",
    "吗",
    "i'm stuck on",
    "i am stuck on",
    "stuck",
    "please",
    "can you",
    "help me with",
)


def fold(text: str) -> str:
    """NFKC, lower case, whitespace squeezed: the form every cue is matched in."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().lower()


def has_any(text: str, cues: Iterable[str]) -> bool:
    folded = fold(text)
    squashed = folded.replace(" ", "")
    return any((c in folded) if " " in c or c.isascii() else (c in squashed) for c in cues)


def language(text: str) -> Language:
    """``zh`` when the text has a Chinese character, else ``en``."""
    return "zh" if _CJK.search(text) else "en"


def refers_to_example(text: str) -> bool:
    return _EXAMPLE_REF.search(fold(text)) is not None


def states_problem(text: str) -> bool:
    """The text defines the object a problem is about (``y=x^2``, ``f(x)=…``, ``a_n=…``)."""
    return _STATED.search(unicodedata.normalize("NFKC", text).replace("$", "")) is not None


def intent_of(opening: str, problem: str = "") -> Intent:
    """The intent of a conversation, from its opening message and the context's problem."""
    if has_any(opening, EARLIER) and (has_any(opening, THIS) or bool(problem)):
        return "compare_problems"
    if (
        problem
        or has_any(opening, PROBLEM_REFERENCE)
        or _EN_REFERENCE.search(fold(opening)) is not None
        or refers_to_example(opening)
        or states_problem(opening)
    ):
        return "solve_problem"
    return "concept"


def topic_text(text: str) -> str:
    """``text`` without the conversational filler and "I forgot" phrases (longest first).

    Nothing to remove: ``text`` itself, unchanged -- a plain question is retrieved exactly
    as ``chat()`` retrieves it (e5 embeddings move with punctuation, "?" included)."""
    out = text
    for phrase in sorted(FILLER + DONT_KNOW, key=len, reverse=True):
        out = re.sub(re.escape(phrase), " ", out, flags=re.IGNORECASE)
    if out == text:
        return text
    out = re.sub(r"\s+", " ", out).strip()
    return "" if not re.search(r"\w", out) else out.lstrip("，,。.；;！!、 ").rstrip("，,；;、 ")
