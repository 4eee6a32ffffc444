"""What a tier is: one unit that collects, checks its options, gates its metric names and
runs a case.

A tier is a :class:`Tier` object registered under its name (``rag_eval.tiers.register``).
Everything that used to name a tier asks it instead: the plugin (markers, collection,
skip reasons), the session (``run_case`` dispatches to ``Tier.run``), thresholds.toml
(valid metric names, ``[<tier>.case]`` options and their checks) and the golden set's
coverage table (``applies``).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from rag_eval.dialogue.model import DialogueItem
from rag_eval.gates.aggregate import lower_is_better
from rag_eval.golden.model import GoldenItem
from rag_eval.results.case import CaseResult
from rag_eval.tiers.report_payload import REPORT_KEYS, StringTable, details_payload

if TYPE_CHECKING:
    from rag_eval.session import EvalConfig, EvalSession

Item = Union[GoldenItem, DialogueItem]  # noqa: UP007 - a runtime alias used in isinstance-free annotations; kept as Union for mypy's alias inference
# The case-outcome rates every tier gates (thresholds.toml [<tier>] pass_rate = { min = 0.9 }).
RATE_KEYS: tuple[str, ...] = ("pass_rate", "error_rate", "fail_count")


@dataclass(frozen=True)
class CaseOption:
    """One ``[<tier>.case]`` option: its kind, the names it may take (empty: any name) and
    its default, applied once by :meth:`Tier.options`."""

    name: str
    # "name" (one of choices), "names" (a list of them), "stage" (one stage name of the
    # system's, checked against its stages at start-up), "int" (a whole number >= 1)
    kind: str = "name"
    choices: tuple[str, ...] = ()
    default: Any = None


class Tier:
    """A tier: subclass, set the class attributes, implement :meth:`run`.

    ``items``: which kind of item it runs on (golden items, dialogue items or both).
    ``floor_refusal``: why ``[<tier>.case]`` takes no per-case floors (None: it does).
    """

    name: str = ""
    marker: str = ""
    items: tuple[type, ...] = (GoldenItem,)
    case_options: tuple[CaseOption, ...] = ()
    valid_names: str = ", ".join(RATE_KEYS)  # the metric names it gates, for error messages
    floor_refusal: str | None = None
    progress: bool = False  # slow (a model call per case): the plugin shows its progress
    # A judge decides its metrics (judge.faithfulness, dialogue.hint_success): human labels
    # check them (--rag-human-labels, thresholds estimate = "labels" | "ppi").
    judged: bool = False
    # Its cases carry a judge's verdict of one answer (details judge_model, generator, judge).
    judges_answers: bool = False

    # --- collection -------------------------------------------------------------------
    def applies(self, item: Item) -> bool:
        """Whether the item is a case of this tier (e.g. the judge skips negatives)."""
        return isinstance(item, self.items)

    # --- thresholds.toml --------------------------------------------------------------
    def metric_ok(self, key: str) -> bool:
        """Whether ``key`` is a metric name of this tier (aggregate gates, case floors)."""
        return key in RATE_KEYS

    def refuse_floor(self, key: str) -> str | None:
        """Why ``[<tier>.case]`` takes no floor on ``key`` (None: it does)."""
        return self.floor_refusal

    def check_options(self, options: Mapping[str, Any], where: str) -> None:
        """Raise ``ConfigError`` naming ``where`` when the options contradict each other."""

    def options(self, config: EvalConfig) -> Any:
        """The run's ``[<tier>.case]`` options with their defaults applied, checked: the one
        place they are read (a dict here; the built-in tiers return a frozen dataclass).
        Raise ``ConfigError`` for a bad combination: the plugin calls this at start-up."""
        given = case_options(config, self.name)
        return {o.name: given.get(o.name, o.default) for o in self.case_options}

    # --- running ------------------------------------------------------------------------
    def skip_reason(self, session: EvalSession, item: Item) -> str | None:
        """Why this case does not run on this system (the pytest case is skipped), or None."""
        return None

    def ahead(self, session: EvalSession) -> bool:
        """Whether its cases may run ahead of their tests on other threads (``--rag-concurrency``):
        their calls wait on a model or a service. Here: when the system takes concurrent calls."""
        return session.system_concurrency > 1

    def run(self, session: EvalSession, item: Item) -> CaseResult:
        """One case; raise on failure (:func:`run_case` records it as an ``error``)."""
        raise NotImplementedError

    # --- gates ----------------------------------------------------------------------------
    def unmeasured_reason(self, metric: str, scoped: Sequence[CaseResult]) -> str | None:
        """Why a gate on ``metric`` has no value, in words the user can act on (e.g. a stage
        the system never returned); None: no reason of this tier's (the gate says "no cases")."""
        return None

    # --- the terminal ----------------------------------------------------------------------
    def terminal_lines(self, cases: Sequence[CaseResult], usage: Mapping[str, Mapping[str, float]]) -> list[str]:
        """Lines of the gate summary about this tier (all the run's cases given, and their
        token use per tier: ``run.usage_totals``)."""
        return []

    # --- the HTML report ---------------------------------------------------------------------
    # the details keys report_payload renders; the report shows the others of a case raw
    report_keys: frozenset[str] = REPORT_KEYS

    def report_payload(self, case: CaseResult, strings: StringTable) -> dict[str, Any]:
        """This tier's part of the report's expanded view of ``case`` (JSON; recurring
        strings as ``strings`` references): the details it renders, in the payload's keys."""
        return details_payload(case, strings, self.judges_answers)

    def __repr__(self) -> str:
        return f"<Tier {self.name}>"


def case_options(config: EvalConfig, tier: str) -> dict[str, Any]:
    """The ``[<tier>.case]`` options thresholds.toml gives (no defaults: :meth:`Tier.options`)."""
    return dict(config.thresholds.case_rules(tier).options) if config.thresholds is not None else {}


def floors(config: EvalConfig, tier: str) -> dict[str, float]:
    """The ``[<tier>.case]`` per-case metric floors, e.g. {"faithfulness": 0.5}."""
    return dict(config.thresholds.case_rules(tier).floors) if config.thresholds is not None else {}


def limit_problem(key: str, value: float | None, limit: float) -> str | None:
    """Why ``value`` breaks the ``[<tier>.case]`` limit of ``key``, or None: a floor, or for a
    lower-is-better key (hallucination, noise sensitivity, unknown_share) a ceiling. An
    absent value is not judged here (the gate counts what was not measured)."""
    if value is None:
        return None
    if lower_is_better(key):
        return f"{key} = {value:.3f} > {limit} (per-case threshold, lower is better)" if value > limit else None
    return f"{key} = {value:.3f} < {limit} (per-case threshold)" if value < limit else None


def as_golden(item: Item) -> GoldenItem:
    """The golden item of a case of a tier that runs on golden items only."""
    if not isinstance(item, GoldenItem):
        raise TypeError(f"{item.id}: this tier runs on golden items, not on {type(item).__name__}")
    return item


def skipped(item: Item, tier: str, reason: str, t0: float) -> CaseResult:
    """A case not run (the system cannot do what the tier asks): never a pass."""
    return CaseResult(
        id=item.id,
        tier=tier,
        outcome="skip",
        message=reason,
        tags=dict(item.tags),
        split=item.split,
        negative=getattr(item, "is_negative", False),
        duration=time.perf_counter() - t0,
    )


def errored(item: Item, tier: str, exc: Exception, session: EvalSession, t0: float) -> CaseResult:
    """Any exception of a case as an ``error`` outcome, redacted whole, then cut."""
    redactor = session.redactor
    return CaseResult(
        id=item.id,
        tier=tier,
        outcome="error",
        failed_stage="error",
        message=redactor.text(f"{type(exc).__name__}: {exc}"),
        tags=dict(item.tags),
        split=item.split,
        negative=getattr(item, "is_negative", False),
        duration=time.perf_counter() - t0,
        details={"traceback": redactor.text(traceback.format_exc(limit=8))[-4000:], "system": session.safe_info()},
    )
