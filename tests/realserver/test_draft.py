"""Drafting against llama-cpp-python's server with gemma-3-270m: five standard drafts from
the demo corpus, one reply each, and how many pass the quote check -- whatever the number
(a 270M model often paraphrases instead of quoting); it is printed in the terminal summary.
What must hold: every ask ends in exactly one counted outcome, and every kept draft's
quote is in its document.

Measured on 2026-12-07 (json_schema refused, json_object with the reply's schema as the
grammar, 300 tokens, seed 0): 1 of 5 passed the quote check, about 70 s; the other four
replies copied the prompt's "…" placeholder as their quote (a prompt describing each key
instead made the model write until max_tokens: 0 of 5, unparseable, 14 minutes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rag_eval.authoring.client import DraftClientConfig, draft_client
from rag_eval.authoring.drafting import Ask, Drafter, DraftSpec, Outcome
from rag_eval.authoring.passages import passage_pool
from rag_eval.corpus import load_documents
from rag_eval.golden.resolve import ChunkLookup
from tests.realserver.conftest import RealServers
from tests.realserver.servers import LLAMA_MODEL_ALIAS

DEMO_CORPUS = Path(__file__).resolve().parents[2] / "golden_sets" / "demo_maths" / "corpus"
N_DRAFTS = 5


@pytest.fixture(scope="module")
def drafted(
    real_servers: RealServers, tmp_path_factory: pytest.TempPathFactory, realserver_summary: list[str]
) -> Outcome:
    env = {
        "RAG_DRAFT_BASE_URL": real_servers.llama.base_url,
        "RAG_DRAFT_MODEL": LLAMA_MODEL_ALIAS,
        "RAG_DRAFT_API_KEY": "none",
        "RAG_DRAFT_TIMEOUT": "240",
        "RAG_DRAFT_MAX_RETRIES": "0",
        "RAG_DRAFT_CONCURRENCY": "1",
    }
    cfg = DraftClientConfig.from_env(env, cache_dir=tmp_path_factory.mktemp("draft-cache"))
    docs = load_documents(DEMO_CORPUS)
    spec = DraftSpec(
        model=LLAMA_MODEL_ALIAS, asks=[Ask("standard", N_DRAFTS)], attempts=1, max_tokens=300, concurrency=1
    )
    started = time.monotonic()
    with draft_client(cfg) as client:
        outcome = Drafter(docs, passage_pool(docs, seed=0), client, spec).run()
    asked = {k: v for k, v in outcome.counts.items() if not k.startswith("skipped")}
    realserver_summary.append(
        f"draft ({LLAMA_MODEL_ALIAS} on llama-cpp-python): {len(outcome.drafts)}/{N_DRAFTS} standard drafts passed the "
        f"quote check ({', '.join(f'{k} {v}' for k, v in sorted(asked.items()))}), {time.monotonic() - started:.0f} s"
    )
    realserver_summary.extend(f"  {line[:200]}" for line in outcome.rejected)
    return outcome


def test_every_ask_ends_in_one_counted_outcome(drafted: Outcome) -> None:
    asked = sum(v for k, v in drafted.counts.items() if not k.startswith("skipped"))
    assert asked == N_DRAFTS, drafted.counts  # one reply each (attempts=1): drafted, rejected or an error
    assert drafted.counts.get("drafted", 0) == len(drafted.drafts)


def test_every_kept_draft_quotes_its_document(drafted: Outcome) -> None:
    lookup = ChunkLookup(load_documents(DEMO_CORPUS), [])
    for d in drafted.drafts:
        assert d.evidence and all(lookup.locate(doc, quote) for doc, quote in d.evidence), d.to_dict()
        assert d.provenance["model"] and d.status == "draft"
