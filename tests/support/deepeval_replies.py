"""A scripted judge for the deepeval engine: answers each deepeval prompt from SCRIPT.

Shared by ``tests/rag_eval/test_judge_deepeval.py`` (scores follow from the scripted
verdicts by arithmetic) and ``bench/judge_cost.py`` (calls and tokens per case).

The server-side responder recognises each deepeval 4.3.1 prompt template by its opening
words (templates under ``deepeval/metrics/*/templates``). The replies do not depend on
the case: 3 claims get 3 verdicts, 4 statements get 4 verdicts, so verdict counts always
match what deepeval asked for and any case can be judged with the same script.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any

from tests.support.openai_server import Reply

# (opening words of the deepeval prompt, prompt kind, JSON reply)
SCRIPT: list[tuple[str, str, dict[str, Any]]] = [
    (
        "Based on the given text, please generate a comprehensive list of",
        "faith.truths",
        {"truths": ["二次函数的顶点式是 y=a(x-h)^2+k", "顶点坐标为 (h, k)"]},
    ),
    (
        "Based on the given text, please extract a comprehensive list of",
        "faith.claims",
        {"claims": ["顶点式是 y=a(x-h)^2+k", "顶点是 (h, k)", "a 决定开口宽度与方向，且 a 必须为正"]},
    ),
    (
        "Based on the given claims",
        "faith.verdicts",
        {
            "verdicts": [
                {"verdict": "yes", "reason": None},
                {"verdict": "yes", "reason": None},
                {"verdict": "no", "reason": "上下文没有说 a 必须为正"},
            ]
        },
    ),
    ("Below is a list of Contradictions", "faith.reason", {"reason": "The score is 0.67 because of claim 3."}),
    (
        "Given the text, breakdown and generate a list of statements",
        "ar.statements",
        {"statements": ["顶点式是 y=a(x-h)^2+k", "顶点是 (h, k)", "抛物线是轴对称图形", "今天天气很好"]},
    ),
    (
        "For the provided list of statements",
        "ar.verdicts",
        {
            "verdicts": [
                {"verdict": "yes"},
                {"verdict": "yes"},
                {"verdict": "borderline", "reason": "背景"},
                {"verdict": "no", "reason": "与问题无关"},
            ]
        },
    ),
    ("Given the answer relevancy score", "ar.reason", {"reason": "The score is 0.75 because of the weather."}),
    (
        "Given the input, expected output, and retrieval context",
        "cp.verdicts",
        {
            "verdicts": [
                {"verdict": "no", "reason": "无关"},
                {"verdict": "yes", "reason": "顶点式"},
                {"verdict": "yes", "reason": "顶点"},
            ]
        },
    ),
    (
        "Given the input, retrieval contexts, and contextual precision score",
        "cp.reason",
        {"reason": "The score is 0.58 because node 1 is irrelevant."},
    ),
    (
        "For EACH sentence in the given expected output",
        "cr.verdicts",
        {"verdicts": [{"verdict": "yes", "reason": "node 2"}, {"verdict": "no", "reason": "missing"}]},
    ),
    (
        "Given the original expected output, a list of supportive reasons",
        "cr.reason",
        {"reason": "The score is 0.50 because sentence 2 is missing."},
    ),
    ("Given an evaluation criteria", "geval.steps", {"steps": ["Check the formula.", "Check citations."]}),
    ("You are an evaluator.", "geval.result", {"score": 7, "reason": "Mostly right."}),
]

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")


def estimate_tokens(text: str) -> int:
    """Rough BPE token count: 1 per CJK character (or CJK punctuation), 1 per 4 other chars.

    Why not the scripted server's default (whitespace words): Chinese has no spaces, so a
    2,000-character Chinese prompt would count as a handful of "words" and token costs
    would not follow prompt size. This estimate is close to what cl100k/o200k tokenizers
    report for mixed Chinese/English/LaTeX text (Chinese ~0.7-1.2 tokens per character,
    English ~4 characters per token) and is the same for every engine, which is what a
    side-by-side comparison needs.
    """
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4


def request_prompt_tokens(req: dict[str, Any]) -> int:
    """Estimated prompt tokens of a chat request: every message plus any response_format.

    A JSON schema sent as ``response_format`` is billed as prompt by OpenAI, so it counts.
    """
    text = "".join(str(m.get("content", "")) for m in req.get("messages", []) if isinstance(m, dict))
    if req.get("response_format") is not None:
        text += json.dumps(req["response_format"], ensure_ascii=False)
    return estimate_tokens(text)


class Responder:
    """Answers each deepeval prompt from SCRIPT and counts the prompt kinds it saw.

    ``realistic_tokens=True`` reports usage from :func:`estimate_tokens` (prompt size
    matters: the bench compares engines by tokens); otherwise the server's default
    word-count usage is kept.

    ``tag_reasons=True`` appends a short digest of the prompt to every extracted item
    (truths, claims, statements) and every non-null reason. deepeval's follow-up prompts
    quote only those (e.g. the faithfulness verdict prompt holds truths and claims, not
    the context; the "reason" prompts hold verdict reasons and the score), so with
    case-independent replies they would repeat across cases and a response cache would
    answer them -- fewer calls than a real judge, whose extractions differ per case.
    Tagging keeps every case's prompts distinct, as they are in real use; item counts
    (and so verdict counts and scores) are unchanged.
    """

    def __init__(self, wrap: str = "{}", *, realistic_tokens: bool = False, tag_reasons: bool = False) -> None:
        self.seen: Counter[str] = Counter()
        self.wrap = wrap  # e.g. "Sure!\n```json\n{}\n```" to test tolerant parsing
        self.realistic_tokens = realistic_tokens
        self.tag_reasons = tag_reasons

    def __call__(self, req: dict[str, Any]) -> Reply:
        prompt = req["messages"][0]["content"]
        for opening, kind, body in SCRIPT:
            if prompt.lstrip().startswith(opening):
                self.seen[kind] += 1
                if self.tag_reasons:
                    body = _tag_reasons(body, hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:8])
                content = self.wrap.replace("{}", json.dumps(body, ensure_ascii=False))
                if not self.realistic_tokens:
                    return Reply(content)
                return Reply(
                    content, prompt_tokens=request_prompt_tokens(req), completion_tokens=estimate_tokens(content)
                )
        raise AssertionError(f"unscripted deepeval prompt: {prompt[:120]!r}")


_TAGGED_LISTS = frozenset({"truths", "claims", "statements"})


def _tag_reasons(body: Any, tag: str) -> Any:
    """A copy of ``body`` with `` (#tag)`` appended to reasons and extracted items."""
    if isinstance(body, dict):
        out: dict[str, Any] = {}
        for k, v in body.items():
            if k == "reason" and isinstance(v, str):
                out[k] = f"{v} (#{tag})"
            elif k in _TAGGED_LISTS and isinstance(v, list):
                out[k] = [f"{x} (#{tag})" if isinstance(x, str) else x for x in v]
            else:
                out[k] = _tag_reasons(v, tag)
        return out
    if isinstance(body, list):
        return [_tag_reasons(v, tag) for v in body]
    return body
