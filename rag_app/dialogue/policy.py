"""The tutor's dialogue policy: clarify, state limits, or answer with a layered hint.

One call decides one tutor turn from the whole conversation (rebuilt by
rag_app/dialogue/conversation.py), in this order:

1. **Which problem?** (``solve_problem``) A reference such as "例13" that several books
   contain is several plausible targets: ask which book, listing them -- unless the
   student's words name one of them (60 % of its title's key terms, twice the runner-up's
   share: "例9 那道由解集反求系数的题"). A problem that is
   neither stated (``context["problem"]``, ``y=…`` in a message) nor referred to by number:
   ask which book and which problem, listing the worked examples the retrieval spreads
   over when there are several; when the student cannot say, ask once what the problem
   asks for (unless a task word already says it). A target with sub-questions ``（1）（2）``
   and no part named: ask which part.
2. **A condition the material needs.** (a stated problem) The worked example the
   retrieval matches gives a condition kind the student's problem lacks (interval, range,
   point, angle, probability; rag_app/dialogue/conditions.py): ask for it, in the
   example's words ("角 B").
3. **The earlier problem** (``compare_problems``): ask for it.
4. **Limits.** Retrieve with the clarified query (context problem + target example +
   the student's messages without filler); the pipeline's one sufficiency decision
   (rag_app/sufficiency.py) says the evidence is not enough -> ``state_limits`` naming the
   key terms the material lacks. A target example found in the material by its number is
   evidence by itself.
5. **Answer**: the parents of the matched children are the material; the hint of the
   next layer (rag_app/dialogue/levels.py), extractive (rag_app/generation/hints.py) or
   from the LLM (rag_app/generation/tutor_prompt.py), then answer interception
   (rag_app/generation/interception.py).

Only what is missing is asked, never what the student gave or said they cannot give.
After ``clarification_limit`` (3) clarifying rounds the tutor stops asking and says what
is still missing (``state_limits``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rag_app.dialogue.conditions import CONDITION_KINDS, ConditionAsk, describe, kinds_in
from rag_app.dialogue.conversation import Conversation
from rag_app.dialogue.cues import ANSWER_DEMAND, DONT_KNOW, Intent, has_any, intent_of, states_problem, topic_text
from rag_app.dialogue.examples import Example, ExampleCatalog
from rag_app.dialogue.levels import next_level
from rag_app.dialogue.messages import clarify_message, limits_message, read_tag, slot_name
from rag_app.generation import build_sources, is_refusal
from rag_app.generation.hints import LEVEL_TAGS, compose, material_sentences, setup_clause
from rag_app.generation.interception import LeakGuard, intercept
from rag_app.generation.openai_generator import OpenAIGenerator
from rag_app.generation.tutor_prompt import tutor_messages
from rag_app.sufficiency import key_terms
from rag_app.text import tokenize
from rag_app.types import (
    Chunk,
    DialogueRequest,
    DialogueTurn,
    HintLevel,
    Hit,
    Interception,
    RetrievalResult,
    StageResult,
    Trace,
    Usage,
)

if TYPE_CHECKING:
    from rag_app.pipeline import RagPipeline

log = logging.getLogger(__name__)

CLARIFICATION_LIMIT = 3
MAX_PARENTS = 3  # parent sections given to the hint writer
SPREAD_TOP = 5  # reranked children looked at for the plausible targets
MATCH_TOP = 8  # reranked children whose examples may match a stated problem
MATCH_SECTIONS = 3  # ... and the examples of the sections of the best ones
MAX_LISTED = 3  # candidates named in a clarifying question
DESCRIBED_SHARE = 0.6  # "例9 那道由解集反求系数的题": the words name one of the books' 例9
#: Words saying what a problem asks for; with one of them the tutor does not ask for the goal.
GOAL_WORDS: tuple[str, ...] = (
    "求和",
    "通项",
    "最值",
    "最大",
    "最小",
    "切线",
    "夹角",
    "概率",
    "不等式",
    "方程",
    "证明",
    "单调",
    "极值",
    "面积",
    "体积",
    "长度",
    "系数",
    "参数",
    "范围",
    "解集",
    "值域",
    "定义域",
    "求值",
    "化简",
    "分布",
    "期望",
    "sum",
    "formula",
    "maximum",
    "minimum",
    "tangent",
    "angle",
    "probability",
    "inequality",
    "equation",
    "prove",
    "area",
    "volume",
    "length",
    "coefficient",
)


@dataclass(frozen=True)
class Plan:
    """What the policy found before acting: the intent, the target and what is missing."""

    intent: Intent
    target: Example | None
    slots: tuple[str, ...] = ()
    conditions: Mapping[str, ConditionAsk] | None = None
    candidates: tuple[Example, ...] = ()
    number: int | None = None
    reason: str = ""
    matched: Example | None = None  # the worked example most like a stated problem (hints start there)
    unknown: tuple[str, ...] = ()  # what the student could not give and nothing else supplies: limits


class TutorPolicy:
    """The dialogue call of one pipeline (its index, retrieval, sufficiency and generator)."""

    def __init__(self, pipeline: RagPipeline, clarification_limit: int = CLARIFICATION_LIMIT) -> None:
        self.pipeline = pipeline
        self.catalog = ExampleCatalog.from_chunks(pipeline.index.chunks)
        self.books = tuple(dict.fromkeys(c.book for c in pipeline.index.chunks.values() if c.book))
        self.limit = clarification_limit

    def respond(self, turns: Sequence[Mapping[str, str]], context: Mapping[str, Any] | None = None) -> DialogueTurn:
        request = DialogueRequest.from_dict({"turns": list(turns), "context": dict(context or {})})
        conv = Conversation(request.turns, request.context, books=self.books)
        plan = self.plan(conv)
        lang = conv.language
        if plan.slots:
            if conv.clarify_rounds >= self.limit:
                missing = tuple(slot_name(s, lang) for s in plan.slots)
                return DialogueTurn(
                    "state_limits",
                    limits_message(missing, lang, still_missing=True),
                    plan.intent,
                    missing=missing,
                    reason=f"{conv.clarify_rounds} clarifying rounds (limit {self.limit}); "
                    f"still missing: {', '.join(plan.slots)}",
                )
            listed = (
                plan.candidates if plan.number is not None else plan.candidates[:MAX_LISTED]
            )  # choices: all of them
            labels = [c.label for c in listed]
            message = clarify_message(
                plan.slots, lang, conditions=plan.conditions, candidates=labels, number=plan.number
            )
            return DialogueTurn("clarify", message, plan.intent, asking=plan.slots, reason=plan.reason)
        if plan.unknown:
            missing = tuple(slot_name(s, lang) for s in plan.unknown)
            return DialogueTurn(
                "state_limits",
                limits_message(missing, lang, still_missing=True),
                plan.intent,
                missing=missing,
                reason=plan.reason,
            )
        return self._answer(conv, plan)

    # --- deciding ---------------------------------------------------------------------------

    def plan(self, conv: Conversation) -> Plan:
        """The intent, the target example and the slots still to ask for."""
        intent = intent_of(conv.opening, conv.problem)
        if intent == "concept":
            return Plan(intent, None, reason="concept question: nothing to identify")
        if intent == "compare_problems":
            if not conv.has("old_problem"):
                return Plan(intent, None, ("old_problem",), reason="a comparison with a problem the tutor has not seen")
            return Plan(intent, None, reason="both problems known")
        number = _number(conv)
        books = [conv.given["book"]] if conv.given.get("book") in self.books else []
        candidates = tuple(self.catalog.numbered(number, books)) if number is not None else ()
        target = candidates[0] if len(candidates) == 1 else None
        if number is not None and len(candidates) > 1:
            target = _described(conv, candidates)
        if number is not None and len(candidates) > 1 and target is None:
            if not conv.has("book"):
                return Plan(
                    intent,
                    None,
                    ("book",),
                    candidates=candidates,
                    number=number,
                    reason=f"例{number} is {len(candidates)} worked examples: {', '.join(c.label for c in candidates)}",
                )
            target = self._best(conv, candidates)
        stated = (
            bool(conv.problem)
            or any(states_problem(m) for m in conv.user_messages)
            or _free_text(conv.given.get("problem"))
        )
        if target is None and not stated:
            slots = tuple(s for s in ("book", "problem") if not conv.has(s) and (s != "book" or len(self.books) > 1))
            if slots:
                spread = self._spread(conv)
                return Plan(
                    intent,
                    None,
                    slots,
                    candidates=spread,
                    reason=f"no problem stated or referred to; retrieval spreads over {len(spread)} worked examples",
                )
            if not conv.has("goal") and not has_any(conv.student_text, GOAL_WORDS):
                return Plan(
                    intent, None, ("goal",), reason="the student cannot say which problem; asking what it asks for"
                )
            if not key_terms(self._query(conv, None), tokenize):
                return Plan(intent, None, reason="nothing identifies the problem or its topic", unknown=("problem",))
            return Plan(intent, None, reason="the problem cannot be identified; guiding on the topic")
        if target is not None and target.parts and not conv.problem and not conv.has("part"):
            return Plan(intent, target, ("part",), reason=f"{target.label} has parts {target.parts}")
        matched = (target or self._matched_example(conv)) if stated else None
        if matched is not None:
            missing = [
                k
                for k in CONDITION_KINDS
                if k in kinds_in(matched.statement) and not conv.has(k) and k not in conv.asked
            ]
            if missing:
                asks = {k: describe(k, matched.statement) for k in missing}
                return Plan(
                    intent,
                    target,
                    tuple(missing),
                    conditions=asks,
                    matched=matched,
                    reason=f"the matched example {matched.label} gives {', '.join(missing)}; the problem does not",
                )
        return Plan(
            intent,
            target,
            matched=matched,
            reason=f"target {target.label}"
            if target
            else f"the problem is stated; closest example {matched.label if matched else None}",
        )

    def _retrieve(self, query: str) -> RetrievalResult | None:
        return self.pipeline.retrieve(query) if key_terms(query, tokenize) else None

    def _spread(self, conv: Conversation) -> tuple[Example, ...]:
        """The distinct worked examples among the top reranked children of the student's words."""
        retrieved = self._retrieve(self._query(conv, None))
        if retrieved is None:
            return ()
        return _examples_of(self._ranked_children(retrieved)[:SPREAD_TOP], self.catalog)

    def _matched_example(self, conv: Conversation) -> Example | None:
        """The worked example most like the student's stated problem: among the examples of
        the top reranked children and of the best children's sections, the one whose title
        and statement contain the largest share of the problem's key terms (ties: rank)."""
        retrieved = self._retrieve(self._query(conv, None))
        if retrieved is None:
            return None
        children = self._ranked_children(retrieved)
        pool = list(_examples_of(children[:MATCH_TOP], self.catalog))
        for chunk in children[:MATCH_SECTIONS]:
            pool.extend(e for e in self.catalog.in_parent(chunk.parent_id or chunk.chunk_id) if e not in pool)
        stated = "\n".join([conv.problem, *(m for m in conv.user_messages if states_problem(m))])
        terms = key_terms(stated or conv.opening, tokenize)
        if not pool or not terms:
            return None
        shares = [_share(terms, f"{e.title}\n{e.statement}") for e in pool]
        best = max(range(len(pool)), key=lambda i: (shares[i], -i))
        return pool[best] if shares[best] > 0 else None

    def _best(self, conv: Conversation, candidates: Sequence[Example]) -> Example | None:
        """The candidate whose section ranks best for the conversation (the book was asked already)."""
        retrieved = self._retrieve(self._query(conv, None))
        if retrieved is None:
            return None
        for chunk in self._ranked_children(retrieved):
            for cand in candidates:
                if chunk.parent_id == cand.parent_id or chunk.chunk_id == cand.parent_id:
                    return cand
        return None

    def _ranked_children(self, retrieved: RetrievalResult) -> list[Chunk]:
        stage = retrieved.trace.stage("reranked")
        chunks = self.pipeline.index.chunks
        return [chunks[h.chunk_id] for h in stage.hits] if stage else list(retrieved.context)

    def _query(self, conv: Conversation, target: Example | None) -> str:
        """The clarified query: context problem, target example, the student's words without
        filler (opening and replies to clarifying questions; follow-ups after hints are not
        part of the topic)."""
        parts = [conv.problem]
        if target is not None:
            parts.append(f"例{target.number} {target.title} {target.statement}")
        parts.extend(topic_text(m) for m in _topic_messages(conv))
        return "\n".join(p for p in parts if p.strip())

    # --- answering --------------------------------------------------------------------------

    def _answer(self, conv: Conversation, plan: Plan) -> DialogueTurn:
        lang = conv.language
        query = self._query(conv, plan.target)
        retrieved = self.pipeline.retrieve(query)
        verdict = self.pipeline.sufficiency(query, retrieved) if self.pipeline.settings.sufficiency else None
        if plan.target is None and (not retrieved.context or (verdict is not None and not verdict.sufficient)):
            missing = verdict.missing_terms if verdict is not None else ()
            why = verdict.message if verdict is not None else "no context after retrieval"
            return DialogueTurn(
                "state_limits",
                limits_message(missing, lang),
                plan.intent,
                retrieval=retrieved,
                missing=tuple(missing[:4]),
                sufficiency=verdict,
                reason=f"insufficient evidence: {why}",
            )
        material = self._parents(retrieved, plan.target or plan.matched)
        level = next_level(conv.levels, conv.since_last_answer)
        terms = key_terms(query + "\n" + conv.latest, tokenize)
        examples = [ex for c in material for ex in self.catalog.in_parent(c.chunk_id)]
        forbidden = conv.context.get("forbidden") or ()
        guard = LeakGuard.build(
            [str(f) for f in forbidden] if isinstance(forbidden, (list, tuple)) else [str(forbidden)],
            [(ex.solution, ex.statement) for ex in examples if ex.solution],
            [c.text for c in material],
        )
        sentences = material_sentences(material)
        setup = setup_clause(plan.target.solution) if plan.target and plan.target.solution else None
        demand = has_any(conv.latest, ANSWER_DEMAND)
        focus = 1 if (plan.target or plan.matched) else None  # its section is the material's first chunk
        said = "\n".join(t["content"] for t in conv.turns if t["role"] == "assistant")

        def fresh(text: str) -> bool:  # a sentence quoted in an earlier hint is not quoted again
            return text not in said

        hint = compose(level, sentences, terms, tokenize, lang, setup=setup, demand=demand, focus=focus, allowed=fresh)
        clean = compose(
            level,
            sentences,
            terms,
            tokenize,
            lang,
            setup=setup,
            demand=demand,
            focus=focus,
            allowed=lambda t: fresh(t) and not guard.leaks(t),
        )
        usage = Usage()
        generator = self.pipeline.generator
        if isinstance(generator, OpenAIGenerator):
            reply, usage = generator.complete(tutor_messages(level, conv.latest, material, conv.turns[:-1]))
            if is_refusal(reply):
                return DialogueTurn(
                    "state_limits",
                    reply,
                    plan.intent,
                    retrieval=retrieved,
                    sufficiency=verdict,
                    usage=usage,
                    reason="the model said the material is not enough",
                )
            candidate = (
                reply
                if reply.startswith(LEVEL_TAGS[level][lang].strip())
                else f"{LEVEL_TAGS[level][lang]}{'' if lang == 'zh' else ' '}{reply}"
            )
        elif hint is not None:
            candidate, level = hint.text, hint.level
        else:
            return DialogueTurn(
                "state_limits",
                limits_message((), lang),
                plan.intent,
                retrieval=retrieved,
                sufficiency=verdict,
                reason="no sentence of the material can be used as a hint",
            )
        outcome = intercept(candidate, guard, [clean.text if clean else None], lang)
        final = outcome.final
        if outcome.interception == "blocked":
            final = f"{LEVEL_TAGS[level][lang]}{'' if lang == 'zh' else ' '}{final}"
        elif outcome.interception == "rewritten" and clean is not None:
            level = clean.level
        reason = f"hint {level}" + (
            f"; candidate {outcome.interception} ({len(outcome.found)} forbidden phrase(s))"
            if outcome.interception
            else ""
        )
        if verdict is not None:
            reason += f"; sufficiency: {verdict.message}"
        return DialogueTurn(
            "answer",
            final,
            plan.intent,
            hint_level=cast(HintLevel, level),
            retrieval=_with_parents(retrieved, material, query),
            candidate=candidate,
            interception=cast("Interception | None", outcome.interception),
            sources=tuple(build_sources(material)),
            sufficiency=verdict,
            reason=reason,
            usage=usage,
        )

    def _parents(self, retrieved: RetrievalResult, target: Example | None) -> list[Chunk]:
        """Children matched, parents returned: the parent sections of the context, the target's first."""
        chunks = self.pipeline.index.chunks
        out: list[Chunk] = []
        if target is not None and target.parent_id in chunks:
            out.append(chunks[target.parent_id])
        for c in retrieved.context:
            parent = c if c.kind == "parent" else chunks.get(c.parent_id or "", c)
            if parent.chunk_id not in {p.chunk_id for p in out}:
                out.append(parent)
        return out[:MAX_PARENTS]


def _number(conv: Conversation) -> int | None:
    value = conv.given.get("problem", "")
    return int(value[1:]) if value.startswith("例") and value[1:].isdigit() else None


def _free_text(value: str | None) -> bool:
    """A problem given in words (not as 例N): the student described or pasted it."""
    return bool(value) and not (value or "").startswith("例")


def _topic_messages(conv: Conversation) -> list[str]:
    """The opening and the replies to clarifying questions (not the cannot-answer ones)."""
    out = [conv.opening]
    after_clarify = False
    for t in conv.turns[1:]:
        if t["role"] == "assistant":
            after_clarify = read_tag(t["content"]) == "clarify"
        elif after_clarify and not has_any(t["content"], DONT_KNOW):
            out.append(t["content"])
    return out


def _described(conv: Conversation, candidates: Sequence[Example]) -> Example | None:
    """The one candidate the student's own words name: the share of its title's key terms
    found in what the student said is at least ``DESCRIBED_SHARE`` and at least twice the
    runner-up's. None: no clear winner."""
    said = "\n".join([conv.problem, *conv.user_messages])
    scored = []
    for i, c in enumerate(candidates):
        terms = key_terms(c.title, tokenize)
        scored.append((_share(terms, said) if terms else 0.0, i))
    scored.sort(reverse=True)
    (best, i), (second, _) = scored[0], scored[1]
    return candidates[i] if best >= DESCRIBED_SHARE and best >= 2 * second else None


def _share(terms: Sequence[str], text: str) -> float:
    """The share of ``terms`` found in ``text`` (as tokens, or as substrings for Chinese)."""
    tokens = set(tokenize(text))
    squashed = "".join(text.lower().split())
    return sum(1 for t in terms if t in tokens or (len(t) > 1 and not t.isascii() and t in squashed)) / len(terms)


def _examples_of(chunks: Sequence[Chunk], catalog: ExampleCatalog) -> tuple[Example, ...]:
    out: list[Example] = []
    for chunk in chunks:
        ex = catalog.containing(chunk)
        if ex is not None and ex not in out:
            out.append(ex)
    return tuple(out)


def _with_parents(retrieved: RetrievalResult, parents: Sequence[Chunk], query: str) -> RetrievalResult:
    stage = StageResult("parents", tuple(Hit(c.chunk_id, 0.0, i + 1) for i, c in enumerate(parents)))
    return RetrievalResult(
        query,
        tuple(parents),
        Trace(retrieved.trace.stages + (stage,)),
        retrieved.degraded,
        retrieved.degradation_reason,
    )
