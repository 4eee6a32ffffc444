"""What a tier is: one unit that collects, checks its options, gates its metric names and
runs a case.

A tier is a :class:`Tier` object registered under its name (``rag_eval.tiers.register``).
Everything that used to name a tier asks it instead: the plugin (markers, collection,
skip reasons), the session (``run_case`` dispatches to ``Tier.run``), thresholds.toml
(valid metric names, ``[<tier>.case]`` options and their checks) and the golden set's
coverage table (``applies``).
"""

from __future__ import annotations

import functools
import json
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Union

from rag_eval.core.case import CaseResult
from rag_eval.dialogue.model import DialogueItem
from rag_eval.golden.model import GoldenItem
from rag_eval.tiers.report_payload import REPORT_KEYS, StringTable, details_payload

if TYPE_CHECKING:
    from rag_eval.session import EvalConfig, EvalSession

Item = Union[GoldenItem, DialogueItem]  # noqa: UP007 - a runtime alias used in isinstance-free annotations; kept as Union for mypy's alias inference
# The case-outcome rates every tier gates (thresholds.toml [<tier>] pass_rate = { min = 0.9 }).
RATE_KEYS: tuple[str, ...] = ("pass_rate", "error_rate", "fail_count")
LOWER_RATE_KEYS: frozenset[str] = frozenset({"error_rate", "fail_count"})


class Options(Protocol):
    """Where a tier declares its command-line options and ini keys (:meth:`Tier.add_options`):
    the plugin passes its option group (``addoption``: argparse's arguments, as
    ``pytest.OptionGroup.addoption``) and the parser's ``addini``."""

    def addoption(self, *names: str, **attrs: Any) -> None: ...

    def addini(self, name: str, help: str, **attrs: Any) -> None: ...


class OptionValues(Protocol):
    """Where a tier reads them back (:meth:`Tier.read_options`): ``pytest.Config``'s
    ``getoption`` / ``getini``, and what the run's defaults rest on."""

    def getoption(self, name: str) -> Any: ...

    def getini(self, name: str) -> Any: ...

    @property
    def base(self) -> Path:
        """What relative paths and default folders (``.rag_cache/``) are under: the project."""
        ...

    @property
    def concurrency(self) -> int:
        """Cases run ahead at once in this process (``--rag-concurrency``)."""
        ...

    @property
    def handed(self) -> Mapping[str, Any] | None:
        """On an xdist worker, what the controller handed it (:meth:`Tier.worker_input`);
        None on the controller or without xdist."""
        ...


@dataclass(frozen=True)
class Contribution:
    """One case's part of a run-level rate (:meth:`Tier.contribution`): the rate over the run
    is the sum of the numerators over the sum of the denominators. ``excluded``: ids left out
    of it, by reason; ``errors``: ids whose judge failed on it."""

    numerator: float
    denominator: int
    excluded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelQuestion:
    """What a person labelling a judged metric is asked, and the verdicts offered
    (``rag_eval.labels.model.VERDICT_VALUE`` maps each to its value)."""

    question: str
    verdicts: tuple[str, ...]


@dataclass(frozen=True)
class JudgedValues:
    """What a judge said on one case (:meth:`Tier.judged_values`), by metric without the tier.

    ``values``: the judge's value of each metric it decided; ``units``: per-unit verdicts by
    (metric, unit, index), e.g. ("faithfulness", "claim", 2) → 1.0, or "unknown" for a claim
    the judge could not decide; ``errors``: metrics the judge failed on (no value);
    ``failed``: the judge failed on the whole case, an error of every judged metric of the
    tier the run has."""

    values: Mapping[str, float] = field(default_factory=dict)
    units: Mapping[tuple[str, str, int], float | str] = field(default_factory=dict)
    errors: tuple[str, ...] = ()
    failed: bool = False


@dataclass(frozen=True)
class LabelView:
    """What a person labelling a case sees: the question, the answer and the context the
    generator saw as (label, text) pairs (None: the context another tier recorded for the
    same item, :meth:`Tier.label_context`)."""

    question: str
    answer: str
    context: tuple[tuple[str, str], ...] | None = None


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
    floor_refusal: str | None = None
    progress: bool = False  # slow (a model call per case): the plugin shows its progress
    # A judge decides its metrics (judge.faithfulness, dialogue.hint_success): human labels
    # check them (--rag-human-labels, thresholds estimate = "labels" | "ppi").
    judged: bool = False
    # Its cases carry a judge's verdict of one answer (details judge_model, generator, judge).
    judges_answers: bool = False
    # Its typed details (frozen, ``to_dict``/``from_dict``): a case's ``details`` are
    # ``details_type(...).to_dict()`` and are read back only through :meth:`read_details`.
    details_type: type[Any] | None = None
    # The title of its command-line help section (add_options); "": "RAG evaluation: <name> tier".
    option_help: str = ""
    # The keys its run_block writes under the results' run (derived from the cases: a merge
    # recomputes them from the shards' cases).
    run_keys: tuple[str, ...] = ()

    @property
    def valid_names(self) -> str:
        """The metric names it gates, for error messages (a tier may set a string instead)."""
        return ", ".join(RATE_KEYS)

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

    # --- command line and ini --------------------------------------------------------------
    def add_options(self, options: Options) -> None:
        """Declare its command-line options and ini keys (``--rag-<tier>-...``); the plugin puts
        them in a help section of their own ("RAG evaluation: <tier> tier")."""

    def read_options(self, values: OptionValues) -> Any:
        """Its command-line values, read and checked once at start-up (raise ``ConfigError``
        naming the option and the fix): the session keeps them (``EvalConfig.tier_args``, read
        with :meth:`args`). None: it has none."""
        return None

    def args(self, config: EvalConfig) -> Any:
        """What :meth:`read_options` returned for this run (None: no command line, e.g. a script)."""
        return config.tier_args.get(self.name)

    def worker_input(self, config: EvalConfig) -> Mapping[str, str]:
        """On the controller: what each xdist worker is handed, read back there as
        :attr:`OptionValues.handed` (e.g. a folder the workers share). Here: nothing."""
        return {}

    def close(self, config: EvalConfig) -> None:
        """On the controller, once the run is over: release what :meth:`read_options` made
        (e.g. that folder). Here: nothing."""

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
    def gold_ids(self, case: Mapping[str, Any]) -> set[str] | None:
        """The ids ``case`` (as the results file holds it) resolved as its item's gold, for
        the evidence review; None: this tier does not resolve gold."""
        return None

    def shown_chunks(self, case: Mapping[str, Any], gold: set[str], kept: int) -> list[tuple[str, str]]:
        """(chunk id, why) of the non-gold chunks ``case`` (a results-file case) put in front
        of the system's user: the evidence review's candidates (at most ``kept`` of a ranked
        list). None shown by default."""
        return []

    def chunk_texts(self, case: Mapping[str, Any]) -> list[tuple[str, str | None, str | None]]:
        """(chunk id, text, document id) of the chunks whose text or document ``case``
        recorded, either may be None: how the evidence review quotes a chunk the corpus
        cannot. None recorded by default."""
        return []

    def stage_of(self, key: str) -> str | None:
        """The system's stage a metric key of this tier names (retrieval's ``dense.recall@10``:
        ``dense``), checked against the system's stages at start-up; None: it names none."""
        return None

    def unmeasured_reason(self, metric: str, scoped: Sequence[CaseResult]) -> str | None:
        """Why a gate on ``metric`` has no value, in words the user can act on (e.g. a stage
        the system never returned); None: no reason of this tier's (the gate says "no cases")."""
        return None

    # --- its details -------------------------------------------------------------------------
    def read_details(self, case: CaseResult) -> Any:
        """``case``'s details as :attr:`details_type` (None for a skip, an error's traceback, or
        a tier without a type: then read ``case.details`` as written)."""
        if self.details_type is None or case.outcome == "skip" or "traceback" in case.details:
            return None
        return self.details_type.from_dict(case.details)

    # --- the run: directions, run-level rates, blocks of the results file ---------------------
    def lower_is_better(self, key: str) -> bool:
        """Whether lower is better for ``key``, a metric of this tier (without the tier): an
        errored case counts as 1 there, a regression's drop is a rise and a per-case limit is
        a ceiling. Here: error_rate and fail_count."""
        return key in LOWER_RATE_KEYS

    def measured_only(self, details: Mapping[str, Any]) -> bool:
        """Whether a case of this tier (its ``details``, live or from a results file) was
        measured with no pass condition to judge it by (a negative under ``negative =
        "measure"``): left out of pass_rate, counted apart. Here: the ``measured_only`` flag
        the built-in tiers' details carry."""
        return bool(details.get("measured_only"))

    def counts_error(self, case: CaseResult, key: str) -> bool:
        """Whether ``case`` (an error of this tier) would have measured ``key``, so that it
        counts as the worst value of ``key``. Here: every error does."""
        return True

    def pools(self, key: str) -> bool:
        """Whether ``key`` is a run-level rate: the sum of the cases' :meth:`contribution`
        numerators over the sum of their denominators, never a mean of per-case values."""
        return False

    def pooled_names(self, cases: Sequence[CaseResult]) -> list[str]:
        """The run-level rates these cases of this tier contribute to, in the results' order."""
        return []

    def contribution(self, case: CaseResult, key: str) -> Contribution | None:
        """``case``'s part of the run-level rate ``key`` (None: it has none)."""
        return None

    def run_block(self, cases: Sequence[CaseResult]) -> dict[str, Any]:
        """This tier's entries under the results' ``run`` (the judge's ``judge_blame``), from
        every case of the run; its schema fragment declares them."""
        return {}

    def results_block(self, cases: Sequence[CaseResult]) -> dict[str, Any]:
        """This tier's top-level entries of the results file (the dialogue tier's
        ``dialogue_rates``); a mapping under a key two tiers share is merged."""
        return {}

    def warnings(self, cases: Sequence[CaseResult]) -> list[str]:
        """Warnings about this tier's cases for the terminal, the report and the summary (the
        results' ``run.warnings``), e.g. a judge grading its own model's answers."""
        return []

    # --- human labels (rag_eval.labels: sample, compare) ------------------------------------
    # The metrics of this tier a person can label (without the tier), with their questions.
    label_questions: Mapping[str, LabelQuestion] = {}

    def judged_values(self, case: CaseResult) -> JudgedValues | None:
        """What the judge said on ``case`` (None: nothing judged, e.g. a skip); only a tier with
        ``label_questions`` has any."""
        return None

    def label_stratum(self, case: CaseResult) -> str:
        """``--stratify verdict``: the case's group. Here: its outcome (above or below its floors)."""
        return case.outcome

    def label_view(self, case: CaseResult, item: Mapping[str, Any]) -> LabelView:
        """What the person sees of ``case`` (``item``: its golden item as the results file holds
        it). Here: the item's question, the answer in the details, the context of another tier."""
        return LabelView(str(item.get("question", "")), str(case.details.get("answer", "")))

    def label_context(self, case: CaseResult) -> tuple[tuple[str, str], ...] | None:
        """The context the generator saw in ``case`` as (label, text), for the labelling page of
        any tier's case of the same item (None: this tier does not record it)."""
        return None

    # --- the results schema ----------------------------------------------------------------
    def schema_fragment(self) -> Mapping[str, Any]:
        """Its part of the results schema (``rag_eval.results.schema``: ``$defs``, ``details``,
        ``run``, ``results``): what its details and blocks hold. Here: nothing (its details are
        kept as written, under the common details' schema)."""
        return {}

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

    def report_fragment(self) -> str | None:
        """JavaScript the report runs once, before its own script, to register this tier's
        view of an expanded case: ``ragEvalTierViews["<tier>"] = function (box, t, h) {...}``
        with ``t`` the case's part of the payload (its :meth:`report_payload` keys, and
        ``tier``, ``outcome``, ``message``, ``metrics``) and ``h`` the report's DOM helpers
        (``h.el(tag, cls, text)``, ``h.add(parent, ...children)``, ``h.kv(pairs)``,
        ``h.grid(headers, rows)``, ``h.fmt(number)``: text only, never markup). Code of the
        tier's own; it must not contain ``</script``. None: no view of its own."""
        return None

    def __repr__(self) -> str:
        return f"<Tier {self.name}>"


@functools.cache
def package_fragment(folder: str) -> Mapping[str, Any]:
    """The ``schema.json`` of a tier's folder (a built-in tier's schema fragment)."""
    data: dict[str, Any] = json.loads((Path(folder) / "schema.json").read_text(encoding="utf-8"))
    return data


def case_options(config: EvalConfig, tier: str) -> dict[str, Any]:
    """The ``[<tier>.case]`` options thresholds.toml gives (no defaults: :meth:`Tier.options`)."""
    return dict(config.thresholds.case_rules(tier).options) if config.thresholds is not None else {}


def floors(config: EvalConfig, tier: str) -> dict[str, float]:
    """The ``[<tier>.case]`` per-case metric floors, e.g. {"faithfulness": 0.5}."""
    return dict(config.thresholds.case_rules(tier).floors) if config.thresholds is not None else {}


def limit_problem(key: str, value: float | None, limit: float, lower_is_better: bool) -> str | None:
    """Why ``value`` breaks the ``[<tier>.case]`` limit of ``key``, or None: a floor, or for a
    lower-is-better key (hallucination, noise sensitivity, unknown_share) a ceiling. An
    absent value is not judged here (the gate counts what was not measured)."""
    if value is None:
        return None
    if lower_is_better:
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
