"""The HTML report's view model: a run's typed results (``RunResults``) → what each section
of the page shows.

A pure function of the results (a stored file read back with ``RunResults.from_dict``), so a
report can be re-rendered from a stored file, a CI artifact or merged shards. Everything the
template prints is decided and formatted here (with ``header``, ``stages`` and
``fmt``); the template only lays it out.

A *row* of the case list is one golden item: the cases of every tier that ran on it
(retrieval, deterministic, judge, passk) sit side by side, and the row's stage is the
earliest stage at which any of them failed -- an answer cannot use evidence that never
reached the context, so the first loss is the one to fix.

A stored file reaches here through ``rag_eval.results.file.load_results`` (version and
schema checked); the parts the format leaves optional or empty -- no ``items``, no
gates (shards, no thresholds file), no ``baseline``, verdict ``incomplete`` or
``shard``, no judge -- become a warning or an empty section, never an exception. Which
cases a gate lists is ``gate.pulling_down``, the terminal's and the summary's rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.core.case import CaseResult
from rag_eval.gates.gate import row_pulling_down
from rag_eval.gates.result import GateResult
from rag_eval.outputs.fmt import fmt_delta, fmt_number, fmt_scalar, truncate
from rag_eval.outputs.header import Header, build_header
from rag_eval.outputs.reasons import Statistics, reason_line, reasoning
from rag_eval.outputs.stages import (
    FAILING,
    case_stage,
    earliest_stage,
    normalize_stage,
    stage_levels,
    stage_order,
    stage_rank,
    tier_rank,
)
from rag_eval.results.baseline import tier_notes
from rag_eval.results.model import RunResults

TRANSITIONS: tuple[tuple[str, str], ...] = (
    ("pass_to_fail", "pass → fail"),
    ("fail_to_pass", "fail → pass"),
    ("stable_to_flaky", "stable pass → flaky"),
    ("new", "new cases"),
    ("removed", "removed cases"),
)
OP_SIGNS = {"min": "≥", "max": "≤"}
QUESTION_SHOWN = 140  # characters of the question in a case-list row; the full text is in the details


@dataclass(frozen=True)
class GateRow:
    """A gate as the report shows it: its result (the one gate-result type, either kind),
    every case pulling it the wrong way, and the baseline's value of the same gate."""

    index: int
    gate: GateResult
    case_keys: tuple[str, ...]  # every case ("tier::id") pulling the gate the wrong way
    case_ids: tuple[str, ...]  # the golden ids of those cases, for the case-list filter
    baseline: float | None = None
    delta: float | None = None
    baseline_n: int | None = None

    @property
    def statistics(self) -> Statistics:
        return Statistics.of(self.gate)

    @property
    def value_text(self) -> str:
        return fmt_number(self.gate.value)

    @property
    def ratio_text(self) -> str:
        """``numerator/denominator`` of a dialogue rate, else empty."""
        if self.gate.denominator is None:
            return ""
        return f"{fmt_number(self.gate.numerator)}/{self.gate.denominator}"

    @property
    def interval_text(self) -> str:
        """``[0.70, 0.85]`` at the run's confidence, a regression gate's paired drop
        ``drop 0.031 [0.010, 0.052]``, or empty when there is none."""
        return self.statistics.interval_text

    @property
    def statistics_text(self) -> str:
        """Which rule decided and why, the paired test, and what the gate cannot see."""
        return " · ".join(self.statistics.sentences())

    @property
    def reason_line(self) -> str:
        """The one-line reason of the gate's row (none of the other columns repeated)."""
        return reason_line(self.gate, self.statistics)

    @property
    def reasoning(self) -> list[str]:
        """The full reasoning, each sentence once (the row's expanded part)."""
        return reasoning(self.gate, self.statistics)

    @property
    def threshold_text(self) -> str:
        sign = OP_SIGNS[self.gate.op] if self.gate.op in OP_SIGNS else self.gate.op
        return f"{sign} {fmt_number(self.gate.threshold)}"

    @property
    def delta_text(self) -> str:
        return fmt_delta(self.delta)

    @property
    def baseline_text(self) -> str:
        if self.baseline is None:
            return "n/a"
        return f"{fmt_number(self.baseline)} (n={self.baseline_n if self.baseline_n is not None else '?'})"


@dataclass(frozen=True)
class TierOutcome:
    tier: str
    outcome: str
    stage: str | None  # normalized failed stage (failing cases only)
    message: str
    duration: float


@dataclass(frozen=True)
class CaseRow:
    index: int
    id: str
    question: str
    tags: Mapping[str, str]
    split: str
    outcomes: Mapping[str, TierOutcome]
    stage: str | None  # earliest failing stage over the tiers
    newly_failing: tuple[str, ...]  # tiers that passed on the baseline and fail now
    duration: float
    tag_labels: tuple[str, ...]  # "key=value", sorted

    @property
    def question_short(self) -> str:
        return truncate(self.question, QUESTION_SHOWN)

    @property
    def failing(self) -> bool:
        return any(o.outcome in FAILING for o in self.outcomes.values())


@dataclass(frozen=True)
class StageCount:
    stage: str
    items: int  # golden items whose earliest failing stage this is
    per_tier: Mapping[str, int]  # cases of each tier that failed at this stage


@dataclass(frozen=True)
class TierCount:
    tier: str
    counts: Mapping[str, int]  # pass / fail / error / skip
    n: int


@dataclass(frozen=True)
class Transition:
    key: str
    id: str
    tier: str
    was: str
    now: str
    failed_stage: str | None


@dataclass(frozen=True)
class TransitionGroup:
    name: str
    label: str
    entries: tuple[Transition, ...]


@dataclass(frozen=True)
class BaselineView:
    path: str
    commit: str | None
    time: str | None
    dataset_fingerprint: str
    groups: tuple[TransitionGroup, ...]
    tier_notes: tuple[str, ...] = ()  # tiers only one run ran: not compared case by case

    @property
    def commit_text(self) -> str:
        return fmt_scalar(self.commit)

    @property
    def time_text(self) -> str:
        return fmt_scalar(self.time)


@dataclass(frozen=True)
class ReportView:
    header: Header
    gates: tuple[GateRow, ...]
    tiers: tuple[str, ...]
    stage_counts: tuple[StageCount, ...]
    tier_counts: tuple[TierCount, ...]
    rows: tuple[CaseRow, ...]
    baseline: BaselineView | None
    n_cases: int  # case results (tier × item), skips included

    @property
    def n_items(self) -> int:
        return len(self.rows)

    @property
    def failed_gates(self) -> tuple[GateRow, ...]:
        """The failing gates, tier gates then regression gates (the first rows of the table)."""
        return tuple(sorted((g for g in self.gates if not g.gate.passed), key=lambda g: g.gate.kind == "regression"))

    @property
    def passed_gates(self) -> tuple[GateRow, ...]:
        return tuple(g for g in self.gates if g.gate.passed)

    @property
    def gate_columns(self) -> dict[str, int]:
        """The gates table's column widths in characters, from their longest content (the
        reason takes the rest of the row): metric names are short, reasons are sentences."""

        def widest(texts: Sequence[str], least: int, most: int) -> int:
            return max(least, min(most, max((len(t) for t in texts), default=0) + 2))

        rows = self.gates
        return {
            "metric": widest([g.gate.metric for g in rows], 8, 32),
            # a ratio is set smaller: about two thirds of its characters
            "value": widest(
                [f"{g.value_text} {g.interval_text}{'x' * (len(g.ratio_text) * 2 // 3)}" for g in rows], 7, 28
            ),
            "threshold": widest([g.threshold_text for g in rows], 11, 14),
            "n": widest([str(g.gate.n) for g in rows], 4, 9),
            "delta": widest([g.delta_text for g in rows], 5, 12),
            "cases": widest([f"{len(g.case_keys)} cases" for g in rows], 8, 16),
        }

    @property
    def n_failing_items(self) -> int:
        return sum(1 for r in self.rows if r.failing)

    @property
    def tag_options(self) -> tuple[str, ...]:
        return tuple(sorted({t for r in self.rows for t in r.tag_labels}))

    @property
    def stage_options(self) -> tuple[str, ...]:
        return tuple(s.stage for s in self.stage_counts)

    def filter_index(self) -> dict[str, Any]:
        """What the page's filters need per row (JSON): id, question, stages, outcomes, tags."""
        row_of = {r.id: r.index for r in self.rows}
        tiers = list(self.tiers)
        return {
            "tiers": tiers,
            "rows": [
                {
                    "id": r.id,
                    "q": r.question,
                    "stage": r.stage,
                    "o": [r.outcomes[t].outcome if t in r.outcomes else None for t in tiers],
                    "s": [r.outcomes[t].stage if t in r.outcomes else None for t in tiers],
                    "tags": list(r.tag_labels),
                    "newly": bool(r.newly_failing),
                }
                for r in self.rows
            ],
            "gates": [sorted({row_of[i] for i in g.case_ids if i in row_of}) for g in self.gates],
            "transitions": {
                grp.name: sorted({row_of[t.id] for t in grp.entries if t.id in row_of})
                for grp in (self.baseline.groups if self.baseline else ())
            },
        }


# --- building it ----------------------------------------------------------------------
def build_view(results: RunResults) -> ReportView:
    """The whole page's view model from a run's results (see the module docstring)."""
    cases = results.cases
    baseline = _baseline_view(results.baseline)
    newly = _newly_failing(baseline)
    order = stage_order(stage_levels(cases))
    rows = _rows(cases, results.items, newly, order)
    tiers = tuple(sorted({c.tier for c in cases}, key=tier_rank))
    return ReportView(
        header=build_header(results),
        gates=_gates(results),
        tiers=tiers,
        stage_counts=_stage_counts(rows, tiers, order),
        tier_counts=_tier_counts(cases, tiers),
        rows=rows,
        baseline=baseline,
        n_cases=len(cases),
    )


def _gates(results: RunResults) -> tuple[GateRow, ...]:
    base = {str(b["metric"]): b for b in (results.baseline or {"gates": ()})["gates"]}
    out = []
    for i, g in enumerate(results.gates):
        keys = row_pulling_down(g.to_dict(), results.cases)  # the terminal's and the summary's rule, every case
        b = base.get(g.metric)
        out.append(
            GateRow(
                index=i,
                gate=g,
                case_keys=keys,
                case_ids=tuple(dict.fromkeys(k.split("::", 1)[-1] for k in keys)),
                baseline=None if b is None else _float(b["baseline"]),
                delta=None if b is None else _float(b["delta"]),
                baseline_n=None if b is None else int(b["baseline_n"]),
            )
        )
    return tuple(out)


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class ItemFields:
    """What every row shows of a golden item: its question (a dialogue item's opening),
    tags and split; a case's own when the results file holds no items."""

    question: str
    tags: Mapping[str, str]
    split: str

    @classmethod
    def of(cls, item: Mapping[str, Any] | None, case: CaseResult | None) -> ItemFields:
        shown = {k: (item or {}).get(k) for k in ("question", "opening", "tags", "split")}  # each optional
        tags = shown["tags"] or (case.tags if case is not None else {})
        return cls(
            question=str(shown["question"] or shown["opening"] or ""),
            tags={str(k): str(v) for k, v in tags.items()},
            split=str(shown["split"] or (case.split if case is not None else "")),
        )


def _rows(
    cases: Sequence[CaseResult],
    items: Mapping[str, Mapping[str, Any]],
    newly: Mapping[str, tuple[str, ...]],
    order: Sequence[str],
) -> tuple[CaseRow, ...]:
    by_id: dict[str, list[CaseResult]] = {}
    for c in cases:
        by_id.setdefault(c.id, []).append(c)
    drafts: list[dict[str, Any]] = []  # CaseRow fields but index, built before sorting
    for item_id, group in by_id.items():
        outcomes = {
            c.tier: TierOutcome(c.tier, c.outcome, case_stage(c), c.message, c.duration)
            for c in sorted(group, key=lambda c: tier_rank(c.tier))
        }
        item = ItemFields.of(items.get(item_id), group[0])
        tags = item.tags
        drafts.append(
            dict(
                id=item_id,
                question=item.question,
                tags=tags,
                tag_labels=tuple(f"{k}={v}" for k, v in sorted(tags.items())),
                split=item.split,
                outcomes=outcomes,
                stage=earliest_stage((o.stage for o in outcomes.values()), order),
                newly_failing=newly.get(item_id, ()),
                duration=sum(o.duration for o in outcomes.values()),
            )
        )
    # Failing items first, by the stage that lost them (earliest first), then by id.
    drafts.sort(key=lambda d: (d["stage"] is None, stage_rank(d["stage"] or "", order), d["id"]))
    return tuple(CaseRow(index=i, **d) for i, d in enumerate(drafts))


def _stage_counts(rows: Sequence[CaseRow], tiers: Sequence[str], order: Sequence[str]) -> tuple[StageCount, ...]:
    items: Counter[str] = Counter(r.stage for r in rows if r.stage)
    per_tier: Counter[tuple[str, str]] = Counter(
        (o.stage, o.tier) for r in rows for o in r.outcomes.values() if o.stage
    )
    stages = sorted(set(items) | {s for s, _ in per_tier}, key=lambda s: stage_rank(s, order))
    return tuple(StageCount(s, items[s], {t: per_tier[(s, t)] for t in tiers}) for s in stages)


def _tier_counts(cases: Sequence[CaseResult], tiers: Sequence[str]) -> tuple[TierCount, ...]:
    out = []
    for t in tiers:
        counts = Counter({"pass": 0, "fail": 0, "error": 0, "skip": 0})
        counts.update(c.outcome for c in cases if c.tier == t)
        out.append(TierCount(t, dict(counts), counts.total()))
    return tuple(out)


def _baseline_view(raw: Mapping[str, Any] | None) -> BaselineView | None:
    if raw is None:
        return None
    transitions = raw["transitions"]
    groups = []
    for name, label in TRANSITIONS:
        entries = tuple(
            Transition(
                key=str(t["key"]),
                id=str(t["id"]),
                tier=str(t["tier"]),
                was=str(t["was"] or "–"),
                now=str(t["now"] or "–"),
                failed_stage=normalize_stage(t["failed_stage"]),
            )
            for t in transitions[name]
        )
        groups.append(TransitionGroup(name, label, entries))
    return BaselineView(
        path=str(raw["path"]),
        commit=raw.get("commit"),
        time=raw.get("time"),
        dataset_fingerprint=fmt_scalar(raw["dataset_fingerprint"]),
        groups=tuple(groups),
        tier_notes=tuple(tier_notes(raw)),
    )


def _newly_failing(baseline: BaselineView | None) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    if baseline is None:
        return {}
    for grp in baseline.groups:
        if grp.name == "pass_to_fail":
            for t in grp.entries:
                out.setdefault(t.id, []).append(t.tier)
    return {k: tuple(v) for k, v in out.items()}
