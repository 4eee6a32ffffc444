"""The offline extractive baseline: sentence choice, [n] markers, refusal, maths safety."""

from __future__ import annotations

import re

import pytest

from rag_app.generation.extractive import ExtractiveGenerator, bigram_tokenize, split_sentences
from rag_app.generation.sources import REFUSAL_TEXT, cited_numbers
from rag_app.interfaces import Generator
from rag_app.types import Chunk, Usage


def _chunk(cid: str, text: str) -> Chunk:
    return Chunk(cid, f"d-{cid}", text, "child", None, "必修", "节", 1, 1, 0, len(text))


def words(text: str) -> list[str]:
    """A tokenizer whose overlaps are easy to count by hand."""
    return re.findall(r"[a-z]+", text.lower())


MATHS = (
    _chunk("c1", "二次函数的顶点式是 $y=a(x-h)^2+k$。它的图像是抛物线。"),
    _chunk("c2", "等比数列的公比为 $q$。当 $q=1$ 时，前 $n$ 项和为 $S_n=na_1$。"),
)


def test_answers_with_the_matching_sentences_and_their_markers() -> None:
    gen = ExtractiveGenerator()
    answer, usage = gen.generate("等比数列前n项和公式在公比等于1时是什么？", MATHS)
    # s1 shares 等比/比数/数列/公比, s2 shares 项和/n/1; nothing in c1 matches.
    assert answer == "等比数列的公比为 $q$。 [2] 当 $q=1$ 时，前 $n$ 项和为 $S_n=na_1$。 [2]"
    assert usage == Usage()
    assert cited_numbers(answer) == [2]


def test_every_output_sentence_is_verbatim_from_the_chunk_it_cites() -> None:
    context = (*MATHS, _chunk("c3", "The law of cosines: $c^2=a^2+b^2-2ab\\cos C$. It generalises Pythagoras."))
    answer, _ = ExtractiveGenerator().generate("What is the law of cosines used for?", context)
    pieces = re.findall(r"(.+?) \[(\d+)\](?: |$)", answer)
    assert pieces, answer
    for sentence, n in pieces:
        assert sentence in context[int(n) - 1].text
    assert answer == "The law of cosines: $c^2=a^2+b^2-2ab\\cos C$. [3]"  # only law + cosines overlap


def test_is_deterministic_and_named() -> None:
    gen = ExtractiveGenerator()
    assert gen.name == "extractive-baseline" and gen.deterministic is True
    assert isinstance(gen, Generator)
    q = "二次函数顶点式"
    assert gen.generate(q, MATHS) == gen.generate(q, MATHS) == ExtractiveGenerator().generate(q, MATHS)


@pytest.mark.parametrize("question", ["三角恒等变换", "what is the", "？？"])
def test_refuses_when_nothing_overlaps(question: str) -> None:
    assert ExtractiveGenerator().generate(question, MATHS) == (REFUSAL_TEXT, Usage())


def test_refuses_on_empty_context() -> None:
    assert ExtractiveGenerator().generate("二次函数", ()) == (REFUSAL_TEXT, Usage())


def test_ties_go_to_the_earlier_chunk_then_the_earlier_sentence() -> None:
    one = ExtractiveGenerator(words, max_sentences=1, min_sentences=1)
    chunks = (_chunk("a", "p gamma. q alpha."), _chunk("b", "r alpha. s gamma."))
    # "q alpha." and "r alpha." score the same; chunk a comes first
    assert one.generate("alpha", chunks)[0] == "q alpha. [1]"
    assert one.generate("alpha", (_chunk("a", "p alpha. q alpha."),))[0] == "p alpha. [1]"


def test_best_sentences_come_back_in_context_order() -> None:
    gen = ExtractiveGenerator(words)
    chunks = (_chunk("a", "x alpha. y beta. z gamma."), _chunk("b", "w alpha. v beta."))
    # 5 sentences; df(alpha)=df(beta)=2, df(gamma)=1, so idf = ln(1+5/2)=1.25 vs ln(1+5/1)=1.79:
    # "z gamma." ranks first, then the tied 1.25s in position order: "x alpha.", "y beta."
    answer, _ = gen.generate("alpha beta gamma", chunks)
    assert answer == "x alpha. [1] y beta. [1] z gamma. [1]"


def test_weak_third_sentence_is_dropped() -> None:
    gen = ExtractiveGenerator(words, max_sentences=3, min_sentences=2, min_relative_score=0.3)
    chunks = (_chunk("a", "alpha beta gamma delta here. alpha only. beta only."),)
    # N=3: idf(alpha)=idf(beta)=ln(1+3/2)=0.92, idf(gamma)=idf(delta)=ln(1+3/1)=1.39
    # scores 2*0.92+2*1.39=4.60, 0.92, 0.92; the 2nd is kept (min_sentences=2), the 3rd
    # is below 0.3*4.60=1.38 and dropped.
    assert gen.generate("alpha beta gamma delta", chunks)[0] == "alpha beta gamma delta here. [1] alpha only. [1]"


def test_sentence_repeated_by_overlapping_chunks_is_cited_once_to_the_first() -> None:
    chunks = (_chunk("a", "A shared alpha sentence. other words."), _chunk("b", "A shared alpha sentence. more beta."))
    answer, _ = ExtractiveGenerator(words).generate("alpha beta", chunks)
    assert answer == "A shared alpha sentence. [1] more beta. [2]"


def test_duplicate_chunks_keep_the_prompt_numbering() -> None:
    a, b = _chunk("a", "nothing here."), _chunk("b", "alpha is here.")
    answer, _ = ExtractiveGenerator(words).generate("alpha", (a, a, b))
    assert answer == "alpha is here. [2]"  # a is [1] once; b is [2], as in build_sources


def test_custom_tokenizer_is_used() -> None:
    calls: list[str] = []

    def tok(text: str) -> list[str]:
        calls.append(text)
        return ["same"]  # everything matches everything equally -> position decides

    answer, _ = ExtractiveGenerator(tok, max_sentences=2).generate("q", MATHS)
    assert calls[0] == "q"
    assert answer == "二次函数的顶点式是 $y=a(x-h)^2+k$。 [1] 它的图像是抛物线。 [1]"


def test_formulas_are_never_split() -> None:
    assert split_sentences("已知 $a. b? c。d$ 成立。下一句!") == ["已知 $a. b? c。d$ 成立。", "下一句!"]
    assert split_sentences("公式 $$x = 1;\ny = 2$$ 如上。然后") == ["公式 $$x = 1;\ny = 2$$ 如上。", "然后"]
    assert split_sentences("由 \\(a. b\\) 得。") == ["由 \\(a. b\\) 得。"]


def test_sentence_splitting_rules() -> None:
    assert split_sentences("圆周率约为3.14。e is 2.718 roughly. Next one") == [
        "圆周率约为3.14。",
        "e is 2.718 roughly.",
        "Next one",
    ]
    assert split_sentences("## 1.1 集合\n集合是对象的全体。\n\n- 元素属于集合。") == [
        "集合是对象的全体。",
        "元素属于集合。",
    ]
    assert split_sentences("1. 第一条\n2. 第二条") == ["1. 第一条", "2. 第二条"]
    assert split_sentences("他说：“对。”然后走了") == ["他说：“对。”", "然后走了"]


def test_bigram_tokenizer() -> None:
    assert bigram_tokenize("二次函数") == ["二次", "次函", "函数"]  # 4 chars -> 3 bigrams
    assert bigram_tokenize("角") == ["角"]  # a lone character stays a unigram
    assert bigram_tokenize("The Law of Cosines, 2ab") == ["the", "law", "of", "cosines", "2ab"]


def test_stopwords_are_ignored_whatever_the_tokenizer() -> None:
    def jieba_like(text: str) -> list[str]:
        return [t for t in re.split(r"\s+", text) if t]

    gen = ExtractiveGenerator(jieba_like)
    chunks = (_chunk("a", "它 的 图像 是 抛物线 。"),)
    # shares only the function words 的/是 and the question word 什么: not an overlap
    assert gen.generate("顶点式 的 定义 是 什么", chunks)[0] == REFUSAL_TEXT
    assert gen.generate("抛物线 是 什么", chunks)[0] == "它 的 图像 是 抛物线 。 [1]"
