"""rag_app reports each stage's time (issue 35): the adapter turns its trace's seconds into
``stage_ms``, which the retrieval tier keeps in its details; a system that reports none
has no ``stage_ms`` at all (absent, never 0)."""

from __future__ import annotations

import pytest

pytest.importorskip("rag_app.types")

from rag_app.types import Hit, RetrievalResult, StageResult, Trace  # noqa: E402
from rag_eval.adapters.rag_app import retrieval_from_rag_app  # noqa: E402
from rag_eval.core.contract import Retrieval, RetrievedItem  # noqa: E402
from rag_eval.tiers.retrieval.details import RetrievalDetails  # noqa: E402


def test_every_timed_stage_becomes_milliseconds() -> None:
    trace = Trace(
        (
            StageResult("vector", (Hit("c1", 0.9, 1),), 0.012),
            StageResult("bm25", (Hit("c1", 3.0, 1),), 0.002),
            StageResult("fused", (Hit("c1", 0.03, 1),), 0.0005),
            StageResult("reranked", (Hit("c1", 0.8, 1),), 0.25),
            StageResult("context", (Hit("c1", 0.8, 1),), 0.0001),
        )
    )
    got = retrieval_from_rag_app(RetrievalResult("q", (), trace))
    assert got.stage_ms == pytest.approx({"vector": 12.0, "bm25": 2.0, "fused": 0.5, "reranked": 250.0, "context": 0.1})
    assert Retrieval.from_dict(got.to_dict()).stage_ms == got.stage_ms


def test_a_system_without_timings_writes_no_stage_ms() -> None:
    plain = Retrieval.from_dict({"items": [RetrievedItem("c1").to_dict()]})
    assert plain.stage_ms == {}
    details = RetrievalDetails.from_dict(
        {
            "stages": {},
            "stage_levels": [["final"]],
            "final_stage": "final",
            "gold": {"chunks": [], "parents": [], "docs": []},
        }
    )
    assert "stage_ms" not in details.to_dict()
    timed = RetrievalDetails.from_dict({**details.to_dict(), "stage_ms": {"final": 3.5}})
    assert timed.to_dict()["stage_ms"] == {"final": 3.5}
