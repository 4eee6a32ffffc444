"""Layered hints from the material, offline: knowledge reminder -> approach -> wrong direction.

The material's sentences are sorted into three pools, each cited with the ``[n]`` of its
chunk (numbering of :func:`~rag_app.generation.sources.numbered_chunks`, like every
other answer of the pipeline):

* ``reminder`` -- explanatory sentences (not a worked example's statement or solution):
  the definition, formula or rule the question is about;
* ``approach`` -- explanatory sentences that describe a way to proceed (关键, 先…再,
  步骤, 方法, 转化, "first", "step"), plus the opening clause of the target example's
  solution when it sets something up without computing ("设售价为 x 元");
* ``wrong_direction`` -- sentences that warn (注意, 易错, 漏, 不要, 检验, 而不是, "careful",
  "mistake"), from explanations and from worked solutions alike.

In each pool the sentences are ranked by the idf-weighted key terms of the query they
contain (idf over the pool), divided by ``1 + 0.5 k`` for the k-th chunk of the material
(the retrieval's order: the target's section first), and the best one or two are kept,
in material order.
An empty pool falls back to the deeper layers, and only then to the shallower ones (a
hint never goes back a layer while a deeper one has material); the hint says which layer
it really is. When the policy knows the target problem, its section is searched before
the rest of the material, for the deeper layers and again for the shallower ones.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag_app.generation.extractive import split_sentences
from rag_app.generation.sources import mask_math, numbered_chunks
from rag_app.types import HINT_LEVELS, Chunk

Tokenizer = Callable[[str], list[str]]
CHUNK_DECAY = 0.5  # a sentence of the k-th chunk (0-based) scores 1 / (1 + 0.5 k) of its overlap

_EXAMPLE_HEADING = re.compile(r"^#{2,6}\s*例\s*\d+[^\n]*$", re.MULTILINE)
_ANY_HEADING = re.compile(r"^#{1,6}\s[^\n]*$", re.MULTILINE)
_SOLUTION_START = re.compile(r"(?:^|(?<=[。．.！？\s]))(?:解|证明|答)\s*[:：]")
_CJK = re.compile(r"[\u3400-\u9fff]")
_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.MULTILINE | re.DOTALL)

METHOD_WORDS: tuple[str, ...] = (
    "关键",
    "先",
    "再",
    "然后",
    "步骤",
    "思路",
    "方法",
    "转化",
    "化为",
    "化成",
    "利用",
    "设",
    "只需",
    "只要",
    "第一步",
    "分类",
    "讨论",
    "分情况",
    "做法",
    "技巧",
    "常用",
    "适合",
    "法",
    "first",
    "then",
    "step",
    "method",
    "approach",
    "key",
)
CAUTION_WORDS: tuple[str, ...] = (
    "注意",
    "易错",
    "错误",
    "出错",
    "错",
    "漏",
    "陷阱",
    "不要",
    "不能",
    "别",
    "舍去",
    "检验",
    "失分",
    "一定要",
    "容易",
    "典型",
    "混淆",
    "分清",
    "千万",
    "而不是",
    "必须",
    "区别",
    "careful",
    "mistake",
    "error",
    "do not",
    "don't",
    "must",
    "never",
)


@dataclass(frozen=True)
class MaterialSentence:
    """One sentence of the material with its citation number and where it came from."""

    n: int
    text: str
    kind: str  # "explanation", "statement" or "solution"
    position: tuple[int, int]  # (chunk order, sentence order)


@dataclass(frozen=True)
class Hint:
    """A hint at ``level``: the sentences it quotes (each with its ``[n]``) and the final text."""

    level: str
    sentences: tuple[MaterialSentence, ...]
    text: str


def material_sentences(context: Sequence[Chunk]) -> list[MaterialSentence]:
    """Every sentence of the context, labelled explanation / example statement / solution."""
    out: list[MaterialSentence] = []
    for pos, (n, chunk) in enumerate(numbered_chunks(context)):
        for kind, block in _blocks(chunk.text):
            for sentence in split_sentences(block):
                out.append(MaterialSentence(n, sentence, kind, (pos, len(out))))
    return out


def _blocks(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pieces: worked-example blocks split into statement and solution; fenced
    code is left out (a line of a program is no hint)."""
    text = _FENCE.sub("\n", text)
    pieces: list[tuple[str, str]] = []
    pos = 0
    for m in _EXAMPLE_HEADING.finditer(text):
        pieces.append(("explanation", text[pos : m.start()]))
        nxt = _ANY_HEADING.search(text, m.end())
        end = nxt.start() if nxt else len(text)
        body = text[m.end() : end]
        sol = _SOLUTION_START.search(body)
        if sol:
            pieces.append(("statement", body[: sol.start()]))
            pieces.append(("solution", body[sol.start() :]))
        else:
            pieces.append(("statement", body))
        pos = end
    pieces.append(("explanation", text[pos:]))
    return [(k, t) for k, t in pieces if t.strip()]


def _has(text: str, words: Sequence[str]) -> bool:
    low = mask_math(unicodedata.normalize("NFKC", text)).lower()
    return any(w in low for w in words)


def pools(sentences: Sequence[MaterialSentence]) -> dict[str, list[MaterialSentence]]:
    """The three layers' candidate sentences (see the module docstring)."""
    explanation = [s for s in sentences if s.kind == "explanation"]
    return {
        "reminder": [s for s in explanation if not _has(s.text, CAUTION_WORDS)] or explanation,
        "approach": [s for s in explanation if _has(s.text, METHOD_WORDS)],
        "wrong_direction": [s for s in sentences if s.kind != "statement" and _has(s.text, CAUTION_WORDS)],
    }


def rank(
    pool: Sequence[MaterialSentence], terms: Sequence[str], tokenize: Tokenizer, keep: int = 2
) -> list[MaterialSentence]:
    """The best ``keep`` sentences of a pool for the query terms, back in material order.

    Score: the idf-weighted key terms a sentence contains (a Chinese term also counts as a
    substring: jieba may cut a textbook sentence differently); the second sentence is kept
    only at >= 30 % of the best score. Nothing in common: the pool's first sentence of the
    best-ranked chunk (the material was retrieved for this query).
    """
    if not pool:
        return []
    token_sets = [set(tokenize(s.text)) for s in pool]
    squashed = ["".join(unicodedata.normalize("NFKC", s.text).lower().split()) for s in pool]

    def contains(i: int, term: str) -> bool:
        return term in token_sets[i] or (_CJK.search(term) is not None and term in squashed[i])

    df = {t: sum(contains(i, t) for i in range(len(pool))) for t in terms}
    idf = {t: math.log(1.0 + len(pool) / df[t]) for t in terms if df[t]}
    # earlier chunks rank higher in the retrieval (the target's section comes first)
    scores = [
        sum(w for t, w in idf.items() if contains(i, t)) / (1 + CHUNK_DECAY * pool[i].position[0])
        for i in range(len(pool))
    ]
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], pool[i].position))
    if scores[order[0]] <= 0:
        return [min(pool, key=lambda s: s.position)]
    best = scores[order[0]]
    chosen = [pool[i] for i in order[:keep] if scores[i] > 0 and scores[i] >= 0.3 * best]
    return sorted(chosen, key=lambda s: s.position)


def setup_clause(solution: str) -> str | None:
    """The opening clause of a worked solution when it only sets something up ("设售价为 $x$ 元"),
    not when it already computes (contains ``=``)."""
    body = _SOLUTION_START.sub("", solution, count=1).strip()
    clause = re.split(r"[，,；;。]", body, maxsplit=1)[0].strip()
    if len(clause) < 3 or "=" in clause or not clause.startswith(("设", "令", "let", "Let")):
        return None
    return clause


def compose(
    level: str,
    sentences: Sequence[MaterialSentence],
    terms: Sequence[str],
    tokenize: Tokenizer,
    lang: str,
    *,
    setup: str | None = None,
    demand: bool = False,
    allowed: Callable[[str], bool] = lambda text: True,
    focus: int | None = None,
) -> Hint | None:
    """The hint at ``level`` or deeper (shallower layers only when no deeper one has material),
    quoting only sentences ``allowed`` accepts. With ``focus``, the chunk cited ``[focus]``
    (the target problem's section) is searched before the whole material. None: no usable
    sentence anywhere."""
    usable = [s for s in sentences if allowed(s.text)]
    i = HINT_LEVELS.index(level)
    deeper, shallower = list(HINT_LEVELS[i:]), list(reversed(HINT_LEVELS[:i]))
    scopes = [[s for s in usable if s.n == focus], usable] if focus is not None else [usable]
    # the target's section first; never a shallower layer while a deeper one exists anywhere
    for levels in (deeper, shallower):
        for scope in scopes:
            for candidate in levels:
                step = setup if candidate == "approach" and setup and allowed(setup) else None
                chosen = rank(pools(scope)[candidate], terms, tokenize)
                if chosen or step:
                    return Hint(candidate, tuple(chosen), render(candidate, chosen, lang, setup=step, demand=demand))
    return None


_NUDGE = {
    "reminder": {"zh": "先想一想这条知识怎样用到你的题目上。", "en": "Think about how this applies to your problem."},
    "approach": {
        "zh": "按这个思路自己先做一做，卡在哪一步再告诉我。",
        "en": "Try these steps yourself and tell me where you get stuck.",
    },
    "wrong_direction": {
        "zh": "对照一下你的做法，看看是不是在这里出了问题。",
        "en": "Check your work against this point.",
    },
}
_LEAD = {
    "reminder": {"zh": "先回忆一下：", "en": "First recall: "},
    "approach": {"zh": "思路：", "en": "A way in: "},
    "wrong_direction": {"zh": "容易出错的地方：", "en": "Where it often goes wrong: "},
}
DEMAND_LEAD = {
    "zh": "完整答案我不能直接给你，但可以再提示一步。",
    "en": "I won't hand over the full answer, but here is one more hint. ",
}
#: The tag each hint starts with (rag_app/dialogue/messages.py reads earlier turns back by it).
LEVEL_TAGS: dict[str, dict[str, str]] = {
    "reminder": {"zh": "【知识提醒】", "en": "[Reminder]"},
    "approach": {"zh": "【思路提示】", "en": "[Approach]"},
    "wrong_direction": {"zh": "【易错提醒】", "en": "[Watch out]"},
}


def render(
    level: str, chosen: Sequence[MaterialSentence], lang: str, *, setup: str | None = None, demand: bool = False
) -> str:
    """Tag, optional refusal to hand over the answer, the quoted sentences with ``[n]``, a nudge."""
    lang = "zh" if lang == "zh" else "en"
    quoted = " ".join(f"{s.text} [{s.n}]" for s in chosen)
    step = ""
    if setup:
        step = f"第一步可以这样开始：{setup}……" if lang == "zh" else f"You can start like this: {setup} ..."
    body = " ".join(p for p in (quoted, step) if p)
    lead = DEMAND_LEAD[lang] if demand else ""
    space = "" if lang == "zh" else " "
    return f"{LEVEL_TAGS[level][lang]}{space}{lead}{_LEAD[level][lang]}{body} {_NUDGE[level][lang]}"
