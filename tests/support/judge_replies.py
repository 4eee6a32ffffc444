"""A scripted judge: answers the native judge's prompt with a valid verdict.

It reads the request like a judge would (the answer's [n] markers, the numbered key
facts, whether a reference was given, how many chunks the context has) so that the
reply passes validation; every claim gets the verdict ``claim_verdict``, and every
supported claim and key fact rests on chunk [1].
"""

from __future__ import annotations

import json
import re
from typing import Any

from rag_eval.judge.schema import answer_markers
from tests.support.openai_server import Reply, reply

_BLOCK = re.compile(r"<<<(?P<name>[A-Z ]+)>>>\n(?P<body>.*?)\n<<<END (?P=name)>>>", re.S)


def blocks(request: Any) -> dict[str, str]:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(user)}


def context_size(request: Any) -> int:
    """How many numbered chunks the CONTEXT block holds (``[n] label`` header lines)."""
    return sum(1 for line in blocks(request).get("CONTEXT", "").splitlines() if re.match(r"\[\d+\] ", line))


def native_verdict(request: Any, claim_verdict: str = "yes") -> dict[str, Any]:
    b = blocks(request)
    facts = [line for line in b.get("KEY FACTS", "").splitlines() if re.match(r"\[\d+\] ", line)]
    first = [1] if context_size(request) else []  # the chunk every claim and fact rests on
    verdict: dict[str, Any] = {
        "claims": [
            {
                "claim": "first claim of the answer",
                "verdict": claim_verdict,
                "chunks": first if claim_verdict == "yes" else [],
                "reference": "yes",
                "reason": "stated in [1]",
            },
            {
                "claim": "second claim of the answer",
                "verdict": "yes",
                "chunks": first,
                "reference": "yes",
                "reason": "stated in [1]",
            },
        ],
        "key_facts": [
            {
                "index": i,
                "fact": f.split("] ", 1)[1],
                "verdict": "covered",
                "context": "yes" if first else "no",
                "chunks": first,
                "reason": "in the answer",
            }
            for i, f in enumerate(facts, 1)
        ],
        "relevance": {"verdict": "relevant", "reason": "answers the question"},
        "citations": [
            {"marker": n, "sentence": "a sentence", "supported": True, "reason": "chunk says so"}
            for n in answer_markers(b.get("ANSWER", ""))
        ],
    }
    if "REFERENCE" in b:
        verdict["correctness"] = {"tp": ["a claim in both"], "fp": [], "fn": []}
    return verdict


def native_judge_reply(request: Any) -> Reply:
    return reply(json.dumps(native_verdict(request), ensure_ascii=False), prompt_tokens=800, completion_tokens=200)
