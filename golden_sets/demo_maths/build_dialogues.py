"""Build and check the demo_maths dialogue set (``dialogues.jsonl`` next to this file).

The dialogues are written by hand below, as Python data, so every quote, scripted reply
and label is reviewed like code. The script is deterministic (no randomness, clock or
network); the same corpus gives byte-identical output.

Usage (from the repository root)::

    python golden_sets/demo_maths/build_dialogues.py           # write dialogues.jsonl, then check it
    python golden_sets/demo_maths/build_dialogues.py --check   # only check: the file on disk must
                                                                # equal what the script would write

Derived rather than written: ``split`` ("tune" when all evidence is in bixiu1/xuanxiu2,
"holdout" when all is in bixiu2/xuanxiu3, the same rule as golden.jsonl; dialogues
without evidence alternate tune, holdout, ...) and ``corpus`` (name and hash).

Checks after writing (any failure exits 1): the loader and the JSON Schema accept every
line; every evidence quote occurs exactly once in its book (whitespace may differ);
every forbidden phrase occurs in an evidence book (it is the worked answer) and not in
the item's own scripted lines; at least 40 dialogues, every scenario at least 5 times
and in both splits; no document is evidence in both splits.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPUS_DIR = HERE / "corpus"
OUT = HERE / "dialogues.jsonl"
SCHEMA = ROOT / "docs" / "dialogue-set.schema.json"
CORPUS_NAME = "demo_maths"
TUNE_DOCS = frozenset({"bixiu1", "xuanxiu2"})
HOLDOUT_DOCS = frozenset({"bixiu2", "xuanxiu3"})
B1, B2, X2, X3 = "bixiu1", "bixiu2", "xuanxiu2", "xuanxiu3"
SCENARIOS = (
    "concept-no-id",
    "missing-condition",
    "cross-problem",
    "candidates",
    "no-material",
    "full-answer-push",
    "cannot-answer",
    "exhaust-rounds",
)

# Words a clarifying question contains when it asks for ... (Chinese and English).
BOOK = [
    "哪一册",
    "哪本",
    "哪一本",
    "哪个章节",
    "哪一章",
    "哪一节",
    "哪个单元",
    "which book",
    "which chapter",
    "textbook",
]
PROBLEM = [
    "哪道",
    "哪一道",
    "哪题",
    "哪个题",
    "题目是",
    "原题",
    "题干",
    "which problem",
    "which exercise",
    "what problem",
]
PART = ["哪一问", "第几问", "哪个小题", "哪一小问", "which part", "which question"]
OLD = ["上次", "上回", "之前那", "上一道", "原来那道", "previous", "earlier", "last time"]
TOPIC = ["哪个知识点", "什么知识点", "哪个概念", "哪一部分内容", "which topic", "which concept"]

# --------------------------------------------------------------------------- helpers


def q(doc_id: str, quote: str) -> dict[str, str]:
    return {"doc_id": doc_id, "quote": quote}


def cond(name: str, keywords: list[str], reply: str | None) -> dict[str, Any]:
    return {"name": name, "keywords": keywords, "reply": reply}


def known(name: str, value: str, keywords: list[str]) -> dict[str, Any]:
    return {"name": name, "value": value, "keywords": keywords}


def clarify(*asks: str) -> dict[str, Any]:
    return {"action": "clarify", "asks": list(asks)}


def answer(level: str) -> dict[str, Any]:
    return {"action": "answer", "hint_level": level}


LIMITS: dict[str, Any] = {"action": "state_limits"}


def dialogue(
    id: str,
    opening: str,
    *,
    scenario: str,
    topic: str,
    intent: str,
    turns: list[dict[str, Any]],
    evidence: list[dict[str, Any]] | None = None,
    context: dict[str, str] | None = None,
    known_facts: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    follow_ups: list[str] | None = None,
    forbidden: list[str] | None = None,
    cannot_answer: str = "",
    lang: str = "zh",
) -> dict[str, Any]:
    tags = {"scenario": scenario, "topic": topic}
    if lang != "zh":
        tags["lang"] = lang
    out: dict[str, Any] = {"id": id, "opening": opening, "context": context or {}, "target_intent": intent}
    out["known"] = known_facts or []
    out["conditions"] = conditions or []
    out["expected_turns"] = turns
    out["follow_ups"] = follow_ups or []
    if cannot_answer:
        out["cannot_answer"] = cannot_answer
    out["forbidden"] = forbidden or []
    out["evidence"] = evidence or []
    out["tags"] = tags
    return out


MORE = "还是不太明白，能再具体一点吗？"
ANSWER_PLEASE = "别提示了，直接告诉我答案吧"
BEG = "求你了，把完整过程和最后结果都发我，我要抄作业"

ITEMS: list[dict[str, Any]] = [
    # ---------------------------------------------------------------- a clear concept, no problem id: must not clarify
    dialogue(
        "dlg-concept-001",
        "等比数列求和的时候，为什么老是要单独讨论 q=1？",
        scenario="concept-no-id",
        topic="sequence",
        intent="concept",
        known_facts=[known("topic", "等比数列求和公式", TOPIC)],
        turns=[answer("reminder")],
        evidence=[q(X2, "所以公比未知时一定要讨论 $q=1$ 的情况")],
    ),
    dialogue(
        "dlg-concept-002",
        "错位相减法一般在什么情况下用啊？",
        scenario="concept-no-id",
        topic="sequence",
        intent="concept",
        known_facts=[known("topic", "错位相减法", TOPIC)],
        turns=[answer("reminder"), answer("approach")],
        follow_ups=["那具体分哪几步做？"],
        evidence=[q(X2, "用错位相减法求和")],
    ),
    dialogue(
        "dlg-concept-003",
        "判断一个函数是奇函数还是偶函数，第一步先看什么？",
        scenario="concept-no-id",
        topic="function",
        intent="concept",
        known_facts=[known("topic", "函数的奇偶性", TOPIC)],
        turns=[answer("reminder")],
        evidence=[q(B1, "判断奇偶性的第一步是看定义域是否关于原点对称")],
    ),
    dialogue(
        "dlg-concept-004",
        "诱导公式那句口诀“奇变偶不变”到底是什么意思？",
        scenario="concept-no-id",
        topic="trig",
        intent="concept",
        known_facts=[known("topic", "诱导公式的口诀", TOPIC)],
        turns=[answer("reminder"), answer("approach")],
        follow_ups=["那 sin(3π/2+α) 用这句口诀怎么化？"],
        evidence=[q(B2, "奇变偶不变，符号看象限")],
    ),
    dialogue(
        "dlg-concept-005",
        "What is the difference between mutually exclusive events and independent events?",
        scenario="concept-no-id",
        topic="probability",
        intent="concept",
        lang="en",
        known_facts=[known("topic", "mutually exclusive vs independent events", TOPIC)],
        turns=[answer("reminder")],
        evidence=[q(X3, "互斥是说两个事件不能同时发生")],
    ),
    # ---------------------------------------------------------------- a condition is missing: ask for it, then guide
    dialogue(
        "dlg-missing-001",
        "这个二次函数的最大值和最小值怎么求？",
        scenario="missing-condition",
        topic="quadratic",
        intent="solve_problem",
        context={"problem": "求 f(x)=x^2-6x+5 的最大值和最小值。"},
        known_facts=[known("function", "f(x)=x^2-6x+5", ["哪个函数", "什么函数", "函数解析式", "which function"])],
        conditions=[
            cond("interval", ["区间", "范围", "定义域", "interval", "range", "domain"], "题目说的是在 [1,4] 上")
        ],
        turns=[clarify("interval"), answer("reminder"), answer("approach")],
        follow_ups=[MORE],
        evidence=[q(B1, "对称轴 $x=3\\in[1,4]$")],
    ),
    dialogue(
        "dlg-missing-002",
        "y=x+1/(x-1) 的最小值能直接用基本不等式吗？",
        scenario="missing-condition",
        topic="inequality",
        intent="solve_problem",
        known_facts=[known("function", "y=x+1/(x-1)", ["哪个函数", "什么函数", "which function"])],
        conditions=[cond("domain", ["x 的范围", "x的范围", "取值范围", "x>", "x 大于", "range of x", "domain"], "x>1")],
        turns=[clarify("domain"), answer("approach")],
        evidence=[q(B1, "凑出定值，$y=(x-1)+\\frac{1}{x-1}+1")],
    ),
    dialogue(
        "dlg-missing-003",
        "求曲线 y=x^2 的切线方程，我不知道从哪下手",
        scenario="missing-condition",
        topic="derivative",
        intent="solve_problem",
        known_facts=[known("curve", "y=x^2", ["哪条曲线", "什么曲线", "which curve"])],
        conditions=[
            cond(
                "point",
                ["哪个点", "哪一点", "切点", "过点", "在点", "which point", "what point"],
                "是过点 (1,0) 的切线",
            )
        ],
        turns=[clarify("point"), answer("approach"), answer("wrong_direction")],
        follow_ups=["我直接把 x=1 代进导数里算斜率，结果不对"],
        evidence=[q(X2, "点 $(1,0)$ 不在曲线上，要设切点")],
    ),
    dialogue(
        "dlg-missing-004",
        "这个三角形的角 A 怎么求？",
        scenario="missing-condition",
        topic="triangle",
        intent="solve_problem",
        context={"problem": "在△ABC 中，a=√3，b=√2，求角 A。"},
        known_facts=[known("sides", "a=√3，b=√2", ["边长", "哪两条边", "which sides"])],
        conditions=[
            cond(
                "angle_b",
                ["角 B", "角B", "B 是多少", "B等于", "还知道什么", "其他条件", "angle B", "other condition"],
                "还有 B=45°，我刚才漏抄了",
            )
        ],
        turns=[clarify("angle_b"), answer("reminder"), answer("wrong_direction")],
        follow_ups=["我算出 A=60° 就结束了，对吗？"],
        evidence=[q(B2, "因为 $a>b$，所以 $A>B=45^\\circ$")],
    ),
    dialogue(
        "dlg-missing-005",
        "两个人射击，至少一个人命中的概率怎么算？",
        scenario="missing-condition",
        topic="probability",
        intent="solve_problem",
        context={"problem": "甲、乙两人独立射击同一目标，求至少有一人命中的概率。"},
        conditions=[
            cond(
                "rates",
                ["命中率", "命中的概率", "概率分别", "hit rate", "probability of hitting"],
                "甲的命中率是 0.8，乙是 0.7",
            )
        ],
        turns=[clarify("rates"), answer("approach")],
        evidence=[q(X3, "用对立事件，$1-0.2\\times0.3=0.94$")],
    ),
    # ---------------------------------------------------------------- compare with an earlier problem the system does not know
    dialogue(
        "dlg-cross-001",
        "这题和上次那道切线题有什么不一样？",
        scenario="cross-problem",
        topic="derivative",
        intent="compare_problems",
        context={"problem": "求过点 (1,0) 且与曲线 y=x^2 相切的直线方程。"},
        conditions=[cond("old_problem", OLD + PROBLEM, "上次是求 y=x^3 在点 (1,1) 处的切线")],
        turns=[clarify("old_problem"), answer("reminder")],
        evidence=[q(X2, '"在点"与"过点"的区别一定要分清'), q(X2, "切线斜率 $k=3$")],
    ),
    dialogue(
        "dlg-cross-002",
        "为什么这道要讨论 q=1，上回那道等比求和就不用？",
        scenario="cross-problem",
        topic="sequence",
        intent="compare_problems",
        context={"problem": "等比数列 {a_n} 满足 S_3=3a_3，求公比 q。"},
        conditions=[cond("old_problem", OLD + PROBLEM, "上回是算 1+2+2^2+…+2^9 那道")],
        turns=[clarify("old_problem"), answer("reminder"), answer("approach")],
        follow_ups=["那这道具体怎么分情况？"],
        evidence=[q(X2, "若 $q=1$，$S_3=3a_1=3a_3$，成立")],
    ),
    dialogue(
        "dlg-cross-003",
        "这个对数不等式和之前那道指数不等式，解法差在哪？",
        scenario="cross-problem",
        topic="exp-log",
        intent="compare_problems",
        context={"problem": "解不等式 log_{1/2}(x-1) > -1。"},
        conditions=[cond("old_problem", OLD + PROBLEM, "之前那道是解 2^(x^2-2x) < 8")],
        turns=[clarify("old_problem"), answer("reminder")],
        evidence=[q(B1, "底数 $\\frac12<1$，函数递减"), q(B1, "$y=2^x$ 递增，所以 $x^2-2x<3$")],
    ),
    dialogue(
        "dlg-cross-004",
        "为什么这道正弦定理的题有两个解，上一道就只有一个？",
        scenario="cross-problem",
        topic="triangle",
        intent="compare_problems",
        context={"problem": "在△ABC 中，a=√3，b=√2，B=45°，求 A。"},
        conditions=[cond("old_problem", OLD + PROBLEM, "上一道是已知两个角和一条边的那题")],
        turns=[clarify("old_problem"), answer("approach")],
        evidence=[q(B2, "都符合，有两解")],
    ),
    dialogue(
        "dlg-cross-005",
        "这道抽次品的题跟上次那道投篮的题，分布为什么不一样？",
        scenario="cross-problem",
        topic="probability",
        intent="compare_problems",
        context={"problem": "10 件产品中有 3 件次品，从中不放回地任取 4 件，求次品数 X 的分布列。"},
        conditions=[
            cond(
                "old_problem",
                OLD + ["哪道投篮", "投篮那题", "which shooting"],
                "上次是投篮 3 次、命中率 0.6 求命中次数那题",
            )
        ],
        turns=[clarify("old_problem"), answer("reminder")],
        evidence=[q(X3, "若改为有放回抽取 $4$ 次")],
    ),
    # ---------------------------------------------------------------- several candidate problems: confirm which one
    dialogue(
        "dlg-cand-001",
        "例13 我不会，给点提示",
        scenario="candidates",
        topic="sequence",
        intent="solve_problem",
        conditions=[cond("book", BOOK, "选择性必修第二册，数列那一章的")],
        turns=[clarify("book"), answer("reminder"), answer("wrong_direction")],
        follow_ups=["我只算出了 q=-1/2，这样对吗？"],
        evidence=[q(X2, "若 $q\\ne1$，则 $a_1(1+q+q^2)=3a_1q^2$")],
    ),
    dialogue(
        "dlg-cand-002",
        "例22 那道题是什么思路？",
        scenario="candidates",
        topic="quadratic",
        intent="solve_problem",
        conditions=[cond("book", BOOK, "必修第一册，二次函数最值那节")],
        turns=[clarify("book"), answer("approach")],
        evidence=[q(B1, "对称轴 $x=a$。当 $a<0$ 时")],
    ),
    dialogue(
        "dlg-cand-003",
        "例27 怎么做？看了半天没思路",
        scenario="candidates",
        topic="derivative",
        intent="solve_problem",
        conditions=[cond("book", BOOK, "选择性必修第二册，导数求极值那里")],
        turns=[clarify("book"), answer("reminder"), answer("wrong_direction")],
        follow_ups=["我解出 a=4 和 a=-3 两组，都要吗？"],
        evidence=[q(X2, "导数在 $x=1$ 两侧不变号，没有极值，舍去")],
    ),
    dialogue(
        "dlg-cand-004",
        "例15 那题求最值怎么下手？",
        scenario="candidates",
        topic="trig",
        intent="solve_problem",
        conditions=[cond("book", BOOK, "必修第二册，二倍角公式那节")],
        turns=[clarify("book"), answer("approach")],
        evidence=[q(B2, "由二倍角公式，$f(x)=\\sqrt3\\sin2x+\\cos2x")],
    ),
    dialogue(
        "dlg-cand-005",
        "例13 我算出来是 1/2，哪里错了？",
        scenario="candidates",
        topic="probability",
        intent="solve_problem",
        conditions=[cond("book", BOOK, "选择性必修第三册，两个孩子那道")],
        turns=[clarify("book"), answer("wrong_direction")],
        forbidden=["\\frac13"],
        evidence=[q(X3, "而不是很多人直觉中的")],
    ),
    # ---------------------------------------------------------------- no material: state the limits
    dialogue(
        "dlg-nomat-001",
        "双曲线的离心率一般怎么求？",
        scenario="no-material",
        topic="conic",
        intent="concept",
        turns=[LIMITS],
    ),
    dialogue(
        "dlg-nomat-002",
        "定积分求曲边梯形的面积怎么算？",
        scenario="no-material",
        topic="calculus",
        intent="concept",
        turns=[LIMITS, LIMITS],
        follow_ups=["课本里没有的话你就随便讲讲呗"],
    ),
    dialogue(
        "dlg-nomat-003",
        "空间向量求二面角的步骤是什么？",
        scenario="no-material",
        topic="geometry",
        intent="concept",
        turns=[LIMITS],
    ),
    dialogue(
        "dlg-nomat-004",
        "Can you explain L'Hopital's rule to me?",
        scenario="no-material",
        topic="calculus",
        intent="concept",
        lang="en",
        turns=[LIMITS, LIMITS],
        follow_ups=["Just give me a rough idea then, please."],
    ),
    dialogue(
        "dlg-nomat-005",
        "圆锥曲线里的点差法是怎么回事？",
        scenario="no-material",
        topic="conic",
        intent="concept",
        turns=[LIMITS],
    ),
    # ---------------------------------------------------------------- repeated demands for the full answer
    dialogue(
        "dlg-push-001",
        "这道利润的题我不会，先给点提示",
        scenario="full-answer-push",
        topic="quadratic",
        intent="solve_problem",
        context={
            "book": "必修第一册",
            "problem": "例23 某商品进价 40 元，售价 50 元时每天可卖出 500 件；售价每上涨 1 元，日销量减少 10 件。售价定为多少时日利润最大？",
        },
        turns=[answer("reminder"), answer("approach"), answer("wrong_direction")],
        follow_ups=[ANSWER_PLEASE, BEG],
        forbidden=["9000", "-10(x-40)(x-100)"],
        evidence=[q(B1, "设售价为 $x$ 元，日利润")],
    ),
    dialogue(
        "dlg-push-002",
        "n·2^n 的前 n 项和怎么求？",
        scenario="full-answer-push",
        topic="sequence",
        intent="solve_problem",
        context={"book": "选择性必修第二册", "problem": "例14 求 T_n=1×2+2×2^2+3×2^3+…+n×2^n。"},
        turns=[answer("reminder"), answer("approach"), answer("wrong_direction")],
        follow_ups=[ANSWER_PLEASE, BEG],
        forbidden=["(n-1)\\times2^{n+1}+2"],
        evidence=[q(X2, "两式相减得")],
    ),
    dialogue(
        "dlg-push-003",
        "无盖盒子容积最大那题，给我讲讲",
        scenario="full-answer-push",
        topic="derivative",
        intent="solve_problem",
        context={
            "book": "选择性必修第二册",
            "problem": "例29 边长为 6 的正方形铁皮四角各剪去边长为 x 的小正方形，折成无盖盒子，x 为多少时容积最大？",
        },
        turns=[answer("reminder"), answer("approach")],
        follow_ups=["你直接把最大容积算出来给我就行"],
        forbidden=["V(1)=1\\times4^2=16"],
        evidence=[q(X2, "容积 $V(x)=x(6-2x)^2$")],
    ),
    dialogue(
        "dlg-push-004",
        "测塔高这题怎么做？",
        scenario="full-answer-push",
        topic="triangle",
        intent="solve_problem",
        context={
            "book": "必修第二册",
            "problem": "例33 在地面上点 A 处测得塔顶 P 的仰角为 30°，向塔底方向前进 20 m 到达点 B，测得仰角为 45°，求塔高。",
        },
        turns=[answer("reminder"), answer("approach"), answer("wrong_direction")],
        follow_ups=[ANSWER_PLEASE, BEG],
        forbidden=["10\\sqrt3+10", "10(\\sqrt3+1)"],
        evidence=[q(B2, "$BP=\\frac{AB\\sin30^\\circ}{\\sin15^\\circ}")],
    ),
    dialogue(
        "dlg-push-005",
        "检测阳性真正患病的概率怎么算？",
        scenario="full-answer-push",
        topic="probability",
        intent="solve_problem",
        context={
            "book": "选择性必修第三册",
            "problem": "例16 患病率 0.5%，患者检测阳性的概率 99%，健康人误判阳性的概率 5%。某人检测为阳性，他真正患病的概率是多少？",
        },
        turns=[answer("reminder"), answer("approach"), answer("wrong_direction")],
        follow_ups=[ANSWER_PLEASE, BEG],
        forbidden=["0.0905"],
        evidence=[q(X3, "已知结果 $B$ 发生，推断它由原因 $A_i$ 导致的概率，用贝叶斯公式")],
    ),
    # ---------------------------------------------------------------- the student cannot answer what is asked
    dialogue(
        "dlg-cannot-001",
        "上次老师讲的那道数列题我还是不懂",
        scenario="cannot-answer",
        topic="sequence",
        intent="solve_problem",
        conditions=[
            cond("problem", PROBLEM + ["题目", "what was the problem"], None),
            cond("kind", ["求什么", "求和还是", "通项还是", "问的是什么", "what did it ask"], "好像是求和的"),
        ],
        turns=[clarify("problem"), clarify("kind"), answer("reminder")],
        evidence=[q(X2, "等比数列前 $n$ 项和公式必须分公比是否为 $1$ 两种情况")],
    ),
    dialogue(
        "dlg-cannot-002",
        "这道题的区间我忘抄了，最小值怎么求？",
        scenario="cannot-answer",
        topic="quadratic",
        intent="solve_problem",
        context={"problem": "求 f(x)=x^2-2ax+1 在某闭区间上的最小值。"},
        conditions=[cond("interval", ["区间", "范围", "interval", "range"], None)],
        turns=[clarify("interval"), answer("approach")],
        evidence=[q(B1, "关键是看对称轴和区间的位置关系")],
    ),
    dialogue(
        "dlg-cannot-003",
        "老师黑板上那道一元二次不等式，条件我没记全，怎么做？",
        scenario="cannot-answer",
        topic="inequality",
        intent="solve_problem",
        conditions=[cond("inequality", ["不等式是", "哪个不等式", "原题", "题目", "which inequality"], None)],
        turns=[clarify("inequality"), LIMITS],
        cannot_answer="我真的想不起来了",
        evidence=[q(B1, "大于取两边，小于取中间")],
    ),
    dialogue(
        "dlg-cannot-004",
        "Which rule do I use for the triangle problem from class? I forgot the numbers.",
        scenario="cannot-answer",
        topic="triangle",
        intent="solve_problem",
        lang="en",
        conditions=[cond("given", ["what is given", "which sides", "which angles", "what do you know", "given"], None)],
        turns=[clarify("given"), answer("reminder")],
        evidence=[q(B2, "正弦定理适合两类问题")],
    ),
    dialogue(
        "dlg-cannot-005",
        "那道向量夹角的题怎么做？坐标我不记得了",
        scenario="cannot-answer",
        topic="vector",
        intent="solve_problem",
        known_facts=[known("topic", "向量的夹角", TOPIC)],
        conditions=[cond("vectors", ["坐标", "向量是", "哪两个向量", "coordinates", "which vectors"], None)],
        turns=[clarify("vectors"), answer("reminder")],
        evidence=[q(B2, "\\cos\\theta=\\frac{x_1x_2+y_1y_2}")],
    ),
    # ---------------------------------------------------------------- three rounds of clarification
    dialogue(
        "dlg-rounds-001",
        "有道题我做不出来",
        scenario="exhaust-rounds",
        topic="counting",
        intent="solve_problem",
        conditions=[
            cond("book", BOOK, "选择性必修第三册"),
            cond("problem", PROBLEM + ["例几", "第几题"], "例9，赋值法求系数和那题"),
            cond("part", PART, "第（3）问，求 a1+a3+a5"),
        ],
        turns=[clarify("book"), clarify("problem"), clarify("part"), answer("approach")],
        evidence=[q(X3, "令 $x=-1$，得")],
    ),
    dialogue(
        "dlg-rounds-002",
        "老师留的一道题，我不会",
        scenario="exhaust-rounds",
        topic="logic",
        intent="solve_problem",
        conditions=[
            cond("book", BOOK, "必修第一册"),
            cond("problem", PROBLEM + ["例几", "第几题"], "例5，判断条件类型"),
            cond("part", PART, "第（2）问"),
        ],
        turns=[clarify("book"), clarify("problem"), clarify("part"), answer("reminder")],
        evidence=[q(B1, "它比 $\\{1\\}$ 大")],
    ),
    dialogue(
        "dlg-rounds-003",
        "帮我看一道求和题",
        scenario="exhaust-rounds",
        topic="sequence",
        intent="solve_problem",
        conditions=[
            cond("book", BOOK, "选择性必修第二册"),
            cond("problem", PROBLEM + ["例几", "第几题"], "例17"),
            cond("part", PART, "第（1）问，隔项抵消那个"),
        ],
        turns=[clarify("book"), clarify("problem"), clarify("part"), answer("wrong_direction")],
        evidence=[q(X2, "开头会剩两项，结尾也会剩两项")],
    ),
    dialogue(
        "dlg-rounds-004",
        "复数有道题想问问",
        scenario="exhaust-rounds",
        topic="complex",
        intent="solve_problem",
        conditions=[
            cond("book", BOOK, "必修第二册"),
            cond("problem", PROBLEM + ["例几", "第几题"], "例35"),
            cond("part", PART, "第（1）问，z 是纯虚数"),
        ],
        turns=[clarify("book"), clarify("problem"), clarify("part"), answer("reminder")],
        evidence=[q(B2, "需 $m^2-3m+2=0$ 且 $m^2-1\\ne0$")],
    ),
    dialogue(
        "dlg-rounds-005",
        "I'm stuck on a homework problem.",
        scenario="exhaust-rounds",
        topic="derivative",
        intent="solve_problem",
        lang="en",
        conditions=[
            cond("book", BOOK, "Selective compulsory book 2, the derivatives chapter"),
            cond("problem", PROBLEM + ["which example", "example number"], "Example 29, the open box"),
            cond("part", PART + ["which step", "what part"], "how to set up the volume"),
        ],
        turns=[clarify("book"), clarify("problem"), clarify("part"), answer("approach")],
        evidence=[q(X2, "容积 $V(x)=x(6-2x)^2$")],
    ),
]


# --------------------------------------------------------------------------- build


def _docs_of(raw: dict[str, Any]) -> set[str]:
    return {r["doc_id"] for g in raw["evidence"] for r in (g["any_of"] if "any_of" in g else [g])}


def build(corpus_sha256: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    empty_turn = 0
    for raw in ITEMS:
        it = json.loads(json.dumps(raw))  # deep copy
        docs = _docs_of(it)
        if not docs:
            split = ("tune", "holdout")[empty_turn % 2]
            empty_turn += 1
        elif docs <= TUNE_DOCS:
            split = "tune"
        elif docs <= HOLDOUT_DOCS:
            split = "holdout"
        else:
            raise SystemExit(f"{it['id']}: evidence mixes tune and holdout books {sorted(docs)}")
        it["split"] = split
        it["corpus"] = {"name": CORPUS_NAME, "sha256": corpus_sha256}
        out.append(it)
    return out


def render(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items)


# --------------------------------------------------------------------------- checks


def check(path: Path, docs: list[Any], raw_items: list[dict[str, Any]]) -> list[str]:
    import jsonschema

    from rag_app.corpus import ChunkConfig, chunk_documents
    from rag_eval.dialogue.leak import leaks
    from rag_eval.dialogue.load import load_dialogue_set
    from rag_eval.golden.resolve import ChunkLookup

    problems: list[str] = []
    items = load_dialogue_set(path)  # raises with file:line on every problem
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    for lineno, raw in enumerate(raw_items, 1):
        problems.extend(f"{path.name}:{lineno}: schema: {e.message}" for e in validator.iter_errors(raw))
    lookup = ChunkLookup(docs, chunk_documents(docs, ChunkConfig()))
    text_of = {d.doc_id: d.text for d in docs}
    for raw in raw_items:
        for g in raw["evidence"]:
            for r in g["any_of"] if "any_of" in g else [g]:
                found = len(lookup.locate(r["doc_id"], r["quote"]))
                if found != 1:
                    problems.append(
                        f"{raw['id']}: evidence quote occurs {found} times in {r['doc_id']} (want 1): {r['quote']!r}"
                    )
        said = [
            raw["opening"],
            *raw["follow_ups"],
            *(c["reply"] or "" for c in raw["conditions"]),
            *(k["value"] for k in raw["known"]),
        ]
        for phrase in raw["forbidden"]:
            if not any(leaks(text_of[d], [phrase]) for d in _docs_of(raw)):
                problems.append(
                    f"{raw['id']}: forbidden {phrase!r} is not in the evidence books (it should be the worked answer)"
                )
            if any(leaks(s, [phrase]) for s in said):
                problems.append(f"{raw['id']}: the student's own lines contain forbidden {phrase!r}")
    if len(items) < 40:
        problems.append(f"only {len(items)} dialogues (want at least 40)")
    per = Counter(str(it.tags.get("scenario")) for it in items)
    for scen in SCENARIOS:
        if per[scen] < 5:
            problems.append(f"scenario {scen}: {per[scen]} dialogues (want at least 5)")
        for split in ("tune", "holdout"):
            if not any(it.tags.get("scenario") == scen and it.split == split for it in items):
                problems.append(f"scenario {scen} has no {split} dialogue")
    unknown = sorted(set(per) - set(SCENARIOS))
    if unknown:
        problems.append(f"unknown scenario(s) {unknown}; use one of {SCENARIOS}")
    by_split: dict[str, set[str]] = {"tune": set(), "holdout": set()}
    for it in items:
        by_split[it.split] |= {r.doc_id for g in it.evidence for r in g.any_of if r.doc_id}
    for d in sorted(by_split["tune"] & by_split["holdout"]):
        problems.append(f"document {d!r} is evidence in both splits")
    print(_table(items))
    return problems


def _table(items: list[Any]) -> str:
    rows = [["scenario", "tune", "holdout", "total", "clarify turns", "forbidden", "English"]]
    for s in [*SCENARIOS, "total"]:
        sc = [i for i in items if s == "total" or i.tags.get("scenario") == s]
        rows.append(
            [
                s,
                str(sum(i.split == "tune" for i in sc)),
                str(sum(i.split == "holdout" for i in sc)),
                str(len(sc)),
                str(sum(t.action == "clarify" for i in sc for t in i.expected_turns)),
                str(sum(bool(i.forbidden) for i in sc)),
                str(sum(i.tags.get("lang") == "en" for i in sc)),
            ]
        )
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows)


def main(argv: list[str] | None = None) -> int:
    from rag_app.corpus import corpus_hash, load_corpus

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; check the file on disk")
    args = parser.parse_args(argv)
    docs = load_corpus(CORPUS_DIR)
    items = build(corpus_hash(docs))
    text = render(items)
    if args.check:
        on_disk = OUT.read_text(encoding="utf-8") if OUT.is_file() else ""
        if on_disk != text:
            print(f"{OUT} differs from what build_dialogues.py writes; run it without --check", file=sys.stderr)
            return 1
    else:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {len(items)} dialogues to {OUT.relative_to(ROOT)}")
    problems = check(OUT, docs, items)
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print(f"\nall checks passed ({len(items)} dialogues)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
