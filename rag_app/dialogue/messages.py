"""What the tutor says, in Chinese and English: tags, clarifying questions, limits.

Every tutor message starts with a tag naming its kind (``【需要确认】``, ``【知识提醒】`` ...).
The tags are for the student (what kind of reply this is) and let the policy read its
own earlier turns back from the conversation, so the HTTP API and the CLI stay
stateless: which conditions a clarifying turn asked for is found by the phrases below,
which only the tutor's own questions contain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rag_app.dialogue.conditions import ConditionAsk
from rag_app.dialogue.cues import Language
from rag_app.generation.hints import LEVEL_TAGS

TAGS: dict[str, dict[str, str]] = {
    "clarify": {"zh": "【需要确认】", "en": "[Need to check] "},
    "state_limits": {"zh": "【资料不足】", "en": "[Beyond my material] "},
    **LEVEL_TAGS,
}

#: Per slot: a phrase only the tutor's question for it contains (how earlier turns are read
#: back), then how a "still missing" list names it -- Chinese and English.
SLOTS: dict[str, dict[str, tuple[str, str]]] = {
    "book": {"zh": ("哪一册", "哪一册"), "en": ("which book", "the book")},
    "problem": {"zh": ("哪一道题", "哪一道题"), "en": ("which problem", "which problem")},
    "part": {"zh": ("第几问", "第几问"), "en": ("which part", "which part")},
    "goal": {"zh": ("要求什么", "题目要求什么"), "en": ("what does the problem ask", "what the problem asks")},
    "old_problem": {"zh": ("上次那道题的题目", "上次那道题"), "en": ("the earlier problem", "the earlier problem")},
    "interval": {"zh": ("给的区间", "区间"), "en": ("which interval", "the interval")},
    "range": {"zh": ("的取值范围", "取值范围"), "en": ("range of", "the range of the variable")},
    "point": {"zh": ("哪个点", "点的坐标"), "en": ("which point", "the point")},
    "angle": {"zh": ("还给了哪个角", "角的大小"), "en": ("which angle", "the angle")},
    "probability": {"zh": ("分别是多少", "各事件的概率"), "en": ("probabilities are given", "the probabilities")},
}


def tag(kind: str, lang: Language) -> str:
    return TAGS[kind][lang]


def read_tag(message: str) -> str | None:
    """The kind of an earlier tutor message (``clarify``, ``reminder`` ...), by its tag."""
    head = message.lstrip()
    for kind, by_lang in TAGS.items():
        if any(head.startswith(t.strip()) for t in by_lang.values()):
            return kind
    return None


def read_slots(message: str) -> tuple[str, ...]:
    """The slots an earlier clarifying message asked for."""
    low = message.lower()
    return tuple(slot for slot, by_lang in SLOTS.items() if any(marker in low for marker, _ in by_lang.values()))


def _condition_question(ask: ConditionAsk, lang: Language) -> str:
    if lang == "en":
        return {
            "interval": "On which interval is x taken (which interval does the problem give)?",
            "range": (
                f"What is the range of {ask.detail or 'x'} the problem gives "
                f"(a condition like {ask.detail or 'x'}>...)?"
            ),
            "point": "At which point (or through which point) is the tangent taken?",
            "angle": (
                "Does the problem give another angle, and which angle is it"
                + (f" (is angle {ask.detail} given)" if ask.detail else "")
                + "?"
            ),
            "probability": "Which probabilities are given for each event?",
        }[ask.kind]
    return {
        "interval": "题目给的区间是什么（x 在哪个范围内取值）？",
        "range": f"题目里 {ask.detail or 'x'} 的取值范围是什么（比如 {ask.detail or 'x'}>… 这样的条件）？",
        "point": "题目说的是哪个点（在这个点处，还是过这个点）？",
        "angle": f"题目还给了哪个角吗？比如角 {ask.detail} 是多少？"
        if ask.detail
        else "题目还给了哪个角吗？是多少度？",
        "probability": f"题目给的{ask.detail or '概率'}分别是多少？",
    }[ask.kind]


def clarify_message(
    slots: Sequence[str],
    lang: Language,
    *,
    conditions: Mapping[str, ConditionAsk] | None = None,
    candidates: Sequence[str] = (),
    number: int | None = None,
) -> str:
    """One clarifying turn asking for every slot in ``slots`` (and only those)."""
    conditions = conditions or {}
    parts: list[str] = []
    zh = lang == "zh"
    listed = ("、" if zh else "; ").join(candidates)
    if "book" in slots and candidates and number is not None:
        ref = f"例{number}" if zh else f"Example {number}"
        parts.append(
            f"{ref} 在好几册里都有：{listed}。你说的是哪一册的？"
            if zh
            else f"{ref} appears in several books: {listed}. Which book is yours?"
        )
    elif "book" in slots and "problem" in slots:
        parts.append(
            "这道题是哪一册、哪一道题（例几）？"
            if zh
            else "Which book is it from, and which problem (the example number)?"
        )
    elif "book" in slots:
        parts.append("这道题是哪一册里的？" if zh else "Which book is it from?")
    elif "problem" in slots:
        parts.append("你说的是哪一道题（例几）？" if zh else "Which problem is it (the example number)?")
    if "problem" in slots and candidates:
        parts.append(
            f"资料里相近的有：{listed}，还是别的题？"
            if zh
            else f"Close ones in the material: {listed} -- or another one?"
        )
    if "part" in slots:
        parts.append(
            "这道题有好几问，你问的是第几问？"
            if lang == "zh"
            else "The problem has several parts: which part do you mean?"
        )
    if "goal" in slots:
        parts.append(
            "那这道题要求什么？是求值、求和、求通项，还是证明？"
            if lang == "zh"
            else "Then what does the problem ask for: a value, a sum, a formula, or a proof?"
        )
    if "old_problem" in slots:
        parts.append(
            "上次那道题的题目是什么？把它发给我，我才能比较两道题。"
            if lang == "zh"
            else "What was the earlier problem? Send it to me so I can compare the two."
        )
    for slot in slots:
        if slot in conditions:
            parts.append(_condition_question(conditions[slot], lang))
    return tag("clarify", lang) + " ".join(parts)


def limits_message(missing: Sequence[str], lang: Language, *, still_missing: bool = False) -> str:
    """State the limits: what the material lacks, or what is still missing after the rounds."""
    if still_missing:
        listed = "、".join(missing) if lang == "zh" else ", ".join(missing)
        return tag("state_limits", lang) + (
            f"问了几轮，还缺：{listed}。没有这些我没法针对你的题目讲解；找到原题后再来问我，或者先请老师确认。"
            if lang == "zh"
            else f"After several questions I still do not have: {listed}. "
            "Without it I cannot guide you on this problem; "
            "come back with the problem, or check with your teacher."
        )
    terms = [t for t in missing if t][:4]
    if lang == "zh":
        what = f"资料里没有讲到「{'、'.join(terms)}」相关的内容" if terms else "资料里没有找到相关内容"
        return (
            tag("state_limits", lang)
            + f"{what}，我只能根据现有资料讲解，没法回答这个问题。可以换一个资料里有的知识点，或者请老师帮忙。"
        )
    what = f"The material does not cover {', '.join(terms)}" if terms else "No relevant material was found"
    return (
        tag("state_limits", lang) + f"{what}; I can only teach from the material, so I cannot answer this. "
        "Ask about a topic the material covers, or ask your teacher."
    )


def slot_name(slot: str, lang: Language) -> str:
    return SLOTS[slot][lang][1] if slot in SLOTS else slot
