"""rag_app's ``openai`` generator against llama-cpp-python's server with gemma-3-270m.

A 270M *base* model is no tutor: what it writes is not the point. The point is that a
real server's replies flow through the generator and the deterministic tier to an
outcome for every case, and that the sources stay the system's: the numbered context
chunks, whatever ``[n]`` the model wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from rag_eval.citations import numbered_chunks
from rag_eval.core.case import CaseResult
from rag_eval.core.records import AnswerRecord
from tests.realserver.conftest import RealServers
from tests.realserver.demo import JUDGE_TIMEOUT_S, demo_items, demo_session
from tests.realserver.servers import LLAMA_MODEL_ALIAS

N_GENERATED = 3
MAX_ANSWER_TOKENS = 96  # ~10-40 s of generation each on two shared cores


@dataclass(frozen=True)
class Generated:
    cases: list[CaseResult]
    answers: dict[str, AnswerRecord]  # the cases that got an answer


@pytest.fixture(scope="module")
def generated(real_servers: RealServers, realserver_summary: list[str]) -> Iterator[Generated]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAG_GENERATOR_BASE_URL", real_servers.llama.base_url)
        mp.setenv("RAG_GENERATOR_MODEL", LLAMA_MODEL_ALIAS)
        mp.setenv("RAG_GENERATOR_API_KEY", "none")
        mp.setenv("RAG_GENERATOR_TIMEOUT", str(JUDGE_TIMEOUT_S))
        mp.setenv("RAG_GENERATOR_MAX_RETRIES", "1")
        session = demo_session(overrides={"generator": "openai", "max_answer_tokens": MAX_ANSWER_TOKENS})
        items = demo_items(session)[:N_GENERATED]
        cases = [session.run_case("deterministic", item) for item in items]
        # run_case memoised each answer it got; asking again is served from that memo
        answers = {item.id: session.chat(item) for item, case in zip(items, cases) if case.outcome != "error"}
    outcomes = ", ".join(f"{c.id} {c.outcome}" for c in cases)
    realserver_summary.append(f"generator (openai -> {LLAMA_MODEL_ALIAS}): {outcomes}")
    yield Generated(cases, answers)


def test_every_case_ends_with_an_outcome(generated: Generated) -> None:
    assert len(generated.cases) == N_GENERATED
    for case in generated.cases:
        assert case.tier == "deterministic"
        assert case.outcome in ("pass", "fail", "error"), (case.id, case.outcome)
        if case.outcome != "pass":
            assert case.message, f"{case.id}: a {case.outcome} says why"


def test_the_generator_reached_the_server(generated: Generated) -> None:
    assert generated.answers, "no case got an answer: " + "; ".join(c.message[:300] for c in generated.cases)
    for record in generated.answers.values():
        assert record.generator == f"openai:{LLAMA_MODEL_ALIAS}"


def test_sources_are_built_by_the_system(generated: Generated) -> None:
    """Sources are the numbered context chunks; a model's [n] can neither add nor renumber one."""
    for case_id, record in generated.answers.items():
        if record.refused:
            assert record.sources == (), case_id
            continue
        expected = [(n, chunk.chunk_id) for n, chunk in numbered_chunks(record.context_used)]
        assert [(s.n, s.chunk_id) for s in record.sources] == expected, case_id
