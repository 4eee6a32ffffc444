"""outputs/stages: the report orders tiers as the registry does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag_eval import tiers
from rag_eval.outputs.stages import tier_rank
from rag_eval.tiers import Tier


class Extra(Tier):
    name = "zz_extra"
    marker = "a tier registered by a test"


@pytest.fixture
def extra() -> Iterator[None]:
    tiers.register(Extra())
    yield
    tiers.unregister(Extra.name)


def test_built_in_tiers_sort_in_registry_order() -> None:
    built_in = ["dialogue", "passk", "judge", "deterministic", "retrieval"]
    assert sorted(built_in, key=tier_rank) == ["retrieval", "deterministic", "judge", "passk", "dialogue"]


def test_a_registered_tier_follows_the_built_in_ones_and_an_unknown_one_sorts_last(extra: None) -> None:
    assert sorted(["gone", "zz_extra", "dialogue", "retrieval"], key=tier_rank) == [
        "retrieval",
        "dialogue",
        "zz_extra",
        "gone",
    ]
    assert tier_rank("gone") == (len(tiers.names()), "gone")
