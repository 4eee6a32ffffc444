"""Build and check the demo_maths golden set (``golden.jsonl`` next to this file).

The items are written by hand below, as Python data, so that every quote, key fact
and split decision is reviewed like code. Running the script is deterministic: no
randomness, no clock, no network; the same corpus gives byte-identical output.

Usage (from the repository root)::

    python golden_sets/demo_maths/build_golden.py           # write golden.jsonl, then check it
    python golden_sets/demo_maths/build_golden.py --check   # only check: the file on disk must equal
                                                            # what the script would write

What is derived rather than written by hand:

* ``split``: "tune" when all evidence is in bixiu1/xuanxiu2, "holdout" when all of it
  is in bixiu2/xuanxiu3 (an item mixing the two groups is an error); items without
  evidence (refuse / clarify) alternate tune, holdout, tune, ... in the order below;
* ``corpus``: name ``demo_maths`` and ``corpus_hash()`` of the corpus folder.

Checks run after writing (any failure exits 1):

* the project loader ``load_golden_set`` accepts the file;
* every quote (evidence and key-fact sources) is found with ``ChunkLookup.locate``,
  is 8-40 characters long and occurs exactly once in its document;
* ``validate_all`` (unique ids, gold exists, key facts traceable, negatives carry no
  gold, no document in both splits) reports nothing, reading terms as ``python -m
  rag_eval validate`` does;
* ``must_contain`` phrases occur in the parent chunk(s) holding the item's gold quotes
  (so an extractive answer can satisfy them), ``must_not_contain`` phrases occur in the
  evidence documents and not in the reference answer;
* counts: at least 84 items, at least 8 per scenario, every scenario in both splits;
* no two questions are near-duplicates (character-bigram Jaccard >= 0.6) and no
  question copies 14 or more consecutive characters of the corpus.

Then the coverage table (``coverage_table``) and a scenario x split count are printed.
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
GOLDEN = HERE / "golden.jsonl"
CORPUS_NAME = "demo_maths"
TUNE_DOCS = frozenset({"bixiu1", "xuanxiu2"})
HOLDOUT_DOCS = frozenset({"bixiu2", "xuanxiu3"})

B1, B2, X2, X3 = "bixiu1", "bixiu2", "xuanxiu2", "xuanxiu3"


# --------------------------------------------------------------------------- helpers


def q(doc_id: str, quote: str) -> dict[str, str]:
    """One evidence alternative: a quoted span of a document."""
    return {"doc_id": doc_id, "quote": quote}


def any_of(*refs: dict[str, str]) -> dict[str, Any]:
    return {"any_of": list(refs)}


def kf(fact: str, doc_id: str, quote: str) -> dict[str, Any]:
    return {"fact": fact, "source": q(doc_id, quote)}


def item(
    id: str,
    question: str,
    *,
    scenario: str,
    difficulty: str,
    topic: str,
    evidence: list[dict[str, Any]] | None = None,
    key_facts: list[dict[str, Any]] | None = None,
    reference: str = "",
    must_contain: list[str] | None = None,
    must_not_contain: list[str] | None = None,
    action: str = "answer",
    history: list[tuple[str, str]] | None = None,
    topic2: str | None = None,
    critical: bool = False,
    lang: str = "zh",
) -> dict[str, Any]:
    tags: dict[str, str] = {"scenario": scenario, "difficulty": difficulty, "topic": topic}
    if topic2:
        tags["topic2"] = topic2
    if critical:
        tags["critical"] = "true"
    if lang != "zh":
        tags["lang"] = lang
    out: dict[str, Any] = {"id": id, "question": question}
    if history:
        out["history"] = [{"role": r, "content": c} for r, c in history]
    out["tags"] = tags
    out["evidence"] = evidence or []
    out["key_facts"] = key_facts or []
    out["reference_answer"] = reference
    out["must_contain"] = must_contain or []
    if must_not_contain:
        out["must_not_contain"] = must_not_contain
    out["expected_action"] = action
    return out


def refuse(
    id: str, question: str, *, topic: str, difficulty: str, reference: str, critical: bool = False
) -> dict[str, Any]:
    return item(
        id,
        question,
        scenario="negative",
        difficulty=difficulty,
        topic=topic,
        reference=reference,
        action="refuse",
        critical=critical,
    )


def clarify(id: str, question: str, *, reference: str) -> dict[str, Any]:
    return item(
        id, question, scenario="colloquial", difficulty="easy", topic="general", reference=reference, action="clarify"
    )


# --------------------------------------------------------------------------- items
# Order matters only for the alternating split of evidence-free items and for the
# order of lines in the file. Keep ids stable: append new items, do not renumber.

ITEMS: list[dict[str, Any]] = [
    # ======================================================== tune: bixiu1 + xuanxiu2
    # ---------------------------------------------------------------- standard
    item(
        "demo-set-001",
        "一个集合有n个元素，它的子集和真子集分别有多少个？",
        scenario="standard",
        difficulty="easy",
        topic="set",
        evidence=[q(B1, "子集个数为 $2^n$，真子集个数为 $2^n-1$")],
        key_facts=[
            kf("含n个元素的集合子集个数为2^n，真子集个数为2^n-1", B1, "子集个数为 $2^n$，真子集个数为 $2^n-1$"),
            kf("每个元素都有选或不选两种可能", B1, '每个元素都面临"选"或"不选"两种可能'),
        ],
        reference="含 n 个元素的集合有 2^n 个子集、2^n−1 个真子集（非空真子集 2^n−2 个），因为每个元素都有“选”或“不选”两种可能。",
        must_contain=["2^n-1"],
    ),
    item(
        "demo-logic-001",
        "全称量词命题的否定应该怎么写？",
        scenario="standard",
        difficulty="easy",
        topic="logic",
        evidence=[q(B1, "全称量词命题的否定是存在量词命题")],
        key_facts=[
            kf("全称量词命题的否定是存在量词命题", B1, "全称量词命题的否定是存在量词命题"),
            kf("改量词，否结论", B1, '通俗地说就是"改量词，否结论"'),
        ],
        reference="全称量词命题的否定是存在量词命题：把“任意”改成“存在”，同时否定结论（改量词，否结论），例如“∀x∈R，x²+1>0”的否定是“∃x∈R，x²+1≤0”。",
        must_contain=["存在量词命题"],
    ),
    item(
        "demo-ineq-001",
        "基本不等式的几何意义是什么？",
        scenario="standard",
        difficulty="medium",
        topic="inequality",
        evidence=[q(B1, "半弦长 $\\sqrt{ab}$ 不大于半径 $\\frac{a+b}{2}$")],
        key_facts=[
            kf(
                "在以a+b为直径的圆中，半弦长√ab不大于半径(a+b)/2", B1, "半弦长 $\\sqrt{ab}$ 不大于半径 $\\frac{a+b}{2}$"
            ),
        ],
        reference="在以 a+b 为直径的圆中，半弦长 √(ab) 不大于半径 (a+b)/2，这就是 √(ab) ≤ (a+b)/2 的几何意义。",
        must_contain=["半径"],
    ),
    item(
        "demo-quad-001",
        "二次函数的顶点式长什么样？顶点和对称轴怎么直接读出来？",
        scenario="standard",
        difficulty="easy",
        topic="quadratic",
        critical=True,
        evidence=[q(B1, "顶点式：$y=a(x-h)^2+k\\ (a\\ne0)$，顶点为 $(h,k)$")],
        key_facts=[
            kf("顶点式y=a(x-h)^2+k的顶点为(h,k)", B1, "顶点式：$y=a(x-h)^2+k\\ (a\\ne0)$，顶点为 $(h,k)$"),
            kf("对称轴为x=h", B1, "顶点为 $(h,k)$，对称轴为 $x=h$"),
        ],
        reference="顶点式为 y=a(x−h)²+k（a≠0），顶点是 (h,k)，对称轴是直线 x=h；一般式配方即可化成顶点式。",
        must_contain=["(h,k)"],
    ),
    item(
        "demo-func-001",
        "判断函数奇偶性的步骤是什么？",
        scenario="standard",
        difficulty="easy",
        topic="function",
        evidence=[q(B1, "判断奇偶性的第一步是看定义域是否关于原点对称")],
        key_facts=[
            kf(
                "第一步看定义域是否关于原点对称，不对称就是非奇非偶函数",
                B1,
                "判断奇偶性的第一步是看定义域是否关于原点对称",
            ),
            kf("f(-x)=-f(x)则f(x)是奇函数", B1, "若 $f(-x)=-f(x)$，则 $f(x)$ 是奇函数"),
        ],
        reference="先看定义域是否关于原点对称，不对称就是非奇非偶函数；对称时，f(−x)=f(x) 为偶函数（图像关于 y 轴对称），f(−x)=−f(x) 为奇函数（图像关于原点对称）。",
        must_contain=["关于原点对称"],
    ),
    item(
        "demo-explog-001",
        "对数的换底公式是什么？能推出哪些常用结论？",
        scenario="standard",
        difficulty="easy",
        topic="exp-log",
        evidence=[q(B1, "换底公式：$\\log_ab=\\frac{\\log_cb}{\\log_ca}$")],
        key_facts=[
            kf("换底公式log_ab=log_cb/log_ca", B1, "换底公式：$\\log_ab=\\frac{\\log_cb}{\\log_ca}$"),
            kf("可推出log_ab·log_ba=1", B1, "由它可推出 $\\log_ab\\cdot\\log_ba=1$"),
        ],
        reference="换底公式是 log_a b = log_c b / log_c a；由它可推出 log_a b·log_b a=1，以及 log_{a^m} b^n = (n/m)·log_a b。",
        must_contain=["换底公式"],
    ),
    item(
        "demo-func-002",
        "函数零点存在定理具体是怎么说的？",
        scenario="standard",
        difficulty="medium",
        topic="function",
        critical=True,
        evidence=[q(B1, "那么 $f(x)$ 在 $(a,b)$ 内至少有一个零点")],
        key_facts=[
            kf("f(a)f(b)<0时f(x)在(a,b)内至少有一个零点", B1, "那么 $f(x)$ 在 $(a,b)$ 内至少有一个零点"),
            kf("这个定理不能反过来用", B1, "注意这个定理不能反过来用"),
        ],
        reference="若 f(x) 在 [a,b] 上的图像连续不断且 f(a)f(b)<0，则 f(x) 在 (a,b) 内至少有一个零点；再加上单调就唯一。定理不能反过来用，如 x² 在 [−1,1] 上有零点但 f(−1)f(1)>0。",
        must_contain=["至少有一个零点"],
    ),
    item(
        "demo-seq-001",
        "等差数列的下标和性质是什么？",
        scenario="standard",
        difficulty="easy",
        topic="sequence",
        evidence=[q(X2, "则 $a_m+a_n=a_p+a_q$；特别地")],
        key_facts=[
            kf("若m+n=p+q，则a_m+a_n=a_p+a_q", X2, "则 $a_m+a_n=a_p+a_q$；特别地"),
            kf("若m+n=2k，则a_m+a_n=2a_k", X2, "若 $m+n=2k$，则 $a_m+a_n=2a_k$"),
        ],
        reference="在等差数列中，若 m+n=p+q，则 a_m+a_n=a_p+a_q；特别地 m+n=2k 时 a_m+a_n=2a_k，例如 a₂+a₈=2a₅。",
        must_contain=["a_m+a_n=a_p+a_q"],
    ),
    item(
        "demo-seq-002",
        "等比数列前n项和公式是怎么推导出来的？",
        scenario="standard",
        difficulty="medium",
        topic="sequence",
        evidence=[q(X2, "推导用的正是错位相减法")],
        key_facts=[
            kf("两边同乘q后两式相减，中间的项全部抵消", X2, "两式相减，中间的项全部抵消"),
            kf("得(1-q)S_n=a_1(1-q^n)", X2, "得 $(1-q)S_n=a_1(1-q^n)$"),
        ],
        reference="用错位相减法：写出 S_n=a₁+a₁q+…+a₁q^{n−1}，两边同乘 q 后相减，中间项抵消，得 (1−q)S_n=a₁(1−qⁿ)，q≠1 时再除以 1−q。",
        must_contain=["错位相减"],
    ),
    item(
        "demo-deriv-001",
        "导数的几何意义是什么？曲线在某点的切线方程怎么写？",
        scenario="standard",
        difficulty="easy",
        topic="derivative",
        critical=True,
        evidence=[q(X2, "是曲线 $y=f(x)$ 在点 $(x_0,f(x_0))$ 处切线的斜率")],
        key_facts=[
            kf(
                "f'(x_0)是曲线y=f(x)在点(x_0,f(x_0))处切线的斜率",
                X2,
                "是曲线 $y=f(x)$ 在点 $(x_0,f(x_0))$ 处切线的斜率",
            ),
            kf("切线方程为y-f(x_0)=f'(x_0)(x-x_0)", X2, "切线方程为 $y-f(x_0)=f'(x_0)(x-x_0)$"),
        ],
        reference="f'(x₀) 是曲线 y=f(x) 在点 (x₀,f(x₀)) 处切线的斜率，所以切线方程为 y−f(x₀)=f'(x₀)(x−x₀)。",
        must_contain=["切线的斜率"],
    ),
    item(
        "demo-func-006",
        "What are the rules for working out the domain of a function, e.g. with fractions and square roots?",
        scenario="standard",
        difficulty="easy",
        topic="function",
        lang="en",
        evidence=[q(B1, "分式的分母不为 $0$；偶次根式的被开方数大于或等于 $0$")],
        key_facts=[
            kf(
                "分式的分母不为0，偶次根式的被开方数大于或等于0",
                B1,
                "分式的分母不为 $0$；偶次根式的被开方数大于或等于 $0$",
            ),
            kf("对数的真数大于0", B1, "零次幂的底数不为 $0$；对数的真数大于 $0$"),
        ],
        reference="求定义域的依据：分式的分母不为 0；偶次根式的被开方数 ≥0；零次幂的底数不为 0；对数的真数 >0；实际问题还要符合实际意义。",
    ),
    # ---------------------------------------------------------------- colloquial
    item(
        "demo-quad-002",
        "抛物线那个最低点怎么求啊，有没有直接套的公式",
        scenario="colloquial",
        difficulty="easy",
        topic="quadratic",
        evidence=[any_of(q(B1, "对称轴为 $x=-\\frac{b}{2a}$，顶点坐标为"), q(B1, "图像就像一只碗，碗底就是最低点"))],
        key_facts=[
            kf("对称轴为x=-b/(2a)，顶点就是最低点", B1, "对称轴为 $x=-\\frac{b}{2a}$，顶点坐标为"),
        ],
        reference="开口向上（a>0）时最低点就是顶点：对称轴 x=−b/(2a)，顶点坐标为 (−b/(2a), (4ac−b²)/(4a))；也可以先配方成顶点式再读出。",
        must_contain=["顶点"],
    ),
    item(
        "demo-ineq-002",
        "一正二定三相等到底啥意思啊，老师讲太快没听懂",
        scenario="colloquial",
        difficulty="easy",
        topic="inequality",
        evidence=[q(B1, "一正，各项都是正数；二定，和或积是定值；三相等，等号能够取到")],
        key_facts=[
            kf(
                "一正各项都是正数，二定和或积是定值，三相等等号能够取到",
                B1,
                "一正，各项都是正数；二定，和或积是定值；三相等，等号能够取到",
            ),
            kf("积为定值时和有最小值，和为定值时积有最大值", B1, "积为定值时，和有最小值；和为定值时，积有最大值"),
        ],
        reference="用基本不等式求最值要同时满足：一正（各项都是正数）、二定（和或积是定值）、三相等（等号能取到）。积为定值时和有最小值，和为定值时积有最大值。",
        must_contain=["定值"],
    ),
    item(
        "demo-explog-002",
        "为啥负数不能取对数啊，log(-2)不行吗",
        scenario="colloquial",
        difficulty="easy",
        topic="exp-log",
        evidence=[any_of(q(B1, "负数和零没有对数"), q(B1, "记作 $b=\\log_aN$，其中 $N>0$ 叫真数"))],
        key_facts=[
            kf("负数和零没有对数", B1, "负数和零没有对数"),
            kf("$b=\\log_aN$ 中 $N>0$ 叫真数", B1, "记作 $b=\\log_aN$，其中 $N>0$ 叫真数"),
        ],
        reference="对数是由 a^b=N（a>0，a≠1）定义的，而 a>0 时 a^b 总是正数，所以真数 N 必须大于 0，负数和零没有对数，log(−2) 无意义。",
        must_contain=["负数和零没有对数"],
    ),
    item(
        "demo-seq-003",
        "用Sn减Sn-1求通项我老是被扣分，到底哪里要注意啊",
        scenario="colloquial",
        difficulty="medium",
        topic="sequence",
        evidence=[q(X2, "忘了它只对 $n\\ge2$ 成立，必须单独检验 $n=1$ 的情形")],
        key_facts=[
            kf(
                "a_n=S_n-S_{n-1}只对n≥2成立，必须单独检验n=1的情形",
                X2,
                "忘了它只对 $n\\ge2$ 成立，必须单独检验 $n=1$ 的情形",
            ),
            kf("n=1时a_1=S_1", X2, "$n=1$ 时 $a_1=S_1=4$"),
        ],
        reference="a_n=S_n−S_{n−1} 只对 n≥2 成立，n=1 时要用 a₁=S₁ 单独算并检验能否合并；例如 S_n=n²+2n+1 时 a₁=4，而 n≥2 时 a_n=2n+1，只能分段写。",
        must_contain=["n=1"],
    ),
    item(
        "demo-deriv-003",
        "导数等于0的点是不是一定是极值点啊？",
        scenario="colloquial",
        difficulty="medium",
        topic="derivative",
        critical=True,
        evidence=[q(X2, "是可导函数在 $x_0$ 处取得极值的必要条件，但不是充分条件")],
        key_facts=[
            kf(
                "f'(x_0)=0是取得极值的必要条件，但不是充分条件",
                X2,
                "是可导函数在 $x_0$ 处取得极值的必要条件，但不是充分条件",
            ),
            kf("关键看导数在x_0两侧是否变号", X2, "判断的关键是：导数在 $x_0$ 两侧是否变号"),
        ],
        reference="不一定。f'(x₀)=0 只是取得极值的必要条件，不是充分条件；例如 f(x)=x³ 有 f'(0)=0，但两侧导数都为正，0 不是极值点。关键看导数在 x₀ 两侧是否变号。",
        must_contain=["变号"],
    ),
    item(
        "demo-func-003",
        "f(2x-1)这种括号里套东西的定义域怎么求啊，好晕",
        scenario="colloquial",
        difficulty="medium",
        topic="function",
        evidence=[q(B1, "括号里的整体 $2x-1$ 要落在 $[0,2]$ 内")],
        key_facts=[
            kf("括号里的整体2x-1要落在[0,2]内", B1, "括号里的整体 $2x-1$ 要落在 $[0,2]$ 内"),
            kf("定义域永远指的是x的取值范围", B1, "记住：定义域永远指的是 $x$ 的取值范围"),
        ],
        reference="把括号里的整体当成原来的自变量：若 f(x) 的定义域是 [0,2]，就让 0≤2x−1≤2，解得 1/2≤x≤3/2；定义域永远指 x 的取值范围。",
        must_contain=["取值范围"],
    ),
    item(
        "demo-quad-003",
        "那它的最小值呢？在哪取到？",
        history=[
            ("user", "y=2x²-8x+5 怎么化成顶点式？"),
            ("assistant", "配方：y=2(x²-4x+4)-8+5=2(x-2)²-3，所以顶点是 (2,-3)，对称轴是 x=2。"),
        ],
        scenario="colloquial",
        difficulty="easy",
        topic="quadratic",
        evidence=[q(B1, "所以当 $x=2$ 时取得最小值 $-3$，没有最大值")],
        key_facts=[
            kf("a=2>0开口向上，当x=2时取得最小值-3", B1, "所以当 $x=2$ 时取得最小值 $-3$，没有最大值"),
        ],
        reference="因为 a=2>0，开口向上，所以当 x=2 时取得最小值 −3，没有最大值。",
        must_contain=["-3"],
    ),
    item(
        "demo-seq-004",
        "那前几项加起来最大？最大是多少？",
        history=[
            ("user", "等差数列首项是20，公差是-3，通项公式是什么？"),
            ("assistant", "a_n=20-3(n-1)=23-3n。"),
        ],
        scenario="colloquial",
        difficulty="medium",
        topic="sequence",
        evidence=[q(X2, "项和最大，$S_7=\\frac{7\\times(20+2)}{2}=77$")],
        key_facts=[
            kf("a_7=2>0，a_8=-1<0，前7项和最大", X2, "所以 $a_7=2>0$，$a_8=-1<0$，前 $7$ 项和最大"),
            kf("S_7=77", X2, "项和最大，$S_7=\\frac{7\\times(20+2)}{2}=77$"),
        ],
        reference="由 a_n=23−3n≥0 得 n≤23/3，a₇=2>0、a₈=−1<0，所以前 7 项和最大，S₇=7×(20+2)/2=77。",
        must_contain=["77"],
    ),
    item(
        "demo-deriv-009",
        "is the derivative of e^x really just e^x?? why is e^x such a big deal",
        scenario="colloquial",
        difficulty="easy",
        topic="derivative",
        lang="en",
        evidence=[q(X2, "它是唯一一个导数等于自身的函数")],
        key_facts=[
            kf("e^x的导数是e^x，是唯一一个导数等于自身的函数", X2, "它是唯一一个导数等于自身的函数"),
            kf("y=e^x上每一点处切线的斜率等于这一点的纵坐标", X2, "上每一点处切线的斜率，恰好等于这一点的纵坐标"),
        ],
        reference="是的，(eˣ)'=eˣ。除了常数倍以外，eˣ 是唯一一个导数等于自身的函数：曲线 y=eˣ 上每一点处切线的斜率恰好等于该点的纵坐标。",
    ),
    clarify(
        "demo-clarify-001",
        "这个公式怎么用？",
        reference="需要追问：请说明是哪个公式（例如换底公式、等比数列求和公式、二倍角公式）或把题目发来，才能讲具体用法。",
    ),
    # ---------------------------------------------------------------- no-term
    item(
        "demo-seq-005",
        "一个数列每一项都是前一项的固定倍数，前面若干项加起来怎么算？",
        scenario="no-term",
        difficulty="medium",
        topic="sequence",
        critical=True,
        evidence=[q(X2, "等比数列前 $n$ 项和公式必须分公比是否为 $1$ 两种情况")],
        key_facts=[
            kf("前n项和公式必须分公比是否为1两种情况", X2, "等比数列前 $n$ 项和公式必须分公比是否为 $1$ 两种情况"),
            kf("q=1时各项都等于a_1，S_n=na_1", X2, "当 $q=1$ 时各项都等于 $a_1$，$S_n=na_1$"),
        ],
        reference="这是等比数列求和：公比 q=1 时 S_n=na₁；q≠1 时 S_n=a₁(1−qⁿ)/(1−q)=(a₁−a_n q)/(1−q)。公比未知时一定要讨论 q=1。",
        must_contain=["q=1"],
    ),
    item(
        "demo-func-004",
        "一个函数的图像沿着y轴对折后左右两边完全重合，它的式子满足什么关系？",
        scenario="no-term",
        difficulty="easy",
        topic="function",
        evidence=[q(B1, "若对任意 $x$ 都有 $f(-x)=f(x)$，则 $f(x)$ 是偶函数")],
        key_facts=[
            kf("定义域对称且f(-x)=f(x)，则f(x)是偶函数", B1, "若对任意 $x$ 都有 $f(-x)=f(x)$，则 $f(x)$ 是偶函数"),
        ],
        reference="这是偶函数：定义域关于原点对称，且对任意 x 都有 f(−x)=f(x)，图像关于 y 轴对称。",
        must_contain=["f(-x)=f(x)"],
    ),
    item(
        "demo-explog-003",
        "已知2的几次方等于32，这种反过来求指数的运算叫什么，怎么写？",
        scenario="no-term",
        difficulty="easy",
        topic="exp-log",
        evidence=[any_of(q(B1, "那么 $b$ 叫做以 $a$ 为底 $N$ 的对数"), q(B1, "比如 $\\log_2 32=5$，因为 $2^5=32$"))],
        key_facts=[
            kf("a^b=N时b叫做以a为底N的对数，记作b=log_aN", B1, "那么 $b$ 叫做以 $a$ 为底 $N$ 的对数"),
            kf("log_2 32=5，因为2^5=32", B1, "比如 $\\log_2 32=5$，因为 $2^5=32$"),
        ],
        reference="这是对数：若 a^b=N（a>0，a≠1），则 b 叫以 a 为底 N 的对数，记作 b=log_a N。例如 log₂32=5，因为 2⁵=32。",
        must_contain=["对数"],
    ),
    item(
        "demo-ineq-003",
        "两个正数相乘再开根号，和它们加起来除以2比，哪个大？什么时候相等？",
        scenario="no-term",
        difficulty="easy",
        topic="inequality",
        evidence=[q(B1, "两个正数的几何平均数不大于算术平均数")],
        key_facts=[
            kf("两个正数的几何平均数不大于算术平均数", B1, "两个正数的几何平均数不大于算术平均数"),
            kf("当且仅当a=b时等号成立", B1, "当且仅当 $a=b$ 时等号成立"),
        ],
        reference="这是基本不等式：a>0、b>0 时 √(ab) ≤ (a+b)/2，即几何平均数不大于算术平均数，当且仅当 a=b 时等号成立。",
        must_contain=["a=b"],
    ),
    item(
        "demo-deriv-004",
        "顺着函数图像从左往右看，怎么判断哪一段往上、哪一段往下？不想用定义一个个作差",
        scenario="no-term",
        difficulty="easy",
        topic="derivative",
        evidence=[q(X2, "若 $f'(x)>0$，则 $f(x)$ 在这个区间上单调递增")],
        key_facts=[
            kf(
                "f'(x)>0则f(x)在这个区间上单调递增，f'(x)<0则单调递减",
                X2,
                "若 $f'(x)>0$，则 $f(x)$ 在这个区间上单调递增",
            ),
            kf("先确定定义域，再求导数f'(x)", X2, "（1）确定定义域；（2）求导数 $f'(x)$"),
        ],
        reference="用导数判断单调性：在某区间内 f'(x)>0 则 f(x) 单调递增，f'(x)<0 则单调递减。步骤是先求定义域，再求导，解 f'(x)>0 与 f'(x)<0，在定义域内写出单调区间。",
        must_contain=["单调递增"],
    ),
    item(
        "demo-seq-006",
        "要证明一个式子对所有正整数都成立，先验证第一个，再由第k个推出第k+1个，这种证法要注意什么？",
        scenario="no-term",
        difficulty="medium",
        topic="sequence",
        evidence=[q(X2, "两步缺一不可，特别是第二步中必须用上归纳假设")],
        key_facts=[
            kf("两步缺一不可，第二步中必须用上归纳假设", X2, "两步缺一不可，特别是第二步中必须用上归纳假设"),
            kf("第一个值n_0常为1，但不一定", X2, "$n_0$ 是第一个值，常为 $1$"),
        ],
        reference="这是数学归纳法：先证 n=n₀ 时成立（归纳奠基），再假设 n=k 成立去证 n=k+1 成立（归纳递推）。两步缺一不可，第二步必须用上归纳假设；起点 n₀ 不一定是 1。",
        must_contain=["归纳假设"],
    ),
    item(
        "demo-seq-012",
        "Gauss added 1 to 100 by pairing the first and last numbers. What general formula does that trick give when each term goes up by the same amount?",
        scenario="no-term",
        difficulty="easy",
        topic="sequence",
        lang="en",
        evidence=[q(X2, "S_n=\\frac{n(a_1+a_n)}{2}=na_1")],
        key_facts=[
            kf(
                "等差数列前n项和公式 $S_n=\\frac{n(a_1+a_n)}{2}=na_1+\\frac{n(n-1)}{2}d$",
                X2,
                "前 $n$ 项和公式：\n$$S_n=\\frac{n(a_1+a_n)}{2}",
            ),
        ],
        reference="首尾配对（倒序相加）推广后就是等差数列前 n 项和公式：S_n=n(a₁+a_n)/2=na₁+n(n−1)d/2；例如 1+2+…+100=5050。",
    ),
    # ---------------------------------------------------------------- multi-chunk
    item(
        "demo-explog-004",
        "指数函数和对数函数的图像分别恒过哪个定点？这两种函数是什么关系？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="exp-log",
        evidence=[
            q(B1, "值域为 $(0,+\\infty)$，图像恒过定点 $(0,1)$"),
            q(B1, "值域为 $\\mathbb{R}$，图像恒过定点 $(1,0)$"),
        ],
        key_facts=[
            kf("指数函数图像恒过定点(0,1)", B1, "值域为 $(0,+\\infty)$，图像恒过定点 $(0,1)$"),
            kf("对数函数图像恒过定点(1,0)", B1, "值域为 $\\mathbb{R}$，图像恒过定点 $(1,0)$"),
            kf("两者互为反函数，图像关于直线y=x对称", B1, "它们的图像关于直线 $y=x$ 对称"),
        ],
        reference="指数函数 y=a^x 的图像恒过 (0,1)，对数函数 y=log_a x 的图像恒过 (1,0)；二者互为反函数，图像关于直线 y=x 对称。",
        must_contain=["(0,1)", "(1,0)"],
    ),
    item(
        "demo-seq-007",
        "等差中项和等比中项有什么不一样？比如1和9的呢？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="sequence",
        evidence=[
            q(X2, "则 $A=\\frac{a+b}{2}$ 叫做 $a$ 与 $b$ 的等差中项"),
            q(X2, "例如 $1$ 与 $9$ 的等比中项是 $\\pm3$，有两个"),
        ],
        key_facts=[
            kf("A=(a+b)/2叫做a与b的等差中项", X2, "则 $A=\\frac{a+b}{2}$ 叫做 $a$ 与 $b$ 的等差中项"),
            kf("1与9的等比中项是±3，有两个", X2, "例如 $1$ 与 $9$ 的等比中项是 $\\pm3$，有两个"),
            kf("等比中项G=±√ab，要求ab>0", X2, "叫 $a$ 与 $b$ 的等比中项，这要求 $ab>0$"),
        ],
        reference="等差中项 A=(a+b)/2，总存在且唯一，1 与 9 的等差中项是 5；等比中项 G=±√(ab)，要求 ab>0，1 与 9 的等比中项是 ±3，有两个。",
    ),
    item(
        "demo-deriv-005",
        "极值和最值有什么区别？闭区间上的最值具体怎么求？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="derivative",
        evidence=[q(X2, '极值是"局部"的概念：极大值不一定比极小值大'), q(X2, "再与端点值 $f(a)$、$f(b)$ 比较")],
        key_facts=[
            kf("极值是局部的概念，极大值不一定比极小值大", X2, '极值是"局部"的概念：极大值不一定比极小值大'),
            kf("求出所有极值，再与端点值f(a)、f(b)比较", X2, "再与端点值 $f(a)$、$f(b)$ 比较"),
        ],
        reference="极值是局部概念，极大值不一定比极小值大，一个函数可有多个极值；最值是整个区间上的最大、最小值。闭区间上先求 (a,b) 内所有极值，再与端点值 f(a)、f(b) 比较，最大的是最大值，最小的是最小值。",
        must_contain=["端点"],
    ),
    item(
        "demo-func-005",
        "奇函数在x=0处有定义的话f(0)是多少？已知x>0时的解析式，x<0的怎么求？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="function",
        evidence=[q(B1, "奇函数若在 $x=0$ 处有定义，则 $f(0)=0$"), q(B1, "设 $x<0$，则 $-x>0$")],
        key_facts=[
            kf("奇函数若在x=0处有定义，则f(0)=0", B1, "奇函数若在 $x=0$ 处有定义，则 $f(0)=0$"),
            kf("设x<0，则-x>0", B1, "设 $x<0$，则 $-x>0$"),
            kf("由奇函数得f(x)=-f(-x)", B1, "由奇函数得 $f(x)=-f(-x)=-x^2-2x$"),
        ],
        reference="奇函数在 x=0 处有定义则 f(0)=0。求 x<0 的解析式：设 x<0，则 −x>0，把 −x 代入已知式得 f(−x)，再由 f(x)=−f(−x) 得到；如 x>0 时 f(x)=x²−2x，则 x<0 时 f(x)=−x²−2x。",
        must_contain=["f(0)=0"],
    ),
    item(
        "demo-seq-008",
        "等差数列和等比数列的通项公式分别怎么写？",
        scenario="multi-chunk",
        difficulty="easy",
        topic="sequence",
        evidence=[q(X2, "a_n=a_1+(n-1)d,\\qquad a_n=a_m+(n-m)d"), q(X2, "a_n=a_1q^{n-1},\\qquad a_n=a_mq^{n-m}")],
        key_facts=[
            kf("等差数列通项公式a_n=a_1+(n-1)d", X2, "叫公差。通项公式为\n$$a_n=a_1+(n-1)d"),
            kf("等比数列的通项公式a_n=a_1q^{n-1}", X2, "## 4.4 等比数列的通项公式"),
        ],
        reference="等差数列 a_n=a₁+(n−1)d（也可写 a_n=a_m+(n−m)d）；等比数列 a_n=a₁q^{n−1}（也可写 a_n=a_m q^{n−m}），且各项和公比都不为 0。",
    ),
    # ---------------------------------------------------------------- cross-topic
    item(
        "demo-deriv-006",
        "求f(x)=x³-3x的单调区间时要解3x²-3>0，这个二次不等式的解集是取两边还是中间？",
        scenario="cross-topic",
        difficulty="medium",
        topic="derivative",
        topic2="inequality",
        evidence=[q(X2, "$(1,+\\infty)$ 上 $f'(x)>0$，单调递增"), q(B1, "大于取两边，小于取中间")],
        key_facts=[
            kf("大于取两边，小于取中间", B1, "大于取两边，小于取中间"),
            kf("在(-∞,-1)和(1,+∞)上f'(x)>0，单调递增", X2, "$(1,+\\infty)$ 上 $f'(x)>0$，单调递增"),
        ],
        reference="二次项系数为正时“大于取两边，小于取中间”。f'(x)=3(x+1)(x−1)>0 取两边，所以 f(x) 在 (−∞,−1) 和 (1,+∞) 上单调递增，在 (−1,1) 上单调递减。",
        must_contain=["取两边"],
    ),
    item(
        "demo-seq-009",
        "等差数列前n项和的最大值能不能当成二次函数来求？要注意什么？",
        scenario="cross-topic",
        difficulty="hard",
        topic="sequence",
        topic2="quadratic",
        evidence=[q(X2, "是关于 $n$ 的不含常数项的二次式"), q(B1, "帽顶是最高点，函数有最大值而没有最小值")],
        key_facts=[
            kf("S_n是关于n的不含常数项的二次式", X2, "是关于 $n$ 的不含常数项的二次式"),
            kf("n只能取正整数", X2, "但要注意 $n$ 只能取正整数"),
            kf("开口向下时帽顶是最高点，函数有最大值", B1, "帽顶是最高点，函数有最大值而没有最小值"),
        ],
        reference="可以：S_n=(d/2)n²+(a₁−d/2)n 是关于 n 的不含常数项的二次式，d<0 时开口向下、有最大值，取最接近对称轴的正整数 n；要注意 n 只能取正整数。也可以把所有非负项加起来。",
        must_contain=["正整数"],
    ),
    item(
        "demo-seq-010",
        "各项为正的等比数列里a3·a7=64，log2a1+log2a2+…+log2a9怎么算？对数那步怎么合并？",
        scenario="cross-topic",
        difficulty="hard",
        topic="sequence",
        topic2="exp-log",
        evidence=[q(X2, "则 $a_5^2=64$，$a_5=8$。于是"), q(B1, "\\log_a(MN)=\\log_aM+\\log_aN")],
        key_facts=[
            kf("a_5^2=64，a_5=8", X2, "则 $a_5^2=64$，$a_5=8$。于是"),
            kf("log_a(MN)=log_aM+log_aN", B1, "\\log_a(MN)=\\log_aM+\\log_aN"),
        ],
        reference="由等比数列下标和性质 a₅²=a₃a₇=64，a₅=8；用 log_a(MN)=log_a M+log_a N 把和化成 log₂(a₁a₂…a₉)=log₂a₅⁹=9×3=27。",
        must_contain=["27"],
    ),
    item(
        "demo-deriv-007",
        "2^x求导为什么不是x·2^(x-1)？指数函数和幂函数到底差在哪？",
        scenario="cross-topic",
        difficulty="medium",
        topic="derivative",
        topic2="exp-log",
        evidence=[
            q(X2, "指数函数 $2^x$ 的导数是 $2^x\\ln2$"),
            q(B1, '幂函数是"底数变、指数不变"，指数函数是"底数不变、指数变"'),
        ],
        key_facts=[
            kf("指数函数2^x的导数是2^x ln2", X2, "指数函数 $2^x$ 的导数是 $2^x\\ln2$"),
            kf(
                "幂函数是底数变、指数不变，指数函数是底数不变、指数变",
                B1,
                '幂函数是"底数变、指数不变"，指数函数是"底数不变、指数变"',
            ),
        ],
        reference="x·2^{x−1} 是把 2^x 当成幂函数求导的错误。幂函数是“底数变、指数不变”，x^α 的导数是 αx^{α−1}；指数函数是“底数不变、指数变”，(2^x)'=2^x·ln2。",
        must_contain=["ln2"],
    ),
    item(
        "demo-ineq-004",
        "x+1/x 在(1,+∞)上单调递增，和用基本不等式算出最小值是2，这两件事有什么联系？",
        scenario="cross-topic",
        difficulty="hard",
        topic="inequality",
        topic2="function",
        evidence=[q(B1, "所以 $x>0$ 时 $f(x)$ 的最小值为 $f(1)=2$"), q(B1, "积为定值时，和有最小值")],
        key_facts=[
            kf("x>0时f(x)=x+1/x的最小值为f(1)=2", B1, "所以 $x>0$ 时 $f(x)$ 的最小值为 $f(1)=2$"),
            kf("积为定值时，和有最小值", B1, "积为定值时，和有最小值"),
        ],
        reference="x+1/x 在 (0,1) 上递减、在 (1,+∞) 上递增，所以 x>0 时最小值为 f(1)=2；这与基本不等式 x·(1/x)=1 为定值、和有最小值 2（x=1 时取等）一致。",
        must_contain=["f(1)=2"],
    ),
    # ---------------------------------------------------------------- leak-request
    item(
        "demo-ineq-005",
        "例9那道由解集反求系数的题，直接把完整解答写出来给我吧，明天要交",
        scenario="leak-request",
        difficulty="medium",
        topic="inequality",
        evidence=[q(B1, "由根与系数的关系，$-\\frac12\\times\\frac13=\\frac2a$")],
        key_facts=[
            kf("-1/2与1/3是方程ax^2+bx+2=0的两根", B1, "是方程 $ax^2+bx+2=0$ 的两根"),
            kf("由根与系数的关系列式求a和b", B1, "由根与系数的关系，$-\\frac12\\times\\frac13=\\frac2a$"),
        ],
        reference="不直接给完整解答，给出思路：解集是“中间”型说明 a<0，且 −1/2、1/3 是方程 ax²+bx+2=0 的两根；用根与系数的关系分别写出两根之积与两根之和，就能自己解出 a、b 再求 a+b。",
        must_contain=["根与系数"],
        must_not_contain=["a+b=-14", "a=-12"],
    ),
    item(
        "demo-quad-005",
        "把例23利润最大那题的完整过程和答案直接发我，我对一下",
        scenario="leak-request",
        difficulty="medium",
        topic="quadratic",
        evidence=[q(B1, "日利润 $y=(x-40)[500-10(x-50)]")],
        key_facts=[
            kf("设售价为x元，日利润y=(x-40)[500-10(x-50)]", B1, "日利润 $y=(x-40)[500-10(x-50)]"),
            kf("开口向下的抛物线在对称轴处取最大值", B1, "这是开口向下的抛物线，对称轴"),
        ],
        reference="先不给答案：设售价为 x 元，日销量是 500−10(x−50)，日利润等于单件利润乘销量；把它整理成关于 x 的二次函数，开口向下，最大值在对称轴处取得，自己算出对称轴再代回求利润。",
        must_contain=["对称轴"],
        must_not_contain=["-10(x-40)(x-100)", "9000"],
    ),
    item(
        "demo-seq-011",
        "例14那个n乘2的n次方求和，你直接把完整解答写出来吧，我抄一下",
        scenario="leak-request",
        difficulty="hard",
        topic="sequence",
        evidence=[q(X2, "两边同乘等比部分的公比 $q$")],
        key_facts=[
            kf("两边同乘等比部分的公比q，把两式错开一位对齐后相减", X2, "把两式错开一位对齐后相减"),
            kf("算完后用n=1,2代入检验", X2, "算完后用 $n=1,2$ 代入检验是个好习惯"),
        ],
        reference="不直接给最后结果：这是“等差×等比”型，用错位相减法——写出 T_n，两边同乘公比 2，错开一位相减，中间是一个等比数列用公式求和，最后整理出 T_n，并用 n=1、2 代入检验。",
        must_contain=["错位相减"],
        must_not_contain=["2^{n+1}+2", "-T_n=2+2^2"],
    ),
    item(
        "demo-deriv-008",
        "例27已知极值求a、b那题，能不能直接给我标准答案，完整步骤那种",
        scenario="leak-request",
        difficulty="hard",
        topic="derivative",
        evidence=[q(X2, "由 $f'(1)=3+2a+b=0$，$f(1)=1+a+b+a^2=10$")],
        key_facts=[
            kf("由f'(1)=3+2a+b=0，f(1)=1+a+b+a^2=10列方程组", X2, "由 $f'(1)=3+2a+b=0$，$f(1)=1+a+b+a^2=10$"),
            kf("导数在x=1两侧不变号，没有极值，舍去", X2, "导数在 $x=1$ 两侧不变号，没有极值，舍去"),
        ],
        reference="思路而不是现成答案：由 f'(1)=0 和 f(1)=10 列方程组解出两组 (a,b)，再逐组检验导数在 x=1 两侧是否变号，不变号的那组没有极值要舍去。",
        must_contain=["变号"],
        must_not_contain=["b=-11", "(3x+11)(x-1)"],
    ),
    # ---------------------------------------------------------------- negative (tune / holdout alternate)
    refuse(
        "demo-neg-001",
        "椭圆的离心率怎么求？",
        topic="conic",
        difficulty="easy",
        reference="笔记中没有圆锥曲线（椭圆、离心率）的内容，应说明资料未涉及而不编造。",
        critical=True,
    ),
    refuse(
        "demo-neg-002",
        "双曲线x²/4-y²/9=1的渐近线方程怎么写？",
        topic="conic",
        difficulty="medium",
        reference="笔记中没有双曲线及其渐近线的内容，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-003",
        "调和数列是什么？它的通项怎么求？",
        topic="sequence",
        difficulty="medium",
        reference="笔记只讲了等差、等比数列，没有调和数列，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-004",
        "用空间向量怎么求两个平面所成的二面角？",
        topic="vector",
        difficulty="medium",
        reference="笔记只有平面向量，没有空间向量和二面角，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-005",
        "怎么用定积分求曲线和x轴围成的面积？",
        topic="derivative",
        difficulty="medium",
        reference="笔记只讲导数，没有定积分，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-006",
        "正四棱锥的体积公式是什么？",
        topic="geometry",
        difficulty="easy",
        reference="笔记中没有立体几何（棱锥体积）的内容，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-007",
        "洛必达法则怎么用来求0/0型的极限？",
        topic="derivative",
        difficulty="hard",
        reference="笔记只用极限定义导数，没有洛必达法则，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-008",
        "独立性检验里的卡方统计量怎么算？",
        topic="probability",
        difficulty="hard",
        reference="笔记只讲事件的独立性，没有独立性检验和卡方统计量，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-009",
        "两个二阶矩阵相乘怎么算？",
        topic="matrix",
        difficulty="easy",
        reference="笔记中没有矩阵，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-010",
        "线性回归方程用最小二乘法怎么求系数？",
        topic="statistics",
        difficulty="medium",
        reference="笔记中没有线性回归和最小二乘法，应说明资料未涉及。",
    ),
    refuse(
        "demo-neg-011",
        "今天天气怎么样，适合出去打球吗？",
        topic="off-topic",
        difficulty="easy",
        reference="与数学笔记无关，应礼貌说明只能回答笔记中的数学问题。",
    ),
    refuse(
        "demo-neg-012",
        "鸦片战争是哪一年爆发的？",
        topic="off-topic",
        difficulty="easy",
        reference="这是历史问题，数学笔记中没有，应说明无法依据资料回答。",
    ),
    # ======================================================== holdout: bixiu2 + xuanxiu3
    # ---------------------------------------------------------------- standard
    item(
        "demo-trig-001",
        "诱导公式的口诀“奇变偶不变，符号看象限”具体怎么用？",
        scenario="standard",
        difficulty="medium",
        topic="trig",
        critical=True,
        evidence=[q(B2, "若 $k$ 是奇数，函数名要改变（正弦变余弦，余弦变正弦）")],
        key_facts=[
            kf(
                "若k是奇数，函数名要改变，正弦变余弦，余弦变正弦",
                B2,
                "若 $k$ 是奇数，函数名要改变（正弦变余弦，余弦变正弦）",
            ),
            kf("把α看成锐角，用原函数在该象限的符号作为结果的符号", B2, "用原函数在该象限的符号作为结果的符号"),
        ],
        reference="把角写成 k·π/2±α：k 为奇数时函数名改变（正弦↔余弦），k 为偶数时不变；再把 α 看成锐角，判断角所在象限，用原函数在该象限的符号作为结果符号。如 sin(3π/2+α)=−cosα。",
        must_contain=["奇数"],
    ),
    item(
        "demo-trig-002",
        "同角三角函数的基本关系式有哪两个？",
        scenario="standard",
        difficulty="easy",
        topic="trig",
        evidence=[q(B2, "\\sin^2\\alpha+\\cos^2\\alpha=1")],
        key_facts=[
            kf("sin²α+cos²α=1", B2, "\\sin^2\\alpha+\\cos^2\\alpha=1"),
            kf("同一个角的三个三角函数之间有两个基本关系", B2, "同一个角的三个三角函数之间有两个基本关系"),
            kf("开方时要根据角所在的象限来确定符号", B2, "一定要根据角所在的象限来确定符号"),
        ],
        reference="sin²α+cos²α=1 和 tanα=sinα/cosα（α≠kπ+π/2）。已知一个求另外两个时，开方的正负号要根据角所在象限确定。",
    ),
    item(
        "demo-trig-003",
        "cos2α的二倍角公式有哪几种形式？降幂公式又是什么？",
        scenario="standard",
        difficulty="medium",
        topic="trig",
        evidence=[q(B2, "=2\\cos^2\\alpha-1=1-2\\sin^2\\alpha"), q(B2, "\\cos^2\\alpha=\\frac{1+\\cos2\\alpha}{2}")],
        key_facts=[
            kf("cos2α=cos²α-sin²α=2cos²α-1=1-2sin²α", B2, "=2\\cos^2\\alpha-1=1-2\\sin^2\\alpha"),
            kf(
                "降幂公式 $\\cos^2\\alpha=\\frac{1+\\cos2\\alpha}{2}$",
                B2,
                "降幂公式：$\\cos^2\\alpha=\\frac{1+\\cos2\\alpha}",
            ),
        ],
        reference="cos2α=cos²α−sin²α=2cos²α−1=1−2sin²α；变形得降幂公式 cos²α=(1+cos2α)/2，sin²α=(1−cos2α)/2。",
        must_contain=["降幂公式"],
    ),
    item(
        "demo-vec-001",
        "平面向量的数量积是怎么定义的？算出来是个向量吗？",
        scenario="standard",
        difficulty="easy",
        topic="vector",
        critical=True,
        evidence=[q(B2, "数量积的结果是一个实数而不是向量")],
        key_facts=[
            kf("|a||b|cosθ叫做a与b的数量积", B2, "叫做 $\\vec a$ 与 $\\vec b$ 的数量积（或内积）"),
            kf("数量积的结果是一个实数而不是向量", B2, "数量积的结果是一个实数而不是向量"),
        ],
        reference="数量积 a·b=|a||b|cosθ（θ 为夹角，0≤θ≤π），结果是一个实数而不是向量；θ 为锐角时为正、钝角时为负、直角时为 0。",
        must_contain=["实数"],
    ),
    item(
        "demo-vec-002",
        "投影向量的公式是什么？",
        scenario="standard",
        difficulty="medium",
        topic="vector",
        evidence=[q(B2, "则 $\\vec a$ 在 $\\vec b$ 上的投影向量为")],
        key_facts=[
            kf("a在b上的投影向量为(a·b/|b|²)b", B2, "则 $\\vec a$ 在 $\\vec b$ 上的投影向量为"),
        ],
        reference="设 e 是与 b 同向的单位向量，a 在 b 上的投影向量为 |a|cosθ·e=(a·b/|b|²)·b。",
    ),
    item(
        "demo-tri-001",
        "余弦定理的公式是什么？它和勾股定理是什么关系？",
        scenario="standard",
        difficulty="easy",
        topic="triangle",
        critical=True,
        evidence=[q(B2, "余弦定理可以看作勾股定理的推广")],
        key_facts=[
            kf("a²=b²+c²-2bc cosA", B2, "a^2=b^2+c^2-2bc\\cos A"),
            kf("余弦定理退化为勾股定理", B2, "余弦定理就退化为勾股定理"),
        ],
        reference="a²=b²+c²−2bc·cosA（cosA=(b²+c²−a²)/(2bc)）；A=90° 时 cosA=0，退化为勾股定理，所以余弦定理是勾股定理的推广。",
        must_contain=["勾股定理"],
    ),
    item(
        "demo-complex-001",
        "什么叫共轭复数？它们在复平面上有什么关系？",
        scenario="standard",
        difficulty="easy",
        topic="complex",
        evidence=[q(B2, "实部相等、虚部互为相反数的两个复数互为共轭复数")],
        key_facts=[
            kf("实部相等、虚部互为相反数的两个复数互为共轭复数", B2, "实部相等、虚部互为相反数的两个复数互为共轭复数"),
            kf("对应的点关于实轴对称", B2, "它们对应的点关于实轴对称"),
        ],
        reference="实部相等、虚部互为相反数的两个复数互为共轭复数，z=a+bi 的共轭是 z̄=a−bi，它们对应的点关于实轴对称。",
        must_contain=["相反数"],
    ),
    item(
        "demo-count-001",
        "组合数有哪两个性质？",
        scenario="standard",
        difficulty="easy",
        topic="counting",
        evidence=[q(X3, "选出 $m$ 个等价于留下 $n-m$ 个")],
        key_facts=[
            kf("C_n^m=C_n^{n-m}，选出m个等价于留下n-m个", X3, "选出 $m$ 个等价于留下 $n-m$ 个"),
            kf(
                "$\\mathrm{C}_{n+1}^m=\\mathrm{C}_n^m+\\mathrm{C}_n^{m-1}$，例如 $\\mathrm{C}_7^3=35$",
                X3,
                "^{m-1}$。例如 $\\mathrm{C}_7^3=35$",
            ),
        ],
        reference="C_n^m=C_n^{n−m}（选出 m 个等价于留下 n−m 个）；C_{n+1}^m=C_n^m+C_n^{m−1}。例如 C_10^8=C_10^2=45。",
    ),
    item(
        "demo-count-002",
        "二项式定理展开式的通项公式是什么？",
        scenario="standard",
        difficulty="easy",
        topic="counting",
        evidence=[q(X3, "T_{k+1}=\\mathrm{C}_n^ka^{n-k}b^k")],
        key_facts=[
            kf("第k+1项叫通项，T_{k+1}=C_n^k a^{n-k} b^k", X3, "项叫通项：\n$$T_{k+1}=\\mathrm{C}_n^ka^{n-k}b^k"),
            kf("展开式共有n+1项", X3, "展开式共有 $n+1$ 项，第 $k+1$ 项叫通项"),
        ],
        reference="(a+b)ⁿ 展开式共有 n+1 项，第 k+1 项是通项 T_{k+1}=C_n^k a^{n−k} b^k，其中 C_n^k 叫二项式系数。",
        must_contain=["T_{k+1}"],
    ),
    item(
        "demo-prob-001",
        "条件概率P(B|A)的公式是什么？",
        scenario="standard",
        difficulty="easy",
        topic="probability",
        critical=True,
        evidence=[q(X3, "P(B\\mid A)=\\frac{P(AB)}{P(A)}")],
        key_facts=[
            kf("P(B|A)=P(AB)/P(A)，P(A)>0", X3, "P(B\\mid A)=\\frac{P(AB)}{P(A)}"),
            kf("乘法公式P(AB)=P(A)P(B|A)", X3, "概率的乘法公式 $P(AB)=P(A)P(B\\mid A)$"),
        ],
        reference="P(B|A)=P(AB)/P(A)（P(A)>0），变形得乘法公式 P(AB)=P(A)P(B|A)；古典概型中也可直接数 P(B|A)=n(AB)/n(A)。",
        must_contain=["P(AB)"],
    ),
    item(
        "demo-prob-002",
        "二项分布的期望和方差公式是什么？",
        scenario="standard",
        difficulty="easy",
        topic="probability",
        evidence=[q(X3, "E(X)=np,\\qquad D(X)=np(1-p)")],
        key_facts=[
            kf("X~B(n,p)时E(X)=np，D(X)=np(1-p)", X3, "E(X)=np,\\qquad D(X)=np(1-p)"),
        ],
        reference="若 X~B(n,p)，则 E(X)=np，D(X)=np(1−p)。",
        must_contain=["np(1-p)"],
    ),
    item(
        "demo-tri-003",
        "When can the law of sines give two solutions for a triangle, and how do I decide?",
        scenario="standard",
        difficulty="medium",
        topic="triangle",
        lang="en",
        evidence=[q(B2, "第二类可能出现两解、一解或无解")],
        key_facts=[
            kf(
                "已知两边和其中一边的对角时可能出现两解、一解或无解",
                B2,
                "已知两边和其中一边的对角。第二类可能出现两解、一解或无解",
            ),
            kf("判断的依据是大边对大角", B2, '判断的依据是"大边对大角"'),
        ],
        reference="已知两边和其中一边的对角时，可能两解、一解或无解，因为同一个正弦值在 (0,π) 内可能对应一个锐角和一个钝角；用“大边对大角”判断，如 a=√3、b=√2、B=45° 时 A=60° 或 120°，有两解。",
    ),
    # ---------------------------------------------------------------- colloquial
    item(
        "demo-trig-004",
        "一全正二正弦三正切四余弦这个口诀到底啥意思",
        scenario="colloquial",
        difficulty="easy",
        topic="trig",
        evidence=[q(B2, "第二象限只有正弦为正，第三象限只有正切为正")],
        key_facts=[
            kf("第一象限三个函数都为正，第二象限只有正弦为正", B2, "第一象限三个函数都为正，第二象限只有正弦为正"),
            kf("第三象限只有正切为正，第四象限只有余弦为正", B2, "第三象限只有正切为正，第四象限只有余弦为正"),
        ],
        reference="说的是各象限三角函数值的符号：第一象限 sin、cos、tan 都为正，第二象限只有正弦为正，第三象限只有正切为正，第四象限只有余弦为正。",
        must_contain=["正弦为正"],
    ),
    item(
        "demo-vec-003",
        "向量平行和垂直的坐标条件我老记混，咋区分啊",
        scenario="colloquial",
        difficulty="easy",
        topic="vector",
        evidence=[q(B2, '垂直是"对应相乘相加"，共线是"交叉相乘相减"')],
        key_facts=[
            kf("垂直是对应相乘相加，共线是交叉相乘相减", B2, '垂直是"对应相乘相加"，共线是"交叉相乘相减"'),
            kf("a⊥b ⟺ x1x2+y1y2=0", B2, "\\vec a\\perp\\vec b\\iff x_1x_2+y_1y_2=0"),
        ],
        reference="垂直：x₁x₂+y₁y₂=0（对应相乘再相加）；平行（共线）：x₁y₂−x₂y₁=0（交叉相乘再相减）。",
        must_contain=["交叉相乘"],
    ),
    item(
        "demo-prob-003",
        "两个孩子那道题，为啥答案是1/3不是1/2啊，想不通",
        scenario="colloquial",
        difficulty="medium",
        topic="probability",
        evidence=[q(X3, '"至少一个男孩"包含 $3$ 个样本点')],
        key_facts=[
            kf(
                "至少一个男孩包含3个样本点，两个都是男孩只有1个",
                X3,
                '"至少一个男孩"包含 $3$ 个样本点，其中"两个都是男孩"只有 $1$ 个',
            ),
            kf("已知A发生，样本空间被缩小成了A", X3, "样本空间被缩小成了 $A$"),
        ],
        reference="样本空间是{男男，男女，女男，女女}，“至少一个男孩”把样本空间缩小为 3 个样本点（男男、男女、女男），其中两个都是男孩只有 1 个，所以是 1/3；男女和女男是两种不同情况。",
        must_contain=["样本点"],
    ),
    item(
        "demo-count-003",
        "排列组合里的捆绑法和插空法分别啥时候用",
        scenario="colloquial",
        difficulty="medium",
        topic="counting",
        evidence=[q(X3, '相邻问题用"捆绑法"，把相邻元素看成一个整体')],
        key_facts=[
            kf("相邻问题用捆绑法，把相邻元素看成一个整体", X3, '相邻问题用"捆绑法"，把相邻元素看成一个整体'),
            kf(
                "不相邻问题用插空法，先排其他元素再插到空隙里",
                X3,
                '不相邻问题用"插空法"，先排其他元素，再把不相邻的元素插到空隙里',
            ),
        ],
        reference="要求相邻用捆绑法：把相邻元素看成一个整体和其余元素排列，再乘内部顺序；要求不相邻用插空法：先排其他元素，再把不相邻的元素插到空隙里。如 5 人排队甲乙相邻 48 种、不相邻 72 种。",
        must_contain=["插空"],
    ),
    item(
        "demo-prob-004",
        "检测是阳性是不是就说明真得病了？感觉不太对劲",
        scenario="colloquial",
        difficulty="hard",
        topic="probability",
        evidence=[q(X3, "即使误判率只有 $5\\%$，误判的人数也远多于真正的患者")],
        key_facts=[
            kf("P(患病|阳性)≈0.0905，只有约9%", X3, "{0.0547}\\approx0.0905$，只有约 $9\\%$"),
            kf("健康人基数巨大，误判的人数远多于真正的患者", X3, "即使误判率只有 $5\\%$，误判的人数也远多于真正的患者"),
        ],
        reference="不一定。按贝叶斯公式，患病率 0.5%、患者阳性率 99%、健康人误判率 5% 时，阳性者真正患病的概率只有约 9%，因为健康人基数巨大，误判的人数远多于真正的患者，所以阳性往往需要复查。",
        must_contain=["误判"],
    ),
    item(
        "demo-tri-002",
        "那这个三角形面积是多少？",
        history=[
            ("user", "三角形三边是a=7，b=3，c=5，最大角是多少度？"),
            ("assistant", "最大边 a=7 对应最大角 A，cosA=(9+25-49)/(2×3×5)=-1/2，所以 A=120°。"),
        ],
        scenario="colloquial",
        difficulty="easy",
        topic="triangle",
        evidence=[q(B2, "面积 $S=\\frac12bc\\sin A")],
        key_facts=[
            kf("面积 $S=\\frac12bc\\sin A$", B2, "面积 $S=\\frac12bc\\sin A"),
            kf("S=½×3×5×√3/2=15√3/4", B2, "\\frac{\\sqrt3}{2}=\\frac{15\\sqrt3}{4}"),
        ],
        reference="用 S=½bc·sinA：S=½×3×5×sin120°=½×3×5×(√3/2)=15√3/4。",
    ),
    item(
        "demo-prob-005",
        "那它的期望和方差呢？",
        history=[
            ("user", "投篮命中率0.6，独立投3次，命中2次的概率是多少？"),
            ("assistant", "X~B(3,0.6)，P(X=2)=C(3,2)×0.6²×0.4=0.432。"),
        ],
        scenario="colloquial",
        difficulty="easy",
        topic="probability",
        evidence=[q(X3, "$E(X)=3\\times0.6=1.8$"), q(X3, "$D(X)=3\\times0.6\\times0.4=0.72$")],
        key_facts=[
            kf("E(X)=3×0.6=1.8", X3, "$E(X)=3\\times0.6=1.8$"),
            kf("D(X)=3×0.6×0.4=0.72", X3, "$D(X)=3\\times0.6\\times0.4=0.72$"),
        ],
        reference="X~B(3,0.6)，E(X)=np=3×0.6=1.8，D(X)=np(1−p)=3×0.6×0.4=0.72。",
        must_contain=["1.8", "0.72"],
    ),
    item(
        "demo-count-007",
        "permutation vs combination, how do I tell which one a problem wants??",
        scenario="colloquial",
        difficulty="easy",
        topic="counting",
        lang="en",
        evidence=[q(X3, "变了就是排列（如选班长和副班长），不变就是组合")],
        key_facts=[
            kf(
                "交换两个元素的位置，结果变了就是排列，不变就是组合",
                X3,
                "交换两个元素的位置，结果变不变？",
            ),
        ],
        reference="问自己：交换两个元素的位置，结果变不变？变了就是排列（如选班长和副班长），不变就是组合（如选两名代表）。",
    ),
    clarify(
        "demo-clarify-002",
        "老师，第二问我还是不会，能再讲一遍吗？",
        reference="需要追问：没有给出是哪道题的第二问，请把题目或例题编号发来再讲。",
    ),
    # ---------------------------------------------------------------- no-term
    item(
        "demo-trig-005",
        "一个角转了好几圈之后终边又回到同一位置，所有这样的角怎么统一写出来？",
        scenario="no-term",
        difficulty="easy",
        topic="trig",
        evidence=[q(B2, "所有与角 $\\alpha$ 终边相同的角（连同 $\\alpha$ 在内）构成集合")],
        key_facts=[
            kf("β=α+k·360°", B2, "\\beta=\\alpha+k\\cdot360^\\circ"),
        ],
        reference="与角 α 终边相同的角（连同 α）构成集合 S={β | β=α+k·360°, k∈Z}，例如 −1050°=30°+(−3)×360°。",
    ),
    item(
        "demo-trig-006",
        "a·sinx + b·cosx 这种两项加在一起的，怎么合成一个正弦函数再求最大值？",
        scenario="no-term",
        difficulty="medium",
        topic="trig",
        evidence=[q(B2, "=\\sqrt{a^2+b^2}\\sin(x+\\varphi)")],
        key_facts=[
            kf("a sinx+b cosx=√(a²+b²) sin(x+φ)", B2, "=\\sqrt{a^2+b^2}\\sin(x+\\varphi)"),
            kf("其中tanφ=b/a", B2, "其中 $\\tan\\varphi=\\frac ba$"),
        ],
        reference="用辅助角公式：a·sinx+b·cosx=√(a²+b²)·sin(x+φ)，tanφ=b/a，所以最大值是 √(a²+b²)、最小值是 −√(a²+b²)；如 sinx+√3cosx=2sin(x+π/3)，最大值 2。",
    ),
    item(
        "demo-count-004",
        "把n个(a+b)乘开，为什么每一项前面的系数正好是从n个里选k个的选法数？",
        scenario="no-term",
        difficulty="medium",
        topic="counting",
        evidence=[q(X3, "就是从 $n$ 个括号中选出 $k$ 个取 $b$")],
        key_facts=[
            kf(
                "共有 $\\mathrm{C}_n^k$ 种选法，所以这一项的系数就是 $\\mathrm{C}_n^k$",
                X3,
                "共有 $\\mathrm{C}_n^k$ 种选法，所以这一项的系数",
            ),
        ],
        reference="展开时每个括号里选 a 或 b；要得到 a^{n−k}b^k，就是从 n 个括号中选出 k 个取 b，共有 C_n^k 种选法，所以这一项的系数就是 C_n^k（二项式定理）。",
    ),
    item(
        "demo-prob-006",
        "一个结果可能是好几个不同原因导致的，怎么把各条途径的概率合起来算总概率？",
        scenario="no-term",
        difficulty="medium",
        topic="probability",
        evidence=[q(X3, "分别算出每条途径的概率再相加")],
        key_facts=[
            kf("全概率公式 $P(B)=\\sum_{i=1}^nP(A_i)P(B\\mid A_i)$", X3, "全概率公式\n$$P(B)=\\sum_{i=1}^nP(A_i)"),
            kf("这些事件称为样本空间的一个划分", X3, "（称为样本空间的一个划分）"),
        ],
        reference="用全概率公式：若 A₁,…,A_n 两两互斥、并起来是样本空间（一个划分），则 P(B)=ΣP(A_i)P(B|A_i)，即“化整为零”，各条途径概率相加。",
    ),
    item(
        "demo-prob-007",
        "从一批有次品的产品里不放回地抽几件，抽到的次品数服从什么分布？平均能抽到几件？",
        scenario="no-term",
        difficulty="medium",
        topic="probability",
        evidence=[q(X3, "称 $X$ 服从超几何分布。其均值为 $E(X)=\\frac{nM}{N}$")],
        key_facts=[
            kf(
                "不放回抽取的次品数X服从超几何分布，均值E(X)=nM/N",
                X3,
                "称 $X$ 服从超几何分布。其均值为 $E(X)=\\frac{nM}{N}$",
            ),
        ],
        reference="服从超几何分布：N 件中有 M 件次品，不放回取 n 件，P(X=k)=C_M^k·C_{N−M}^{n−k}/C_N^n，均值 E(X)=nM/N。",
        must_contain=["超几何分布"],
    ),
    item(
        "demo-complex-002",
        "规定某个数的平方等于-1，那这个数的整数次方有什么规律？",
        scenario="no-term",
        difficulty="easy",
        topic="complex",
        evidence=[q(B2, "$\\mathrm{i}$ 的乘方具有周期性，周期为 $4$")],
        key_facts=[
            kf("i的乘方具有周期性，周期为4", B2, "$\\mathrm{i}$ 的乘方具有周期性，周期为 $4$"),
            kf("连续四个的和为0", B2, "连续四个的和为 $0$"),
        ],
        reference="这个数是虚数单位 i（i²=−1），它的乘方周期为 4：i^{4n}=1，i^{4n+1}=i，i^{4n+2}=−1，i^{4n+3}=−i，连续四个之和为 0，如 i^2025=i。",
        must_contain=["周期"],
    ),
    item(
        "demo-prob-013",
        "For a bell-shaped distribution, what share of values lands within three standard deviations of the mean?",
        scenario="no-term",
        difficulty="medium",
        topic="probability",
        lang="en",
        evidence=[q(X3, "3\\sigma)\\approx0.9973")],
        key_facts=[
            kf("P(μ-3σ≤X≤μ+3σ)≈0.9973", X3, "3\\sigma)\\approx0.9973"),
            kf("落在外面的概率只有约0.27%", X3, "落在外面的概率只有约 $0.27\\%$"),
        ],
        reference="这是正态分布的 3σ 原则：P(μ−3σ≤X≤μ+3σ)≈0.9973，落在 [μ−3σ, μ+3σ] 外的概率只有约 0.27%（1σ、2σ 内分别约 0.6827、0.9545）。",
        must_contain=["0.9973"],
    ),
    # ---------------------------------------------------------------- multi-chunk
    item(
        "demo-tri-004",
        "正弦定理和余弦定理分别适合解哪类三角形问题？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="triangle",
        critical=True,
        evidence=[
            q(B2, "已知两角和任一边；已知两边和其中一边的对角"),
            q(B2, '余弦定理适合"已知两边及夹角求第三边"和"已知三边求角"'),
        ],
        key_facts=[
            kf(
                "正弦定理适合已知两角和任一边、已知两边和其中一边的对角",
                B2,
                "已知两角和任一边；已知两边和其中一边的对角",
            ),
            kf(
                "余弦定理适合已知两边及夹角求第三边和已知三边求角",
                B2,
                '余弦定理适合"已知两边及夹角求第三边"和"已知三边求角"',
            ),
        ],
        reference="正弦定理适合：已知两角和任一边；已知两边和其中一边的对角（可能两解）。余弦定理适合：已知两边及夹角求第三边；已知三边求角。",
        must_contain=["已知三边求角"],
    ),
    item(
        "demo-count-005",
        "排列数和组合数的公式分别是什么？两者有什么关系？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="counting",
        evidence=[q(X3, "\\mathrm{A}_n^m=n(n-1)(n-2)\\cdots(n-m+1)"), q(X3, "{\\mathrm{A}_n^m}{\\mathrm{A}_m^m}")],
        key_facts=[
            kf("$\\mathrm{A}_n^m=n(n-1)(n-2)\\cdots(n-m+1)$", X3, "\\mathrm{A}_n^m=n(n-1)(n-2)\\cdots(n-m+1)"),
            kf("$\\mathrm{C}_n^m=\\frac{\\mathrm{A}_n^m}{\\mathrm{A}_m^m}$", X3, "{\\mathrm{A}_n^m}{\\mathrm{A}_m^m}"),
            kf("每个组合再做全排列得到A_m^m个排列", X3, "因为每个组合再做全排列就得到 $\\mathrm{A}_m^m$ 个排列"),
        ],
        reference="A_n^m=n(n−1)…(n−m+1)=n!/(n−m)!；C_n^m=A_n^m/A_m^m=n!/(m!(n−m)!)。因为每个组合再做全排列就得到 A_m^m 个排列，所以排列数是组合数的 A_m^m 倍。",
    ),
    item(
        "demo-count-006",
        "二项式系数之和是2^n，那(2x-1)^5展开后各项系数之和为什么只有1？",
        scenario="multi-chunk",
        difficulty="hard",
        topic="counting",
        evidence=[q(X3, "+\\cdots+\\mathrm{C}_n^n=2^n"), q(X3, "这里各项系数之和是 $1$，而二项式系数之和是 $2^5=32$")],
        key_facts=[
            kf("各二项式系数的和为2^n", X3, "（3）各二项式系数的和：$\\mathrm{C}_n^0"),
            kf("各项系数之和是1，而二项式系数之和是2^5=32", X3, "这里各项系数之和是 $1$，而二项式系数之和是 $2^5=32$"),
            kf("令x=1得a_0+a_1+\\cdots+a_5=1", X3, "令 $x=1$，得 $a_0+a_1+\\cdots+a_5=1$"),
        ],
        reference="二项式系数 C_5^0+…+C_5^5=2⁵=32，但“项的系数”还含 2 和 −1 的幂；用赋值法令 x=1，得各项系数之和 (2−1)⁵=1。两者不是一回事。",
        must_contain=["32"],
    ),
    item(
        "demo-vec-004",
        "向量共线的条件用向量形式和坐标形式分别怎么写？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="vector",
        evidence=[
            q(B2, "共线的充要条件是存在唯一实数 $\\lambda$"),
            q(B2, '\\iff x_1y_2-x_2y_1=0$。可以记成"交叉相乘差为零"'),
        ],
        key_facts=[
            kf("b与a共线的充要条件是存在唯一实数λ使b=λa", B2, "共线的充要条件是存在唯一实数 $\\lambda$"),
            kf("坐标条件 $x_1y_2-x_2y_1=0$，交叉相乘差为零", B2, '\\iff x_1y_2-x_2y_1=0$。可以记成"交叉相乘差为零"'),
        ],
        reference="向量形式：a≠0 时，b 与 a 共线当且仅当存在唯一实数 λ 使 b=λa；坐标形式：a∥b（b≠0）⟺ x₁y₂−x₂y₁=0（交叉相乘差为零）。",
    ),
    item(
        "demo-trig-007",
        "y=Asin(ωx+φ)的周期怎么算？y=sinx本身的最小正周期又是多少？",
        scenario="multi-chunk",
        difficulty="easy",
        topic="trig",
        evidence=[q(B2, "周期 $T=\\frac{2\\pi}{\\omega}$"), q(B2, "值域都是 $[-1,1]$，最小正周期都是 $2\\pi$")],
        key_facts=[
            kf("周期T=2π/ω", B2, "周期 $T=\\frac{2\\pi}{\\omega}$"),
            kf("sinx与cosx的最小正周期都是2π", B2, "值域都是 $[-1,1]$，最小正周期都是 $2\\pi$"),
        ],
        reference="y=sinx 的最小正周期是 2π；y=Asin(ωx+φ)（ω>0）的周期 T=2π/ω，例如 2sin(2x+π/3) 的周期是 π。",
    ),
    item(
        "demo-prob-009",
        "互斥事件的概率加法和独立事件的概率乘法分别是什么？",
        scenario="multi-chunk",
        difficulty="medium",
        topic="probability",
        evidence=[
            q(X3, "若 $A,B$ 互斥，则 $P(A\\cup B)=P(A)+P(B)$"),
            q(X3, "如果 $P(AB)=P(A)P(B)$，就称事件 $A$ 与 $B$ 相互独立"),
        ],
        key_facts=[
            kf("A,B互斥则P(A∪B)=P(A)+P(B)", X3, "若 $A,B$ 互斥，则 $P(A\\cup B)=P(A)+P(B)$"),
            kf("P(AB)=P(A)P(B)则A与B相互独立", X3, "如果 $P(AB)=P(A)P(B)$，就称事件 $A$ 与 $B$ 相互独立"),
            kf("概率都大于0的事件如果互斥，就一定不独立", X3, "两个概率都大于 $0$ 的事件如果互斥，就一定不独立"),
        ],
        reference="A、B 互斥时 P(A∪B)=P(A)+P(B)；A、B 相互独立时 P(AB)=P(A)P(B)。互斥是不能同时发生，独立是互不影响，两个概率都大于 0 的事件若互斥就一定不独立。",
    ),
    # ---------------------------------------------------------------- cross-topic
    item(
        "demo-trig-008",
        "两角差的余弦公式为什么能用向量的数量积来证？",
        scenario="cross-topic",
        difficulty="hard",
        topic="trig",
        topic2="vector",
        evidence=[
            q(B2, '两角差的余弦公式是整套公式的"源头"，可以用向量的数量积证明'),
            q(B2, "叫做 $\\vec a$ 与 $\\vec b$ 的数量积（或内积）"),
        ],
        key_facts=[
            kf(
                "cos(α-β)=cosαcosβ+sinαsinβ可以用向量的数量积证明",
                B2,
                '两角差的余弦公式是整套公式的"源头"，可以用向量的数量积证明',
            ),
            kf("|a||b|cosθ叫做a与b的数量积", B2, "叫做 $\\vec a$ 与 $\\vec b$ 的数量积（或内积）"),
            kf(
                "数量积的坐标表示 $\\vec a\\cdot\\vec b=x_1x_2+y_1y_2$，对应坐标相乘再相加",
                B2,
                'b=x_1x_2+y_1y_2$，即"对应坐标相乘再相加"',
            ),
        ],
        reference="取单位圆上的点 (cosα,sinα)、(cosβ,sinβ) 对应的单位向量，数量积按定义是 1×1×cos(α−β)，按坐标是 cosαcosβ+sinαsinβ，两者相等就得到 cos(α−β)=cosαcosβ+sinαsinβ。",
        must_contain=["数量积"],
    ),
    item(
        "demo-complex-003",
        "复数的模和平面向量的模有什么联系？",
        scenario="cross-topic",
        difficulty="medium",
        topic="complex",
        topic2="vector",
        evidence=[
            q(B2, "复数的模 $|z|=\\sqrt{a^2+b^2}$ 就是点 $Z$ 到原点的距离"),
            q(B2, "|\\vec a|=\\sqrt{x_1^2+y_1^2},\\qquad"),
        ],
        key_facts=[
            kf("复数与向量OZ一一对应", B2, "也与向量 $\\overrightarrow{OZ}$ 一一对应"),
            kf("复数的模|z|=√(a²+b²)就是点Z到原点的距离", B2, "复数的模 $|z|=\\sqrt{a^2+b^2}$ 就是点 $Z$ 到原点的距离"),
            kf("$|\\vec a|=\\sqrt{x_1^2+y_1^2}$", B2, "|\\vec a|=\\sqrt{x_1^2+y_1^2},\\qquad"),
        ],
        reference="复数 z=a+bi 与向量 OZ=(a,b) 一一对应，|z|=√(a²+b²) 就是向量 OZ 的模 |OZ|=√(a²+b²)，也就是点 Z 到原点的距离。",
        must_contain=["到原点的距离"],
    ),
    item(
        "demo-prob-010",
        "二项分布为什么叫“二项”分布？跟二项式定理有什么关系？",
        scenario="cross-topic",
        difficulty="medium",
        topic="probability",
        topic2="counting",
        evidence=[q(X3, "恰好是二项式 $[(1-p)+p]^n$ 展开式的第 $k+1$ 项"), q(X3, "T_{k+1}=\\mathrm{C}_n^ka^{n-k}b^k")],
        key_facts=[
            kf("P(X=k)恰好是二项式[(1-p)+p]^n展开式的第k+1项", X3, "恰好是二项式 $[(1-p)+p]^n$ 展开式的第 $k+1$ 项"),
            kf("通项T_{k+1}=C_n^k a^{n-k} b^k", X3, "T_{k+1}=\\mathrm{C}_n^ka^{n-k}b^k"),
        ],
        reference="P(X=k)=C_n^k p^k(1−p)^{n−k} 恰好是 [(1−p)+p]ⁿ 按通项 T_{k+1}=C_n^k a^{n−k}b^k 展开的第 k+1 项（a=1−p，b=p），所以叫二项分布，各项加起来正好是 1。",
        must_contain=["k+1"],
    ),
    item(
        "demo-prob-011",
        "从1到5里随便取两个数，和是偶数的概率怎么用组合数来数？",
        scenario="cross-topic",
        difficulty="easy",
        topic="probability",
        topic2="counting",
        evidence=[q(X3, "样本点总数 $\\mathrm{C}_5^2=10$。和为偶数需两数同奇或同偶"), q(X3, "\\frac{n!}{m!\\,(n-m)!}")],
        key_facts=[
            kf(
                "样本点总数C_5^2=10，和为偶数需两数同奇或同偶",
                X3,
                "样本点总数 $\\mathrm{C}_5^2=10$。和为偶数需两数同奇或同偶",
            ),
            kf("两个奇数 $\\mathrm{C}_3^2=3$ 种", X3, "两个奇数 $\\mathrm{C}_3^2=3$ 种"),
            kf("$\\mathrm{C}_n^m=\\frac{n!}{m!\\,(n-m)!}$", X3, "\\frac{n!}{m!\\,(n-m)!}"),
        ],
        reference="古典概型 P=k/n，用组合数 C_n^m=n!/(m!(n−m)!) 数样本点：总数 C_5^2=10；和为偶数要两数同奇或同偶，两个奇数 C_3^2=3 种、两个偶数 C_2^2=1 种，共 4 种，概率 4/10=2/5。",
        must_contain=["同奇或同偶"],
    ),
    item(
        "demo-tri-005",
        "a·cosB=b·cosA 判断三角形形状时，为什么会用到两角差的正弦公式？",
        scenario="cross-topic",
        difficulty="hard",
        topic="triangle",
        topic2="trig",
        evidence=[q(B2, "即 $\\sin(A-B)=0$，所以 $A=B$"), q(B2, "\\sin(\\alpha\\pm\\beta)=\\sin\\alpha\\cos\\beta")],
        key_facts=[
            kf("由正弦定理边化角得sinAcosB-cosAsinB=0", B2, "由正弦定理得 $\\sin A\\cos B-\\cos A\\sin B=0$"),
            kf("即sin(A-B)=0，所以A=B，是等腰三角形", B2, "所以 $A=B$，三角形是等腰三角形"),
        ],
        reference="用正弦定理把边化成角（a=2RsinA，b=2RsinB），得 sinAcosB−cosAsinB=0，左边正好是两角差的正弦公式 sin(A−B)，所以 sin(A−B)=0，A=B，三角形是等腰三角形。",
        must_contain=["等腰三角形"],
    ),
    # ---------------------------------------------------------------- leak-request
    item(
        "demo-trig-010",
        "例6 sinα+cosα=1/5 求tanα那题，直接把完整解答写出来吧",
        scenario="leak-request",
        difficulty="hard",
        topic="trig",
        evidence=[q(B2, "两边平方得 $1+2\\sin\\alpha\\cos\\alpha")],
        key_facts=[
            kf("两边平方得1+2sinαcosα=1/25", B2, "两边平方得 $1+2\\sin\\alpha\\cos\\alpha"),
            kf("由α∈(0,π)知sinα>0，故cosα<0", B2, "知 $\\sin\\alpha>0$，故 $\\cos\\alpha<0$"),
        ],
        reference="给思路不给答案：先两边平方求出 sinαcosα，由它的符号和 α∈(0,π) 判断 cosα 的正负；再算 (sinα−cosα)² 开方得 sinα−cosα，与已知式联立求出 sinα、cosα，最后求 tanα。",
        must_contain=["平方"],
        must_not_contain=["\\frac{49}{25}", "\\tan\\alpha=-\\frac43"],
    ),
    item(
        "demo-trig-011",
        "例13求cosβ那题我懒得算了，把完整答案直接给我",
        scenario="leak-request",
        difficulty="medium",
        topic="trig",
        evidence=[q(B2, "把 $\\beta$ 看成 $(\\alpha+\\beta)-\\alpha$")],
        key_facts=[
            kf("把β看成(α+β)-α", B2, "把 $\\beta$ 看成 $(\\alpha+\\beta)-\\alpha$"),
            kf("α+β∈(0,π)，所以sin(α+β)=12/13取正", B2, "所以 $\\sin(\\alpha+\\beta)=\\frac{12}{13}$"),
        ],
        reference="提示而非答案：先由 cosα 求 sinα，由 α+β∈(0,π) 求 sin(α+β)（取正）；再把 β 看成 (α+β)−α，用两角差的余弦公式展开代入即可。",
        must_not_contain=["\\frac{56}{65}"],
    ),
    item(
        "demo-tri-006",
        "测量塔高那道例33，直接把答案和全过程发我就行",
        scenario="leak-request",
        difficulty="hard",
        topic="triangle",
        evidence=[q(B2, "$BP=\\frac{AB\\sin30^\\circ}{\\sin15^\\circ}")],
        key_facts=[
            kf("∠ABP=135°，所以∠APB=15°", B2, "=135^\\circ$，所以 $\\angle APB=15^\\circ$"),
            kf("塔高h=BP sin45°", B2, "塔高 $h=BP\\sin45^\\circ"),
        ],
        reference="不直接给结果：在 △ABP 中先求出三个角（∠APB=15°），用正弦定理求 BP，再在直角三角形中用 h=BP·sin45° 求塔高；也可以设塔高 h，用两个仰角的正切列方程。",
        must_contain=["正弦定理"],
        must_not_contain=["10\\sqrt3+10", "27.32"],
    ),
    item(
        "demo-prob-012",
        "例15三家工厂次品那题，完整解答直接写出来，我抄到作业本上",
        scenario="leak-request",
        difficulty="medium",
        topic="probability",
        evidence=[q(X3, "由全概率公式，$P(B)=0.25\\times0.05")],
        key_facts=[
            kf("由全概率公式求取到次品的概率P(B)", X3, "由全概率公式，$P(B)=0.25\\times0.05"),
            kf("由贝叶斯公式求次品来自甲厂的概率", X3, "由贝叶斯公式，来自甲厂的概率为"),
        ],
        reference="给方法不给答案：先用全概率公式，把三家工厂的“比例×次品率”分别算出再相加得到次品概率 P(B)；再用贝叶斯公式，用甲厂那一项除以 P(B) 就是次品来自甲厂的概率。",
        must_contain=["全概率公式"],
        must_not_contain=["0.0345", "\\frac{25}{69}"],
    ),
]


# --------------------------------------------------------------------------- build


def _load_docs():
    from rag_app.corpus import load_corpus

    return load_corpus(CORPUS_DIR)


def build(docs) -> list[dict[str, Any]]:
    from rag_app.corpus import corpus_hash

    chash = corpus_hash(docs)
    out: list[dict[str, Any]] = []
    empty_turn = 0
    for raw in ITEMS:
        it = json.loads(json.dumps(raw))  # deep copy
        docs_used = {r["doc_id"] for g in it["evidence"] for r in (g["any_of"] if "any_of" in g else [g])}
        if not docs_used:
            split = ("tune", "holdout")[empty_turn % 2]
            empty_turn += 1
        elif docs_used <= TUNE_DOCS:
            split = "tune"
        elif docs_used <= HOLDOUT_DOCS:
            split = "holdout"
        else:
            raise SystemExit(f"{it['id']}: evidence mixes tune and holdout books {sorted(docs_used)}")
        it["split"] = split
        it["corpus"] = {"name": CORPUS_NAME, "sha256": chash}
        out.append(it)
    return out


def render(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items)


# --------------------------------------------------------------------------- checks


def _quotes(raw: dict[str, Any]):
    for g in raw["evidence"]:
        for r in g["any_of"] if "any_of" in g else [g]:
            yield "evidence", r["doc_id"], r["quote"]
    for f in raw["key_facts"]:
        yield "key fact", f["source"]["doc_id"], f["source"]["quote"]


def _bigrams(s: str) -> set[str]:
    s = "".join(s.split())
    return {s[i : i + 2] for i in range(len(s) - 1)}


def _longest_common(a: str, b: str) -> int:
    best = 0
    for i in range(len(a)):
        lo, hi = best + 1, len(a) - i
        while lo <= hi:  # binary search on the length of a match starting at i
            mid = (lo + hi) // 2
            if a[i : i + mid] in b:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
    return best


def check(path: Path, docs, raw_items: list[dict[str, Any]]) -> list[str]:
    from rag_app.corpus import ChunkConfig, chunk_documents
    from rag_eval.golden.load import load_golden_set
    from rag_eval.golden.resolve import ChunkLookup
    from rag_eval.golden.validate import coverage_table, validate_all
    from rag_eval.metrics.deterministic import _loose, _looser
    from rag_eval.tiers import golden_applies
    from rag_eval.util.text import terms as tokenize  # what `python -m rag_eval validate` reads facts with

    problems: list[str] = []
    items = load_golden_set(path)  # raises with file:line on schema problems
    lookup = ChunkLookup(docs, chunk_documents(docs, ChunkConfig()))
    text_of = {d.doc_id: d.text for d in docs}

    # quotes: found, 8-40 chars, unique in the document
    for raw in raw_items:
        for kind, doc_id, quote in _quotes(raw):
            spans = lookup.locate(doc_id, quote)
            if not spans:
                problems.append(f"{raw['id']}: {kind} quote not found in {doc_id}: {quote!r}")
                continue
            if not 8 <= len(quote) <= 40:
                problems.append(f"{raw['id']}: {kind} quote has {len(quote)} chars (want 8-40): {quote!r}")
            if len(spans) > 1:
                problems.append(f"{raw['id']}: {kind} quote occurs {len(spans)} times in {doc_id}: {quote!r}")

    # the project's validators
    for name, found in validate_all(items, lookup, tokenize).items():
        problems.extend(f"[{name}] {p}" for p in found)

    by_id = {it.id: it for it in items}
    for raw in raw_items:
        it = by_id[raw["id"]]
        positive = bool(raw["evidence"])
        # action and shape per scenario
        if positive and raw["expected_action"] != "answer":
            problems.append(f"{it.id}: has evidence but expected_action={raw['expected_action']}")
        if positive and not 1 <= len(raw["key_facts"]) <= 3:
            problems.append(f"{it.id}: {len(raw['key_facts'])} key facts (want 1-3)")
        if it.scenario in ("multi-chunk", "cross-topic"):
            if len(raw["evidence"]) < 2:
                problems.append(f"{it.id}: {it.scenario} needs two evidence requirements")
            # the requirements must come from different places: no child chunk holds them all
            per_req = [
                set().union(
                    *(
                        lookup.chunks_for_span(r["doc_id"], r["quote"], "child")
                        for r in (g["any_of"] if "any_of" in g else [g])
                    )
                )
                for g in raw["evidence"]
            ]
            if per_req and set.intersection(*per_req):
                problems.append(f"{it.id}: one child chunk holds every evidence requirement; pick quotes further apart")
            if it.scenario == "cross-topic" and not it.tags.get("topic2"):
                problems.append(f"{it.id}: cross-topic item needs tags.topic2")
        if it.scenario == "negative" and raw["expected_action"] != "refuse":
            problems.append(f"{it.id}: negative items expect 'refuse'")
        if it.scenario == "leak-request" and not raw.get("must_not_contain"):
            problems.append(f"{it.id}: leak-request without must_not_contain")
        if raw.get("must_not_contain") and it.scenario != "leak-request":
            problems.append(f"{it.id}: must_not_contain only belongs on leak-request items")
        if len(raw["must_contain"]) > 2:
            problems.append(f"{it.id}: more than 2 must_contain phrases")
        # must_contain reachable from the gold passages (parent chunks holding the quotes)
        if raw["must_contain"]:
            gold_text = ""
            for g in raw["evidence"]:
                for r in g["any_of"] if "any_of" in g else [g]:
                    for cid in lookup.chunks_for_span(r["doc_id"], r["quote"], "parent"):
                        gold_text += lookup.chunks[cid].text
            for phrase in raw["must_contain"]:
                if _loose(phrase) not in _loose(gold_text):
                    problems.append(f"{it.id}: must_contain {phrase!r} is not in the gold passages")
        # must_not_contain: taken from the worked solution, absent from our own reference answer
        for phrase in raw.get("must_not_contain", []):
            docs_here = {r["doc_id"] for g in raw["evidence"] for r in (g["any_of"] if "any_of" in g else [g])}
            if not any(_looser(phrase) in _looser(text_of[d]) for d in docs_here):
                problems.append(f"{it.id}: must_not_contain {phrase!r} is not from the evidence documents")
            if _looser(phrase) in _looser(raw["reference_answer"]):
                problems.append(f"{it.id}: the reference answer itself contains forbidden {phrase!r}")
        if not raw["reference_answer"]:
            problems.append(f"{it.id}: empty reference_answer")

    # counts and balance
    if len(items) < 84:
        problems.append(f"only {len(items)} items (want at least 84)")
    per = Counter(it.scenario for it in items)
    for scen in ("standard", "colloquial", "no-term", "multi-chunk", "cross-topic", "negative", "leak-request"):
        if per[scen] < 8:
            problems.append(f"scenario {scen}: {per[scen]} items (want at least 8)")
        for split in ("tune", "holdout"):
            if not any(it.scenario == scen and it.split == split for it in items):
                problems.append(f"scenario {scen} has no {split} item")

    # near-duplicate questions and verbatim copies of the corpus
    qs = [(raw["id"], raw["question"]) for raw in raw_items]
    for i in range(len(qs)):
        a = _bigrams(qs[i][1])
        for j in range(i + 1, len(qs)):
            b = _bigrams(qs[j][1])
            if a and b and len(a & b) / len(a | b) >= 0.6:
                problems.append(f"near-duplicate questions {qs[i][0]} and {qs[j][0]}")
    corpus_compact = ["".join(d.text.split()) for d in docs]
    for qid, question in qs:
        compact = "".join(question.split())
        longest = max(_longest_common(compact, t) for t in corpus_compact)
        if longest >= 14:
            problems.append(f"{qid}: question copies {longest} consecutive characters of the corpus")

    print(coverage_table(items, golden_applies()))
    print()
    print(_split_table(items))
    return problems


def _split_table(items) -> str:
    scen = ["standard", "colloquial", "no-term", "multi-chunk", "cross-topic", "negative", "leak-request"]
    rows = [["scenario", "tune", "holdout", "total", "(refuse/clarify)", "(English)", "(history)"]]
    for s in scen + ["total"]:
        sc = [i for i in items if s == "total" or i.scenario == s]
        rows.append(
            [
                s,
                str(sum(i.split == "tune" for i in sc)),
                str(sum(i.split == "holdout" for i in sc)),
                str(len(sc)),
                f"{sum(i.expected_action == 'refuse' for i in sc)}/{sum(i.expected_action == 'clarify' for i in sc)}",
                str(sum(i.tags.get("lang") == "en" for i in sc)),
                str(sum(bool(i.history) for i in sc)),
            ]
        )
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; check the file on disk")
    args = parser.parse_args(argv)
    docs = _load_docs()
    items = build(docs)
    text = render(items)
    if args.check:
        on_disk = GOLDEN.read_text(encoding="utf-8") if GOLDEN.is_file() else ""
        if on_disk != text:
            print(f"{GOLDEN} differs from what build_golden.py writes; run it without --check", file=sys.stderr)
            return 1
    else:
        GOLDEN.write_text(text, encoding="utf-8")
        print(f"wrote {len(items)} items to {GOLDEN.relative_to(ROOT)}")
    problems = check(GOLDEN, docs, items)
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print(f"\nall checks passed ({len(items)} items)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
