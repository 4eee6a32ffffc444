"""Deterministic checks of one answer: no model needed, each a tiny pure function.

Every check returns a ``CheckResult`` whose message says what was expected and what
came back, so a failing case reads on its own in a report
(``"[3] does not resolve: the context has 2 chunks"``). The checks take plain values;
``run_all`` runs the applicable ones on an ``AnswerView`` in a fixed order.

Citation parsing is not re-implemented here: ``cited_numbers`` and ``mask_math`` come
from :mod:`rag_eval.citations`, whose ``CitationFormat`` is the system's marker syntax
(``[n]`` by default; ``citation_pattern`` in the pipeline configuration).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rag_eval.citations import DEFAULT_FORMAT, CitationFormat, cited_numbers, mask_math, numbered_chunks
from rag_eval.core.records import AnswerRecord, Chunk, Source

EXPECTED_ACTIONS: tuple[str, ...] = ("answer", "refuse", "clarify")
__all__ = [
    "CHECKS",
    "CHECK_NAMES",
    "Check",
    "EXPECTED_ACTIONS",
    "AnswerView",
    "CheckResult",
    "answer_not_empty",
    "asks_clarifying_question",
    "citations_resolve",
    "cited_numbers",
    "expected_action",
    "grounding_texts",
    "must_contain",
    "must_not_contain",
    "no_duplicate_sources",
    "numbers_grounded",
    "numbers_in",
    "run_all",
    "source_pages_within_context",
    "sources_present",
]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check; ``message`` says what was expected and what came back."""

    name: str
    passed: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "message": self.message}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckResult:
        return cls(name=str(d["name"]), passed=bool(d["passed"]), message=str(d["message"]))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _brackets(numbers: Sequence[int]) -> str:
    return ", ".join(f"[{n}]" for n in numbers)


# --------------------------------------------------------------------------- answer and sources


def answer_not_empty(answer: str) -> CheckResult:
    """The answer has at least one non-whitespace character."""
    if answer.strip():
        return CheckResult("answer_not_empty", True, f"answer has {_plural(len(answer.strip()), 'character')}")
    return CheckResult("answer_not_empty", False, f"expected a non-empty answer, got {answer!r}")


def sources_present(answer_refused: bool, sources: Sequence[Source]) -> CheckResult:
    """Sources are non-empty unless the answer is a refusal (a refusal cites nothing)."""
    if answer_refused:
        return CheckResult("sources_present", True, f"refusal: sources not required ({len(sources)} given)")
    if sources:
        return CheckResult("sources_present", True, f"{_plural(len(sources), 'source')} for a non-refusal answer")
    return CheckResult("sources_present", False, "expected at least 1 source for a non-refusal answer, got none")


def citations_resolve(answer: str, n_context: int, fmt: CitationFormat = DEFAULT_FORMAT) -> CheckResult:
    """Every inline ``[n]`` of the answer is a context chunk number, 1 ≤ n ≤ n_context.

    ``n_context`` counts *distinct* context chunks (how the system numbers them). What
    counts as a citation is decided by ``cited_numbers``: maths such as ``$[0,1]$`` is
    not one; ``[1][2]``, ``[1, 2]``, ``[1-3]`` and ``【1】`` are.
    """
    cited = fmt.cited_numbers(answer)
    bad = [n for n in cited if not 1 <= n <= n_context]
    if not bad:
        if not cited:
            return CheckResult("citations_resolve", True, "no inline [n] citations to resolve")
        return CheckResult(
            "citations_resolve",
            True,
            f"{_plural(len(cited), 'citation')} ({_brackets(cited)}) {'resolves' if len(cited) == 1 else 'resolve'} "
            f"to the {_plural(n_context, 'context chunk')}",
        )
    verb = "does" if len(bad) == 1 else "do"
    return CheckResult(
        "citations_resolve",
        False,
        f"{_brackets(bad)} {verb} not resolve: the context has {_plural(n_context, 'chunk')}",
    )


def _pages(start: int | None, end: int | None) -> str:
    if start is None:
        return "no pages"
    if end is None or end == start:
        return f"page {start}"
    return f"pages {start}-{end}"


def source_pages_within_context(sources: Sequence[Source], context_chunks: Sequence[Chunk]) -> CheckResult:
    """Every source's pages lie inside the page range of a context chunk with the same chunk id.

    A source whose chunk is not in the context fails (the system cited material the
    generator never saw). A source without pages claims nothing and passes; a source
    with pages whose chunk has none fails (the pages came from somewhere else).
    """
    by_id: dict[str, list[Chunk]] = {}
    for chunk in context_chunks:
        by_id.setdefault(chunk.chunk_id, []).append(chunk)
    problems: list[str] = []
    for src in sources:
        chunks = by_id.get(src.chunk_id)
        if not chunks:
            problems.append(f"source [{src.n}] cites chunk {src.chunk_id!r}, which is not in the context")
            continue
        if src.page_start is None:
            continue
        lo = src.page_start
        hi = src.page_end if src.page_end is not None else src.page_start
        if not any(_covers(c, lo, hi) for c in chunks):
            covered = " / ".join(_pages(c.page_start, c.page_end) for c in chunks)
            problems.append(
                f"source [{src.n}] (chunk {src.chunk_id!r}) claims {_pages(src.page_start, src.page_end)} "
                f"but the context chunk covers {covered}"
            )
    if problems:
        return CheckResult("source_pages_within_context", False, "; ".join(problems))
    return CheckResult(
        "source_pages_within_context",
        True,
        f"all {_plural(len(sources), 'source')} lie within their context chunks' pages",
    )


def _covers(chunk: Chunk, lo: int, hi: int) -> bool:
    if chunk.page_start is None:
        return False
    end = chunk.page_end if chunk.page_end is not None else chunk.page_start
    return chunk.page_start <= lo and hi <= end


def no_duplicate_sources(sources: Sequence[Source]) -> CheckResult:
    """No chunk id appears twice in the source list (two numbers for one source)."""
    numbers_of: dict[str, list[int]] = {}
    for src in sources:
        numbers_of.setdefault(src.chunk_id, []).append(src.n)
    dupes = {cid: ns for cid, ns in numbers_of.items() if len(ns) > 1}
    if not dupes:
        return CheckResult("no_duplicate_sources", True, f"{_plural(len(sources), 'source')}, all distinct chunk ids")
    detail = "; ".join(f"chunk {cid!r} appears {len(ns)} times ({_brackets(ns)})" for cid, ns in dupes.items())
    return CheckResult("no_duplicate_sources", False, f"expected distinct chunk ids in sources: {detail}")


# --------------------------------------------------------------------------- required / forbidden text


def _loose(text: str) -> str:
    """NFKC (full-width → ASCII), case-folded, all whitespace removed."""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def _looser(text: str) -> str:
    """``_loose`` and also without punctuation (any Unicode P* category) and ``$``.

    Used for forbidden content, where a leak must be caught even when it is
    re-punctuated (``x=2，y=3`` vs ``x = 2, y = 3``) or wrapped in ``$...$``.
    """
    return "".join(ch for ch in _loose(text) if ch != "$" and not unicodedata.category(ch).startswith("P"))


def _check_phrases(phrases: Sequence[str], where: str, norm: Callable[[str], str]) -> None:
    if isinstance(phrases, str):
        raise TypeError(
            f"{where}: phrases must be a list of strings, got the single string {phrases!r}; wrap it: [{phrases!r}]"
        )
    for i, phrase in enumerate(phrases):
        if not norm(phrase):
            raise ValueError(
                f"{where}: phrase #{i} ({phrase!r}) is empty after normalisation and matches anything; "
                "remove it from the golden item"
            )


def must_contain(answer: str, phrases: Sequence[str]) -> CheckResult:
    """Each required phrase occurs in the answer.

    Comparison after NFKC normalisation (full-width letters and digits become ASCII),
    case folding and removal of all whitespace, so ``"Vertex Form"`` matches
    ``"vertex  form"`` and ``"顶点 式"`` matches ``"顶点式"``.
    """
    _check_phrases(phrases, "must_contain", _loose)
    text = _loose(answer)
    missing = [p for p in phrases if _loose(p) not in text]
    if missing:
        return CheckResult(
            "must_contain",
            False,
            f"missing {len(missing)} of {_plural(len(phrases), 'required phrase')}: {', '.join(map(repr, missing))}",
        )
    return CheckResult("must_contain", True, f"all {_plural(len(phrases), 'required phrase')} present")


def must_not_contain(answer: str, phrases: Sequence[str]) -> CheckResult:
    """No forbidden phrase occurs in the answer (e.g. a worked answer that must not be revealed).

    Stricter matching than ``must_contain``: besides case and whitespace, punctuation
    and ``$`` are ignored too, so a re-punctuated or re-typeset leak is still caught.
    """
    _check_phrases(phrases, "must_not_contain", _looser)
    text = _looser(answer)
    leaked = [p for p in phrases if _looser(p) in text]
    if leaked:
        return CheckResult(
            "must_not_contain",
            False,
            f"forbidden content in the answer: {', '.join(map(repr, leaked))}",
        )
    return CheckResult("must_not_contain", True, f"none of {_plural(len(phrases), 'forbidden phrase')} present")


# --------------------------------------------------------------------------- numbers

# \frac{3}{4} (also \dfrac, \tfrac) is the fraction 3/4, written as such before scanning.
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(-?\d+(?:\.\d+)?)\s*\}\s*\{\s*(\d+(?:\.\d+)?)\s*\}")
# A "-" is a sign only where a binary minus cannot be: not after a letter, digit,
# subscript or closing bracket ("x-3" is x minus 3; "x=-3" and "(-3" hold -3).
_NUMBER = re.compile(r"(?P<sign>(?<![A-Za-z0-9_)\]}])-)?(?<![\d.])(?P<num>\d+(?:\.\d+)?)(?:/(?P<den>\d+(?:\.\d+)?))?")
# List numbering at line start: "1. ", "2、", "3)", "(1)", "（2）" after NFKC.
_LIST_MARK = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?:\d+\.(?=[ \t])|\d+[、)]|\(\d+\))", re.MULTILINE)
# Candidate bracket groups; ``cited_numbers`` decides whether one is a citation.
_BRACKET = re.compile(r"[\[【［][^\[\]【】［］\n]{0,40}[\]】］]")


def _normalise_numbers(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)  # full-width digits, "．", "－" → ASCII
    text = text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2044", "/")  # minus, en dash, ⁄
    return _LATEX_FRAC.sub(r"\1/\2", text)


def _strip_citations(text: str) -> str:
    """Blank out citation markers (outside maths), decided by ``cited_numbers``."""
    masked = mask_math(text, fill="\0")  # same length; maths brackets are never citations
    out = list(text)
    for m in _BRACKET.finditer(masked):
        if cited_numbers(m.group(0)):
            out[m.start() : m.end()] = " " * (m.end() - m.start())
    return "".join(out)


def numbers_in(text: str, *, answer: bool = False) -> list[tuple[str, Fraction]]:
    """``(as written, exact value)`` for each number in ``text``, in order.

    Integers, decimals, fractions (``3/4``, ``\\frac{3}{4}``) and negatives (see
    ``_NUMBER``). Full-width digits are normalised. With ``answer=True`` citation
    markers (``[2]``) and list numbering at line start (``1.``, ``(2)``) are skipped:
    they are structure, not claims.
    """
    text = _normalise_numbers(text)
    if answer:
        text = _strip_citations(text)
        text = _LIST_MARK.sub(lambda m: " " * len(m.group(0)), text)
    out: list[tuple[str, Fraction]] = []
    for m in _NUMBER.finditer(text):
        sign = -1 if m.group("sign") else 1
        num = Fraction(m.group("num"))
        den = Fraction(m.group("den")) if m.group("den") else None
        if den == 0:  # "1/0" is not a fraction; keep the two numbers
            out.append((f"{m.group('sign') or ''}{m.group('num')}", sign * num))
            out.append((m.group("den") or "0", Fraction(0)))
            continue
        value = sign * (num / den if den is not None else num)
        out.append((m.group(0), value))
    return out


def numbers_grounded(answer: str, context_texts: Sequence[str]) -> CheckResult:
    """Every number in the answer also occurs in the context (no hallucinated parameters).

    Numbers are compared by exact value, so ``0.50`` = ``0.5`` and ``3/4`` =
    ``\\frac{3}{4}`` = ``0.75`` (but ``1/3`` ≠ ``0.333``). A negative number needs the
    negative in the context; a positive one is also grounded by the digits of a
    negative or of a fraction's numerator/denominator in the context, because those
    digits are written there. Numbers in words (三分之一) are not recognised.

    Pass the question among ``context_texts``: numbers the question gave are grounded.
    """
    if isinstance(context_texts, str):
        raise TypeError("numbers_grounded: context_texts must be a list of texts, got a single string; wrap it: [text]")
    known: set[Fraction] = set()
    for text in context_texts:
        for written, value in numbers_in(text):
            known.add(value)
            known.add(abs(value))
            if "/" in written:
                num, _, den = written.lstrip("-").partition("/")
                known.update((Fraction(num), Fraction(den)))
    found = numbers_in(answer, answer=True)
    missing: list[str] = []
    for written, value in found:
        if value not in known and written not in missing:
            missing.append(written)
    if missing:
        return CheckResult(
            "numbers_grounded",
            False,
            f"numbers not in the context: {', '.join(missing)} "
            f"(the answer has {_plural(len(found), 'number')}; "
            f"the context has {_plural(len(known), 'distinct value')})",
        )
    return CheckResult(
        "numbers_grounded", True, f"all {_plural(len(found), 'number')} of the answer occur in the context"
    )


# --------------------------------------------------------------------------- expected action


def asks_clarifying_question(answer: str, fmt: CitationFormat = DEFAULT_FORMAT) -> bool:
    """Heuristic: the answer asks something back — a ``?``/``？`` outside maths and no citations.

    A clarifying reply ("你指的是哪一个函数？") asks and cites nothing; a real answer
    cites its material, and a rhetorical question inside an answer comes with citations.
    """
    prose = mask_math(answer)
    return ("?" in prose or "？" in prose) and not fmt.cited_numbers(answer)


def expected_action(expected: str, refused: bool, clarified: bool) -> CheckResult:
    """The system did what the golden item expects.

    * ``answer``: not refused and not asking back (a clarifying question instead of an
      answer is not an answer);
    * ``refuse``: refused — a question with no evidence gets a refusal, not a made-up answer;
    * ``clarify``: asked a clarifying question (see ``asks_clarifying_question``) and did not refuse.
    """
    if expected not in EXPECTED_ACTIONS:
        raise ValueError(f"expected_action: unknown action {expected!r}; valid actions: {', '.join(EXPECTED_ACTIONS)}")
    did = "refused" if refused else "asked a clarifying question" if clarified else "answered"
    if expected == "answer":
        passed = not refused and not clarified
    elif expected == "refuse":
        passed = refused
    else:
        passed = clarified and not refused
    return CheckResult("expected_action", passed, f"expected {expected!r}, the system {did}")


# --------------------------------------------------------------------------- all checks


@dataclass(frozen=True)
class AnswerView:
    """What the deterministic checks need from one answer and its golden item.

    ``question`` counts as grounding for numbers (the student gave them).
    ``check_numbers=False`` turns off ``numbers_grounded`` for items whose answer must
    compute new numbers.
    """

    answer: str
    refused: bool
    sources: tuple[Source, ...]
    context: tuple[Chunk, ...]
    question: str = ""
    must_contain: tuple[str, ...] = ()
    must_not_contain: tuple[str, ...] = ()
    expected_action: str | None = None
    check_numbers: bool = True
    citations: CitationFormat = DEFAULT_FORMAT

    @classmethod
    def from_chat_result(
        cls,
        result: AnswerRecord,
        *,
        must_contain: Sequence[str] = (),
        must_not_contain: Sequence[str] = (),
        expected_action: str | None = None,
        check_numbers: bool = True,
        citations: CitationFormat = DEFAULT_FORMAT,
    ) -> AnswerView:
        """The view of a ``chat`` result; the context is what the generator saw (``context_used``)."""
        return cls(
            answer=result.answer,
            refused=result.refused,
            sources=tuple(result.sources),
            context=tuple(result.context_used),
            question=result.question,
            must_contain=tuple(must_contain),
            must_not_contain=tuple(must_not_contain),
            expected_action=expected_action,
            check_numbers=check_numbers,
            citations=citations,
        )


def grounding_texts(question: str, context: Sequence[Chunk]) -> list[str]:
    """The texts numbers may come from: the question, and each chunk as the generator saw it
    (book, section and pages are in the prompt's chunk label, so they count)."""
    texts = [question] if question else []
    for chunk in context:
        texts.append(f"{chunk.book} {chunk.section} {chunk.pages_label}\n{chunk.text}")
    return texts


@dataclass(frozen=True)
class Check:
    """One deterministic check, declared once: its name (``check.<name>`` in a gate,
    ``skip_checks`` in ``[deterministic.case]``), when it applies to an answer and how it
    runs. Both take the view and whether the answer asks a clarifying question."""

    name: str
    run: Callable[[AnswerView, bool], CheckResult]
    applies: Callable[[AnswerView, bool], bool] = lambda view, clarified: True


def _expected_action(view: AnswerView, clarified: bool) -> CheckResult:
    return expected_action(view.expected_action or "answer", view.refused, clarified)


#: Every check ``run_all`` can return, in the order it returns them.
CHECKS: tuple[Check, ...] = (
    Check("answer_not_empty", lambda v, c: answer_not_empty(v.answer)),
    Check("expected_action", _expected_action, lambda v, c: v.expected_action is not None),
    # A clarifying question the item asked for cites nothing, like a refusal.
    Check(
        "sources_present",
        lambda v, c: sources_present(v.refused, v.sources),
        lambda v, c: not (v.expected_action == "clarify" and c),
    ),
    Check("citations_resolve", lambda v, c: citations_resolve(v.answer, len(numbered_chunks(v.context)), v.citations)),
    Check("source_pages_within_context", lambda v, c: source_pages_within_context(v.sources, v.context)),
    Check("no_duplicate_sources", lambda v, c: no_duplicate_sources(v.sources)),
    Check("must_contain", lambda v, c: must_contain(v.answer, v.must_contain), lambda v, c: bool(v.must_contain)),
    Check(
        "must_not_contain",
        lambda v, c: must_not_contain(v.answer, v.must_not_contain),
        lambda v, c: bool(v.must_not_contain),
    ),
    Check(
        "numbers_grounded",
        lambda v, c: numbers_grounded(v.answer, grounding_texts(v.question, v.context)),
        lambda v, c: v.check_numbers and not v.refused,
    ),
)
CHECK_NAMES: tuple[str, ...] = tuple(check.name for check in CHECKS)


def run_all(view: AnswerView) -> list[CheckResult]:
    """Every applicable check of ``CHECKS``, always in that order: answer_not_empty,
    expected_action (if the item sets one), sources_present (not for a clarifying question
    the item expects), citations_resolve, source_pages_within_context,
    no_duplicate_sources, must_contain / must_not_contain (if the item lists phrases),
    numbers_grounded (unless the answer is a refusal or ``check_numbers`` is off)."""
    clarified = asks_clarifying_question(view.answer, view.citations)
    return [check.run(view, clarified) for check in CHECKS if check.applies(view, clarified)]
