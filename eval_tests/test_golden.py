"""The golden set is validated like code: these run with every gate (marker ``golden``)."""

import pytest

from rag_eval.golden import validate
from rag_eval.session import EvalSession
from rag_eval.util.text import terms as tokenize  # the terms `python -m rag_eval validate` reads

pytestmark = pytest.mark.golden


def _fail_on(problems: list[str]) -> None:
    if problems:
        pytest.fail(f"{len(problems)} problem(s):\n" + "\n".join(problems[:30]), pytrace=False)


def _gold(session: EvalSession) -> str:
    """The gold mode of the pipeline configuration: chunk ids are checked against the
    local index only under gold = "corpus" (otherwise they are the system's own ids)."""
    return session.config.pipeline.gold


def test_ids_unique(rag_eval_session: EvalSession) -> None:
    _fail_on(validate.check_unique_ids(rag_eval_session.dataset.items))


def test_gold_exists_in_index(rag_eval_session: EvalSession) -> None:
    _fail_on(
        validate.check_gold_exists(rag_eval_session.dataset.items, rag_eval_session.lookup, _gold(rag_eval_session))
    )


def test_key_facts_traceable(rag_eval_session: EvalSession) -> None:
    _fail_on(
        validate.check_key_facts(
            rag_eval_session.dataset.items, rag_eval_session.lookup, tokenize, _gold(rag_eval_session)
        )
    )


def test_negatives_carry_no_gold(rag_eval_session: EvalSession) -> None:
    _fail_on(validate.check_negatives(rag_eval_session.dataset.items))


def test_no_document_in_both_splits(rag_eval_session: EvalSession) -> None:
    _fail_on(validate.check_split_leak(rag_eval_session.dataset.items, rag_eval_session.lookup))
