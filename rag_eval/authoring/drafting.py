"""The drafting run: sample passages, ask the model per recipe, keep only drafts whose
quotes are in their documents and that duplicate no item, count every other outcome.

Calls go through rag_eval's one cached client (:class:`rag_eval.llm.cached.CachedChatClient`:
cache, budget, retries, redaction), ``concurrency`` at a time; replies are processed in
the order the jobs were made, so a seed gives the same drafts whatever the timing. Every
passage, reply and draft outcome lands in exactly one count (``Outcome.counts``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rag_eval.authoring.drafts import Draft
from rag_eval.authoring.passages import Passage, Pool, is_chinese
from rag_eval.authoring.quote import NEAR_DUP_THRESHOLD, Sourced, find_quote, near_duplicate, sources_of
from rag_eval.authoring.recipes import (
    ACTION,
    FORMAT_MODES,
    NEEDS,
    RECIPES,
    UNPARSEABLE,
    ParsedReply,
    PromptInput,
    accepts,
    messages,
    parse_reply,
    response_format,
)
from rag_eval.core.records import Document
from rag_eval.golden.model import GoldenItem
from rag_eval.golden.resolve import ChunkLookup
from rag_eval.llm.cached import JudgeCallError
from rag_eval.llm.messages import ChatRequest, ChatResponse
from rag_eval.util.text import terms

if TYPE_CHECKING:
    from rag_eval.llm.cached import CachedChatClient

TIER = "draft"  # the accounting name of drafting calls
QUOTE_NOT_FOUND = "rejected: quote not found"
NOT_ACROSS = "rejected: quote does not cross the two passages"
NEAR_DUP = "rejected: near-duplicate"
SUPPORTED = "rejected: negative answerable from the corpus"
BUDGET = "stopped: budget reached"
NO_INPUT = "not drafted: no input left"
NEGATIVE_SUPPORT = 0.6  # share of a question's terms one passage holding them "supports" it
ATTEMPTS_PER_DRAFT = 3


Span3 = tuple[str, int, int]  # (doc id, start, end) of a quote
Retrieve = Callable[[str], Sequence[str]]  # question -> texts of the chunks a system retrieves


@dataclass(frozen=True)
class Ask:
    """``count`` drafts of ``recipe``, each tagged with ``tags`` (the prompt asks for them too: --fill-gaps)."""

    recipe: str
    count: int
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DraftSpec:
    model: str
    asks: Sequence[Ask]  # what to draft, run in the order of RECIPES
    seed: int = 0
    lang: str = "auto"  # "zh", "en" or "auto" (from the passage's text)
    near_dup: float = NEAR_DUP_THRESHOLD
    max_tokens: int = 800
    concurrency: int = 4
    attempts: int = ATTEMPTS_PER_DRAFT  # replies tried per wanted draft before the run gives up on it


@dataclass
class Outcome:
    drafts: list[Draft] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)  # one line per rejected reply, with the reason
    errors: int = 0

    def count(self, reason: str, n: int = 1) -> None:
        if n:
            self.counts[reason] = self.counts.get(reason, 0) + n


@dataclass(frozen=True)
class Job:
    recipe: str
    passages: tuple[Passage, ...]
    source: Sourced | None = None  # the item a colloquial / similar-stem draft rewrites
    source_quote: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.passages) or self.source_quote


def _item_jobs(
    ask: Ask, items: Sequence[Sourced], quotes: Mapping[str, tuple[str, str]], lookup: ChunkLookup
) -> Iterator[Job]:
    for s in items:
        doc, quote = quotes[s.id]
        span = find_quote(lookup, doc, quote)
        if span is None:
            continue
        text = lookup.docs[doc].text
        passage = Passage(doc, span[0], span[1], text[span[0] : span[1]])
        yield Job(ask.recipe, (passage,), s, quote, ask.tags)


class Drafter:
    """One drafting run over ``documents`` (see the module doc)."""

    def __init__(
        self,
        documents: Sequence[Document],
        pool: Pool,
        client: CachedChatClient,
        spec: DraftSpec,
        existing: Sequence[GoldenItem] = (),
        retrieve: Retrieve | None = None,
    ) -> None:
        self.documents, self.pool, self.client, self.spec = documents, pool, client, spec
        self.lookup = ChunkLookup(documents, [])
        self.existing = [Sourced.of(i, self.lookup) for i in existing]
        self.existing_quotes = {
            i.id: (r.doc_id, r.quote)
            for i in existing
            for g in i.evidence[:1]
            for r in g.any_of[:1]
            if r.doc_id and r.quote
        }
        self.retrieve = retrieve
        self.outcome = Outcome(counts=dict(pool.skipped))
        self._stopped = False
        self._mode = 0  # index into FORMAT_MODES: the best the server has not refused
        self._mode_lock = threading.Lock()

    def run(self) -> Outcome:
        for ask in sorted(self.spec.asks, key=lambda a: RECIPES.index(a.recipe)):
            if self._stopped:
                self.outcome.count(BUDGET, ask.count)
            else:
                self._recipe(ask)
        return self.outcome

    # --- jobs ---------------------------------------------------------------------------
    def _jobs(self, ask: Ask) -> Iterator[Job]:
        recipe, tags = ask.recipe, ask.tags
        need = NEEDS[recipe]
        if need == "passage":
            return (Job(recipe, (p,), tags=tags) for p in self.pool.round_robin())
        if need == "pair":
            return (Job(recipe, pair, tags=tags) for pair in self.pool.pairs_across())
        if need == "adjacent":
            return (Job(recipe, pair, tags=tags) for pair in self.pool.adjacent(self.documents))
        # Existing items first (the golden set), then this run's drafts from passages.
        own = [
            Sourced(d.id, d.question, sources_of(d.evidence[:1], self.lookup))
            for d in self.outcome.drafts
            if d.evidence
        ]
        quotes = dict(self.existing_quotes)
        quotes.update({d.id: d.evidence[0] for d in self.outcome.drafts if d.evidence})
        items = [s for s in self.existing if s.id in quotes] + own
        return _item_jobs(ask, items, quotes, self.lookup)

    def _recipe(self, ask: Ask) -> None:
        wanted, jobs = ask.count, self._jobs(ask)
        made, tried = 0, 0
        limit = wanted * self.spec.attempts
        while made < wanted and tried < limit and not self._stopped:
            batch = [j for _, j in zip(range(min(wanted - made, limit - tried)), jobs)]
            if not batch:
                self.outcome.count(NO_INPUT, wanted - made)
                return
            tried += len(batch)
            with ThreadPoolExecutor(max_workers=max(1, min(self.spec.concurrency, len(batch)))) as pool:
                replies = list(pool.map(self._ask, batch))
            for job, reply in zip(batch, replies):
                if isinstance(reply, JudgeCallError):
                    self._failed(reply)
                elif reply is not None and self._keep(job, reply):
                    made += 1
        if self._stopped:
            self.outcome.count(BUDGET, wanted - made)

    # --- one call -----------------------------------------------------------------------
    def _lang(self, job: Job) -> str:
        if self.spec.lang != "auto":
            return self.spec.lang
        return "zh" if is_chinese(job.text + (job.source.question if job.source else "")) else "en"

    def _messages(self, job: Job) -> list[dict[str, str]]:
        given = PromptInput(
            passages=[p.text for p in job.passages] if job.recipe != "colloquial" else (),
            question=job.source.question if job.source else "",
            quote=job.source_quote if job.recipe == "colloquial" else "",
            hints=job.tags or None,
        )
        return messages(job.recipe, self._lang(job), given)

    def _ask(self, job: Job) -> tuple[ChatResponse, str] | JudgeCallError | None:
        if self._stopped:
            return None
        msgs = self._messages(job)
        mode = self._mode
        fmt = response_format(job.recipe, FORMAT_MODES[mode])
        req = ChatRequest(self.spec.model, msgs, temperature=0.0, max_tokens=self.spec.max_tokens, response_format=fmt)
        case = f"{job.recipe}:{'+'.join(p.key for p in job.passages)}"
        try:
            resp = self.client.complete(req, case_id=case, tier=TIER, accept=accepts(job.recipe))
        except JudgeCallError as exc:
            if exc.kind == "format" and fmt is not None:  # the server refuses this mode: the next one, for the run
                with self._mode_lock:
                    self._mode = max(self._mode, mode + 1)
                return self._ask(job)
            return exc
        return resp, hashlib.sha256(json.dumps(msgs, ensure_ascii=False).encode()).hexdigest()

    def _failed(self, exc: JudgeCallError) -> None:
        if exc.kind == "budget":
            self._stopped = True
            self.outcome.rejected.append(str(exc))
            return
        self.outcome.errors += 1
        self.outcome.count(f"error: {exc.kind}")
        self.outcome.rejected.append(f"error ({exc.kind}): {exc}")

    # --- one reply ----------------------------------------------------------------------
    def _reject(self, reason: str, job: Job, detail: str) -> bool:
        self.outcome.count(reason)
        self.outcome.rejected.append(f"{reason}: {job.recipe} from {', '.join(p.key for p in job.passages)}: {detail}")
        return False

    def _gold(self, job: Job, parsed: ParsedReply) -> tuple[list[tuple[str, str]], list[Span3]] | tuple[str, str]:
        """(evidence, spans) of a reply, or (reason, detail) when its quotes fail the check."""
        if job.recipe == "colloquial":
            assert job.source is not None
            return [(job.passages[0].doc_id, job.source_quote)], []
        if job.recipe == "negative":
            support = self._support(parsed.question)
            return (SUPPORTED, support) if support else ([], [])
        evidence: list[tuple[str, str]] = []
        spans: list[Span3] = []
        places = job.passages if job.recipe == "cross-topic" else job.passages[:1]
        for passage, quote in zip(places, parsed.quotes):
            span = find_quote(self.lookup, passage.doc_id, quote)
            if span is None:
                return QUOTE_NOT_FOUND, f"{quote[:60]!r} is not in document {passage.doc_id!r}"
            evidence.append((passage.doc_id, quote))
            spans.append((passage.doc_id, span[0], span[1]))
        if job.recipe == "multi-chunk":
            first, second = job.passages
            if not spans[0][1] < first.end <= second.start < spans[0][2]:
                return NOT_ACROSS, f"{parsed.quotes[0][:60]!r}"
        return evidence, spans

    def _keep(self, job: Job, reply: tuple[ChatResponse, str]) -> bool:
        resp, prompt_hash = reply
        parsed = parse_reply(job.recipe, resp.content)
        if isinstance(parsed, str):
            return self._reject(UNPARSEABLE, job, parsed)
        gold = self._gold(job, parsed)
        if isinstance(gold[0], str):
            return self._reject(gold[0], job, str(gold[1]))
        evidence, spans = gold
        draft = self._draft(job, parsed.question, parsed.answer_points, evidence, spans, resp.model, prompt_hash)
        me = Sourced(draft.id, draft.question, sources_of(draft.evidence, self.lookup))
        others = self.existing + [
            Sourced(d.id, d.question, sources_of(d.evidence, self.lookup)) for d in self.outcome.drafts
        ]
        if job.source is not None:
            others.append(job.source)
        dup = near_duplicate(me, others, self.spec.near_dup) if me.sources else None
        if dup is not None:
            return self._reject(NEAR_DUP, job, f"{draft.question!r} ~ {dup[0].id} {dup[0].question!r} ({dup[1]:.2f})")
        self.outcome.drafts.append(draft)
        self.outcome.count("drafted")
        return True

    def _support(self, question: str) -> str:
        """Why a negative draft is answerable (a passage, or a retrieved chunk, holding most of its terms), or ""."""
        key = {t for t in terms(question) if len(t) > 1}
        if not key:
            return ""
        for p in (p for ps in self.pool.by_doc.values() for p in ps):
            if len(key & set(terms(p.text))) >= NEGATIVE_SUPPORT * len(key):
                return f"passage {p.key} holds {len(key & set(terms(p.text)))}/{len(key)} of its terms"
        for text in self.retrieve(question) if self.retrieve else ():
            if len(key & set(terms(text))) >= NEGATIVE_SUPPORT * len(key):
                return "the system retrieved a chunk holding most of its terms"
        return ""

    def _draft(
        self,
        job: Job,
        question: str,
        points: tuple[str, ...],
        evidence: list[tuple[str, str]],
        spans: list[Span3],
        model: str,
        prompt_hash: str,
    ) -> Draft:
        key = f"{job.recipe}|{'|'.join(p.key for p in job.passages)}|{question}"
        tags = {"scenario": job.recipe, **job.tags}
        provenance: dict[str, object] = {
            "recipe": job.recipe,
            "source_docs": sorted({p.doc_id for p in job.passages}),
            "passages": [[p.doc_id, p.start, p.end] for p in job.passages],
            "spans": [list(sp) for sp in spans],
            "model": model,
            "prompt_sha256": prompt_hash,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if job.source is not None:
            provenance["source_item"] = job.source.id
        note = ""
        if job.recipe == "negative":
            note = (
                "negative: no passage holds most of its terms"
                + (" and the system retrieved none" if self.retrieve else " (no system was asked)")
                + "; check that the corpus really cannot answer it"
            )
        return Draft(
            id="draft-" + hashlib.sha256(key.encode()).hexdigest()[:12],
            recipe=job.recipe,
            question=question,
            answer_points=points,
            evidence=tuple(evidence),
            tags=tags,
            expected_action=ACTION.get(job.recipe, "answer"),
            passages=job.passages,
            provenance=provenance,
            review_note=note,
        )
