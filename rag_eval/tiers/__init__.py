"""The tier registry: each tier is one :class:`Tier` registered under its name.

    from rag_eval.tiers import Tier, register

    class Latency(Tier):
        name = "latency"
        marker = "latency tier: ..."
        def run(self, session, item): ...

    register(Latency())

The five built-in tiers (retrieval, deterministic, judge, passk, dialogue) register
themselves on import of this package, in that order: the order of collection, of the
plugin's markers and of the coverage table. Nothing outside this package names a tier.
"""

from __future__ import annotations

from collections.abc import Callable

from rag_eval.golden.model import GoldenItem
from rag_eval.tiers.base import (
    RATE_KEYS,
    CaseOption,
    Contribution,
    Item,
    JudgedValues,
    LabelQuestion,
    LabelView,
    Tier,
    as_golden,
    case_options,
    errored,
    floors,
    skipped,
)

__all__ = [
    "RATE_KEYS",
    "CaseOption",
    "Contribution",
    "Item",
    "JudgedValues",
    "LabelQuestion",
    "LabelView",
    "Tier",
    "all_tiers",
    "as_golden",
    "case_options",
    "errored",
    "floors",
    "get",
    "golden_applies",
    "judged",
    "judges_answers",
    "names",
    "of",
    "register",
    "skipped",
    "unregister",
]

_REGISTRY: dict[str, Tier] = {}


def register(tier: Tier) -> Tier:
    """Add a tier (a sixth one from a conftest or a plugin); its name must be new."""
    if not tier.name or not tier.name.isidentifier():
        raise ValueError(f"a tier's name must be an identifier (it is a pytest marker), got {tier.name!r}")
    if tier.name in _REGISTRY and _REGISTRY[tier.name] is not tier:
        raise ValueError(f"tier {tier.name!r} is already registered ({_REGISTRY[tier.name]!r})")
    _REGISTRY[tier.name] = tier
    return tier


def unregister(name: str) -> None:
    """Remove a tier registered by :func:`register` (tests that add one clean up with this)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> Tier:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown tier {name!r}; registered: {', '.join(_REGISTRY)}") from None


def of(name: str) -> Tier:
    """The tier registered as ``name``, or for a name no tier here registered (a results file
    of a project with a tier of its own) a plain :class:`Tier` of that name: no behaviour of
    its own, the defaults of every hook."""
    found = _REGISTRY.get(name)
    if found is not None:
        return found
    unknown = Tier()
    unknown.name = name
    return unknown


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def all_tiers() -> tuple[Tier, ...]:
    return tuple(_REGISTRY.values())


def judged() -> tuple[str, ...]:
    """The tiers whose metrics a judge decides (human labels check them), in registry order."""
    return tuple(t.name for t in _REGISTRY.values() if t.judged)


def judges_answers(tier: str) -> bool:
    """Whether the cases of ``tier`` carry a judge's verdict of one answer (an unknown tier: no)."""
    found = _REGISTRY.get(tier)
    return found is not None and found.judges_answers


def golden_applies() -> dict[str, Callable[[GoldenItem], bool]]:
    """Each tier that runs on golden items, with which items it takes (the coverage table)."""
    return {t.name: t.applies for t in _REGISTRY.values() if GoldenItem in t.items}


# The built-in tiers, registered in collection order (they import only tiers.base).
from rag_eval.tiers.deterministic.tier import DETERMINISTIC  # noqa: E402
from rag_eval.tiers.dialogue.tier import DIALOGUE  # noqa: E402
from rag_eval.tiers.judge.tier import JUDGE  # noqa: E402
from rag_eval.tiers.passk.tier import PASSK  # noqa: E402
from rag_eval.tiers.retrieval.tier import RETRIEVAL  # noqa: E402

for _tier in (RETRIEVAL, DETERMINISTIC, JUDGE, PASSK, DIALOGUE):
    register(_tier)
