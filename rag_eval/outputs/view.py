"""The HTML report's view model: a results dict → what each section of the page shows.

A pure function of the results file (``rag_eval.results.build.build_results``), so a report can
be re-rendered from a stored file, a CI artifact or merged shards. Everything the
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval.gates.gate import row_pulling_down
from rag_eval.gates.result import GateResult
from rag_eval.outputs.fmt import as_mapping, fmt_delta, fmt_number, fmt_scalar, interval_words, truncate
from rag_eval.outputs.header import Header, build_header
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
from rag_eval.results.case import CaseResult

TRANSITIONS: tuple[tuple[str, str], ...] = (
    ("pass_to_fail", "pass → fail"),
    ("fail_to_pass", "fail → pass"),
    ("stable_to_flaky", "stable pass → flaky"),
    ("new", "new cases"),
    ("removed", "removed cases"),
)
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
        return interval_words(self.gate.evidence)

    @property
    def statistics_text(self) -> str:
        """Which rule decided and why, the paired test, and what the gate cannot see."""
        return " · ".join(gate_statistics(self.gate))

    @property
    def threshold_text(self) -> str:
        sign = {"min": "≥", "max": "≤"}.get(self.gate.op, self.gate.op)
        return f"{sign} {fmt_number(self.gate.threshold)}"

    @property
    def delta_text(self) -> str:
        return fmt_delta(self.delta)

    @property
    def baseline_text(self) -> str:
        if self.baseline is None:
            return "n/a"
        return f"{fmt_number(self.baseline)} (n={self.baseline_n if self.baseline_n is not None else '?'})"


def gate_statistics(g: GateResult) -> list[str]:
    """The sentences of a gate row's statistics (the report's and the summary's): the rule
    and its decision, a regression gate's paired test with Holm, the detectable drop."""
    e = g.evidence
    out: list[str] = []
    if e.get("decision"):
        out.append(f"decided by {e.get('decide', 'estimate')}: {e['decision']}")
    elif e.get("ci_note"):
        out.append(f"no interval: {e['ci_note']}")
    if "p_value" in e:
        pairs = f"b={e['b']}, c={e['c']}" if "b" in e else f"paired n={e.get('paired_n', 0)}"
        out.append(f"{e.get('test', 'paired test')}: {pairs}, p={e['p_value']:.3g}, alpha={e['alpha']:g}")
    holm = e.get("holm")
    if isinstance(holm, Mapping) and holm.get("sentence"):
        out.append(str(holm["sentence"]))
    only = e.get("one_sided") or []
    if only:
        shown = ", ".join(str(k) for k in only[:5]) + (f" … and {len(only) - 5} more" if len(only) > 5 else "")
        out.append(f"{len(only)} case(s) on one side only, left out of the comparison: {shown}")
    if e.get("mde_note"):
        out.append(str(e["mde_note"]))
    return out


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
    commit: str
    time: str
    dataset_fingerprint: str
    groups: tuple[TransitionGroup, ...]
    tier_notes: tuple[str, ...] = ()  # tiers only one run ran: not compared case by case


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
def build_view(results: Mapping[str, Any]) -> ReportView:
    """The whole page's view model from a results dict (see the module docstring)."""
    run = as_mapping(results.get("run"))
    # A case needs id, tier and outcome to be placed at all; anything else is optional.
    cases = [c for c in results.get("cases") or () if isinstance(c, Mapping) and {"id", "tier", "outcome"} <= c.keys()]
    items = as_mapping(results.get("items"))
    baseline = _baseline_view(results.get("baseline"))
    newly = _newly_failing(baseline)
    order = stage_order(stage_levels(cases))
    rows = _rows(cases, items, newly, order)
    tiers = tuple(sorted({str(c.get("tier", "")) for c in cases}, key=tier_rank))
    return ReportView(
        header=build_header(results, run, items, cases),
        gates=_gates(results, cases),
        tiers=tiers,
        stage_counts=_stage_counts(rows, tiers, order),
        tier_counts=_tier_counts(cases, tiers),
        rows=rows,
        baseline=baseline,
        n_cases=len(cases),
    )


def _gates(results: Mapping[str, Any], cases: Sequence[Mapping[str, Any]]) -> tuple[GateRow, ...]:
    raw = [g for g in results.get("gates") or () if isinstance(g, Mapping)]
    if not raw:
        return ()
    objects = [CaseResult.from_dict(c) for c in cases]
    base = {
        str(b.get("metric")): b
        for b in as_mapping(results.get("baseline")).get("gates") or ()
        if isinstance(b, Mapping)
    }
    out = []
    for i, row in enumerate(raw):
        g = GateResult.from_dict(row)
        keys = row_pulling_down(row, objects)  # the terminal's and the summary's rule, every case
        b = as_mapping(base.get(g.metric))
        out.append(
            GateRow(
                index=i,
                gate=g,
                case_keys=keys,
                case_ids=tuple(dict.fromkeys(k.split("::", 1)[-1] for k in keys)),
                baseline=_float(b.get("baseline")),
                delta=_float(b.get("delta")),
                baseline_n=int(b["baseline_n"]) if isinstance(b.get("baseline_n"), int) else None,
            )
        )
    return tuple(out)


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _rows(
    cases: Sequence[Mapping[str, Any]],
    items: Mapping[str, Any],
    newly: Mapping[str, tuple[str, ...]],
    order: Sequence[str],
) -> tuple[CaseRow, ...]:
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    for c in cases:
        by_id.setdefault(str(c.get("id", "")), []).append(c)
    drafts: list[dict[str, Any]] = []  # CaseRow fields but index, built before sorting
    for item_id, group in by_id.items():
        item = as_mapping(items.get(item_id))
        outcomes = {}
        for c in sorted(group, key=lambda c: tier_rank(str(c.get("tier", "")))):
            tier = str(c.get("tier", ""))
            outcomes[tier] = TierOutcome(
                tier=tier,
                outcome=str(c.get("outcome", "")),
                stage=case_stage(c),
                message=str(c.get("message") or ""),
                duration=float(c.get("duration") or 0.0),
            )
        first = group[0]
        tags = {str(k): str(v) for k, v in as_mapping(item.get("tags") or first.get("tags")).items()}
        drafts.append(
            dict(
                id=item_id,
                question=str(item.get("question") or item.get("opening") or ""),  # a dialogue item opens instead
                tags=tags,
                tag_labels=tuple(f"{k}={v}" for k, v in sorted(tags.items())),
                split=str(item.get("split") or first.get("split") or ""),
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
    items: dict[str, int] = {}
    per_tier: dict[str, dict[str, int]] = {}
    for r in rows:
        if r.stage:
            items[r.stage] = items.get(r.stage, 0) + 1
        for o in r.outcomes.values():
            if o.stage:
                row = per_tier.setdefault(o.stage, {})
                row[o.tier] = row.get(o.tier, 0) + 1
    stages = sorted(set(items) | set(per_tier), key=lambda s: stage_rank(s, order))
    return tuple(StageCount(s, items.get(s, 0), {t: per_tier.get(s, {}).get(t, 0) for t in tiers}) for s in stages)


def _tier_counts(cases: Sequence[Mapping[str, Any]], tiers: Sequence[str]) -> tuple[TierCount, ...]:
    out = []
    for t in tiers:
        counts = {"pass": 0, "fail": 0, "error": 0, "skip": 0}
        n = 0
        for c in cases:
            if c.get("tier") == t:
                o = str(c.get("outcome", ""))
                counts[o] = counts.get(o, 0) + 1
                n += 1
        out.append(TierCount(t, counts, n))
    return tuple(out)


def _baseline_view(raw: Any) -> BaselineView | None:
    if not isinstance(raw, Mapping):
        return None
    transitions = as_mapping(raw.get("transitions"))
    groups = []
    for name, label in TRANSITIONS:
        entries = []
        for t in transitions.get(name) or ():
            t = as_mapping(t)
            key = str(t.get("key") or f"{t.get('tier', '?')}::{t.get('id', '?')}")
            entries.append(
                Transition(
                    key=key,
                    id=str(t.get("id") or key.split("::", 1)[-1]),
                    tier=str(t.get("tier") or key.split("::", 1)[0]),
                    was=str(t.get("was") or "–"),
                    now=str(t.get("now") or "–"),
                    failed_stage=normalize_stage(t.get("failed_stage")),
                )
            )
        groups.append(TransitionGroup(name, label, tuple(entries)))
    return BaselineView(
        path=str(raw.get("path") or "?"),
        commit=fmt_scalar(raw.get("commit")),
        time=fmt_scalar(raw.get("time")),
        dataset_fingerprint=fmt_scalar(raw.get("dataset_fingerprint")),
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
